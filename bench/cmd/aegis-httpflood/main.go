// Command aegis-httpflood measures the memory of aegis wrap --listen
// under the floods its memory bounds are stated for (README, "Serving
// over HTTP"), each against a fresh aegis on
// loopback with its default --max-frame unless -frame says otherwise,
// and prints, per flood, aegis's peak resident set (VmHWM), its resident
// set before the flood and after it:
//
//	posts   12 concurrent POSTs of 32 MiB to a child that reads nothing
//	stall   a call whose answer comes after 300 MB of notifications; the
//	        client reads the first event, stops reading for -stall, then
//	        reads the rest
//	gone    the same call; the client closes its connection after the
//	        first event (after: once a later call is answered)
//	notify  a GET reading the standalone stream while the child writes
//	        200 notifications of 4 MB
//	ids     3,000 tools/call with 100 kB ids that the child never answers
//	        (each POST closed once its stream has begun)
//
//	go run ./bench/cmd/aegis-httpflood -aegis BIN [-only posts,ids] [-frame 1MiB]
//
// It runs itself as the wrapped child (aegis-httpflood child MODE).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

func main() {
	if len(os.Args) > 2 && os.Args[1] == "child" {
		os.Exit(child(os.Args[2]))
	}
	bin := flag.String("aegis", "", "the aegis `BINARY` to measure (required)")
	only := flag.String("only", "posts,stall,gone,notify,ids", "the comma-separated `FLOODS` to run")
	frame := flag.String("frame", "", "aegis's --max-frame (default: aegis's own)")
	stall := flag.Duration("stall", 5*time.Second, "stall: how long the client reads nothing")
	flag.Parse()
	if *bin == "" {
		flag.Usage()
		os.Exit(2)
	}
	self, err := os.Executable()
	if err != nil {
		fatal(err)
	}
	for _, name := range strings.Split(*only, ",") {
		f, ok := floods[name]
		if !ok {
			fatal(fmt.Errorf("no flood %q", name))
		}
		r, err := run(*bin, self, *frame, f, *stall)
		if err != nil {
			fatal(fmt.Errorf("%s: %w", name, err))
		}
		fmt.Printf("%-7s peak %6.1f MiB  before %5.1f MiB  after %6.1f MiB  %6.1fs  %s\n",
			name, mib(r.peak), mib(r.before), mib(r.after), r.took.Seconds(), r.note)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "aegis-httpflood:", err)
	os.Exit(1)
}

func mib(n int) float64 { return float64(n) / (1 << 20) }

// flood is one measurement: the child's mode and what the client does.
type flood struct {
	mode string
	do   func(a *aegis, sid string, stall time.Duration) (note string, err error)
}

var floods = map[string]flood{
	"posts":  {"stuck", posts},
	"stall":  {"flood", stallFlood},
	"gone":   {"flood", goneFlood},
	"notify": {"flood", notifyFlood},
	"ids":    {"silent", idsFlood},
}

type result struct {
	peak, before, after int
	took                time.Duration
	note                string
}

// aegis is one aegis wrap --listen and its child.
type aegis struct {
	cmd   *exec.Cmd
	url   string
	token string
}

