// Package httpfloor is the floor an HTTP front for a stdio MCP server is
// judged against: a net/http server in front of one child, whose one
// handler writes each POST body to the child's stdin as a line and
// answers with the child's next line as the response body, and does
// nothing else: no sessions, no SSE, no authentication, no parsing, no
// recording. The bench harness's helper child runs it (aegis-bench-child
// httpfloor) so that aegis wrap --listen's overhead is a ratio to the
// cost of HTTP itself.
//
// The floor relies on what only a floor may: every body is a request the
// child answers, and the child answers in the order it reads. Answers are
// matched to requests by that order alone, so requests from many
// connections may be in flight at once (a pipelined client's, or many
// clients'). A notification, which the child does not answer, would leave
// its request waiting for the next request's answer.
package httpfloor

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"os/exec"
	"sync"
)

// MaxBody is the largest request body taken; a longer one is 413.
const MaxBody = 64 << 20

// queueLen is how many requests may wait for their answers at once; a
// request beyond it waits to be written.
const queueLen = 4096

// floor is the server's state. Its handler is safe for concurrent use.
type floor struct {
	mu    sync.Mutex // orders a line's write with its place in waiting
	stdin io.Writer
	// waiting holds, in the order their lines were written, the channels
	// the requests in flight wait on; the reader hands each line the
	// child writes to the oldest.
	waiting chan chan []byte
	dead    chan struct{} // closed when the child's stdout ends
}

// Serve starts argv on two pipes and serves HTTP on ln until ln fails or
// the child's stdout ends: POST with a body, at any path, is one line to
// the child and its answer; anything else is 405. The child's stderr is
// stderr. It returns the error that ended it.
func Serve(ln net.Listener, argv []string, stderr io.Writer) error {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	f := &floor{stdin: in, waiting: make(chan chan []byte, queueLen), dead: make(chan struct{})}
	go f.read(out)
	srv := &http.Server{Handler: f}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	select {
	case err = <-serveErr:
	case <-f.dead:
		srv.Close()
		err = errors.New("httpfloor: the child's stdout ended")
	}
	in.Close()
	return errors.Join(err, cmd.Wait())
}

// read hands each line the child writes, without its '\n', to the oldest
// request waiting.
func (f *floor) read(out io.Reader) {
	defer close(f.dead)
	r := bufio.NewReaderSize(out, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return
		}
		(<-f.waiting) <- line[:len(line)-1]
	}
}

func (f *floor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		w.WriteHeader(http.StatusRequestEntityTooLarge)
		return
	}
	body = append(bytes.TrimRight(body, "\r\n"), '\n')
	answer := make(chan []byte, 1)
	f.mu.Lock()
	_, err = f.stdin.Write(body)
	if err == nil {
		f.waiting <- answer
	}
	f.mu.Unlock()
	if err != nil {
		w.WriteHeader(http.StatusBadGateway)
		return
	}
	select {
	case line := <-answer:
		w.Header().Set("Content-Type", "application/json")
		w.Write(line)
	case <-f.dead:
		w.WriteHeader(http.StatusBadGateway)
	}
}