func run(bin, self, frame string, f flood, stall time.Duration) (result, error) {
	dir, err := os.MkdirTemp("", "aegis-httpflood-")
	if err != nil {
		return result{}, err
	}
	defer os.RemoveAll(dir)
	key, audit := filepath.Join(dir, "key"), filepath.Join(dir, "audit.jsonl")
	if out, err := exec.Command(bin, "keygen", "--out", key).CombinedOutput(); err != nil {
		return result{}, fmt.Errorf("keygen: %v\n%s", err, out)
	}
	args := []string{"wrap", "--audit", audit, "--signing-key", key, "--grace", "1s", "--listen", "127.0.0.1:0"}
	if frame != "" {
		args = append(args, "--max-frame", frame)
	}
	args = append(args, "--", self, "child", f.mode)
	a := &aegis{cmd: exec.Command(bin, args...)}
	stderr, err := a.cmd.StderrPipe()
	if err != nil {
		return result{}, err
	}
	if err := a.cmd.Start(); err != nil {
		return result{}, err
	}
	defer a.cmd.Wait()
	defer a.cmd.Process.Kill()
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "aegis: serving MCP at "); ok {
				found <- strings.Fields(u)[0]
			}
		}
	}()
	select {
	case a.url = <-found:
	case <-time.After(10 * time.Second):
		return result{}, fmt.Errorf("aegis did not serve in 10s")
	}
	tok, err := os.ReadFile(strings.TrimSuffix(audit, ".jsonl") + ".token")
	if err != nil {
		return result{}, err
	}
	a.token = strings.TrimSpace(string(tok))
	resp, err := a.post(context.Background(), "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"httpflood","version":"1"}}}`)
	if err != nil {
		return result{}, err
	}
	sid := resp.Header.Get("Mcp-Session-Id")
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	var r result
	pid := a.cmd.Process.Pid
	r.before = status(pid, "VmRSS")
	start := time.Now()
	r.note, err = f.do(a, sid, stall)
	if err != nil {
		return r, err
	}
	r.took = time.Since(start)
	// What is still held once the flood is over, after the runtime has
	// had time to give freed memory back.
	time.Sleep(3 * time.Second)
	r.after = status(pid, "VmRSS")
	r.peak = status(pid, "VmHWM")
	return r, nil
}

// status reads a field of /proc/pid/status, in bytes.
func status(pid int, field string) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			var kb int
			fmt.Sscanf(strings.TrimSpace(v), "%d", &kb)
			return kb << 10
		}
	}
	return 0
}

func (a *aegis) request(ctx context.Context, method, sid string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, a.url, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+a.token)
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	return http.DefaultClient.Do(req)
}

func (a *aegis) post(ctx context.Context, sid, body string) (*http.Response, error) {
	return a.request(ctx, "POST", sid, strings.NewReader(body))
}

// posts: 12 concurrent bodies of 32 MiB to a child that reads nothing;
// the peak is watched for 5 s, then the clients give up.
func posts(a *aegis, sid string, _ time.Duration) (string, error) {
	body := `{"jsonrpc":"2.0","method":"notifications/message","params":{"pad":"` + strings.Repeat("x", 32<<20-100) + `"}}`
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if resp, err := a.post(ctx, sid, body); err == nil {
				resp.Body.Close()
			}
		}()
	}
	time.Sleep(5 * time.Second)
	cancel()
	wg.Wait()
	return "12 × 32 MiB bodies, child reads nothing; watched 5 s", nil
}

// floodCall is a tools/call whose answer the flood child writes after n
// notifications of size bytes.
func floodCall(id, n, size int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"flood","arguments":{"n":%d,"size":%d}}}`, id, n, size)
}

// countEvents reads an SSE stream to its end and counts events with data.
func countEvents(r io.Reader) (int, error) { return countEventsUpTo(r, math.MaxInt) }

// countEventsUpTo counts the events with data of an SSE stream, and
// returns at its end or once it has counted max of them.
func countEventsUpTo(r io.Reader, max int) (int, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	n, start := 0, true
	for n < max {
		line, err := br.ReadSlice('\n')
		if start && len(line) > 7 && string(line[:7]) == "data: {" {
			n++
		}
		start = err != bufio.ErrBufferFull
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// readFirstEvent reads up to the end of the priming event.
func readFirstEvent(br *bufio.Reader) error {
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return err
		}
		if line == "\n" {
			return nil
		}
	}
}

func stallFlood(a *aegis, sid string, stall time.Duration) (string, error) {
	resp, err := a.post(context.Background(), sid, floodCall(2, 75, 4_000_000))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	br := bufio.NewReaderSize(resp.Body, 1<<20)
	if err := readFirstEvent(br); err != nil {
		return "", err
	}
	time.Sleep(stall)
	n, err := countEvents(br)
	return fmt.Sprintf("300 MB call, client stalled %v then read %d events (%v)", stall, n, err), nil
}

func goneFlood(a *aegis, sid string, _ time.Duration) (string, error) {
	resp, err := a.post(context.Background(), sid, floodCall(2, 75, 4_000_000))
	if err != nil {
		return "", err
	}
	br := bufio.NewReader(resp.Body)
	if err := readFirstEvent(br); err != nil {
		return "", err
	}
	resp.Body.Close()
	// The child's lines are routed in order: a later call answered means
	// the flood has been routed.
	start := time.Now()
	resp, err = a.post(context.Background(), sid, floodCall(3, 0, 0))
	if err != nil {
		return "", err
	}
	n, err := countEvents(resp.Body)
	resp.Body.Close()
	return fmt.Sprintf("300 MB call, client gone after the first event; a later call answered (%d events, %v) after %.1fs", n, err, time.Since(start).Seconds()), nil
}

func notifyFlood(a *aegis, sid string, _ time.Duration) (string, error) {
	get, err := a.request(context.Background(), "GET", sid, nil)
	if err != nil {
		return "", err
	}
	defer get.Body.Close()
	if get.StatusCode != 200 {
		return "", fmt.Errorf("GET: %s", get.Status)
	}
	counted := make(chan int, 1)
	go func() { n, _ := countEventsUpTo(get.Body, 200); counted <- n }()
	resp, err := a.post(context.Background(), sid, `{"jsonrpc":"2.0","method":"bench/notify","params":{"n":200,"size":4000000}}`)
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	// No request may be in flight while the notifications are routed:
	// the front sends a server's notification to the newest request in
	// flight, and only with none to the standalone stream. So the GET
	// alone says when they have all arrived.
	var n int
	select {
	case n = <-counted:
	case <-time.After(2 * time.Minute):
		get.Body.Close()
		n = <-counted
	}
	return fmt.Sprintf("200 × 4 MB notifications, GET read %d", n), nil
}

func idsFlood(a *aegis, sid string, _ time.Duration) (string, error) {
	const calls, workers = 3000, 32
	id := strings.Repeat("i", 100_000)
	next := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed := 0
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				body := fmt.Sprintf(`{"jsonrpc":"2.0","id":"%s%d","method":"tools/call","params":{"name":"echo","arguments":{}}}`, id, i)
				resp, err := a.post(context.Background(), sid, body)
				if err != nil || resp.StatusCode != 200 {
					mu.Lock()
					failed++
					mu.Unlock()
				}
				if err == nil {
					resp.Body.Close() // the call stays in flight
				}
			}
		}()
	}
	for i := range calls {
		next <- i
	}
	close(next)
	wg.Wait()
	return fmt.Sprintf("3,000 calls with 100 kB ids in flight, unanswered (%d not 200)", failed), nil
}

// child is the wrapped server. Modes: stuck answers initialize and then
// reads nothing; silent reads everything and answers only initialize;
// flood answers initialize and ping, answers a tools/call "flood" after
// arguments.n notifications of arguments.size bytes, and writes
// params.n such notifications for a notification bench/notify.
func child(mode string) int {
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriterSize(os.Stdout, 1<<20)
	answer := func(id json.RawMessage, result string) {
		fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", id, result)
		out.Flush()
	}
	notes := func(n, size int) {
		head, tail := `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"`, `"}}`
		line := []byte(head + strings.Repeat("x", max(size-len(head)-len(tail), 0)) + tail + "\n")
		for range n {
			out.Write(line)
		}
		out.Flush()
	}
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			return 0
		}
		var m struct {
			ID     json.RawMessage
			Method string
			Params struct {
				N, Size   int
				Arguments struct{ N, Size int }
			}
		}
		json.Unmarshal(line, &m)
		switch {
		case m.Method == "initialize":
			answer(m.ID, `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"flood","version":"1"}}`)
			if mode == "stuck" {
				time.Sleep(time.Hour)
			}
		case mode != "flood":
		case m.Method == "tools/call":
			notes(m.Params.Arguments.N, m.Params.Arguments.Size)
			answer(m.ID, `{"content":[]}`)
		case m.Method == "bench/notify":
			notes(m.Params.N, m.Params.Size)
		case m.Method == "ping":
			answer(m.ID, `{}`)
		}
	}
}
