package approval

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aegisrelay/aegis/journal/record"
)

// SocketExt ends an approvals socket's name: SocketPath puts it beside the
// log, in place of the log's .jsonl.
const SocketExt = ".approvals.sock"

// SocketPath is the approvals socket of the wrap recording to logPath.
func SocketPath(logPath string) string {
	return strings.TrimSuffix(logPath, ".jsonl") + SocketExt
}

// Sockets lists the approvals sockets in dir (the state folder), sorted.
func Sockets(dir string) ([]string, error) {
	return filepath.Glob(filepath.Join(dir, "*"+SocketExt))
}

// maxSocketPath is the longest path a unix socket's address holds on
// Linux (sun_path, with its NUL).
const maxSocketPath = 107

// Listen opens the approvals socket at path, mode 0600. A socket left by
// a wrap that is gone (nothing accepts on it) is replaced; anything else
// at path is left as it is, and Listen fails.
func Listen(path string) (net.Listener, error) {
	if len(path) > maxSocketPath {
		return nil, fmt.Errorf("approvals socket %s: the path is longer than a unix socket's %d bytes", path, maxSocketPath)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != os.ModeSocket {
			return nil, fmt.Errorf("approvals socket %s: a file that is not a socket is there; it is left as it was", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("approvals socket %s: another aegis wrap serves it", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("approvals socket %s: %w", path, err)
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("approvals socket: %w", err)
	}
	// The folder is the user's own; the mode keeps other users from even
	// connecting, and Serve checks each peer's uid whatever the mode.
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("approvals socket: %w", err)
	}
	return ln, nil
}

// Request is one approver's request: Op "list", "approve" or "deny".
type Request struct {
	Op     string `json:"op"`
	ID     string `json:"id,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// Response answers a Request: Error when it failed, with Code
// CodeUnknown when no call waits under the id (another wrap's socket may
// hold it); Pending for list.
type Response struct {
	Error   string    `json:"error,omitempty"`
	Code    string    `json:"code,omitempty"`
	Pending []Pending `json:"pending,omitempty"`
}

// CodeUnknown is Response.Code for ErrUnknown.
const CodeUnknown = "unknown"

// ErrRemoteUnknown is what Do returns for a Response whose Code is
// CodeUnknown.
var ErrRemoteUnknown = errors.New("no call awaits approval under this id")

// maxRequest bounds a request line.
const maxRequest = 64 << 10

// ioTimeout bounds how long one connection may take.
const ioTimeout = 10 * time.Second

// Serve answers approvers on ln until it is closed. logf says what it
// refused (a peer of another uid).
func (t *Table) Serve(ln net.Listener, logf func(string, ...any)) {
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			logf("approvals socket: %v", err)
			time.Sleep(10 * time.Millisecond) // EMFILE and the like: do not spin
			continue
		}
		go t.serveConn(c, logf)
	}
}

func (t *Table) serveConn(c net.Conn, logf func(string, ...any)) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(ioTimeout))
	uid, err := peerUID(c)
	if err != nil {
		logf("approvals socket: %v", err)
		return
	}
	if uid != uint64(os.Getuid()) && uid != 0 {
		logf("approvals socket: refused a peer of uid %d (only uid %d and root may decide)", uid, os.Getuid())
		writeResponse(c, Response{Error: fmt.Sprintf("uid %d may not decide approvals here", uid)})
		return
	}
	line, err := bufio.NewReaderSize(io.LimitReader(c, maxRequest), 4096).ReadBytes('\n')
	if err != nil {
		writeResponse(c, Response{Error: "want one JSON request line"})
		return
	}
	var req Request
	if err := json.Unmarshal(line, &req); err != nil {
		writeResponse(c, Response{Error: "bad request: " + err.Error()})
		return
	}
	writeResponse(c, t.answer(req, uid))
}

// answer carries out req from an approver of uid.
func (t *Table) answer(req Request, uid uint64) Response {
	d := Decision{HasBy: true, UID: uid, User: userName(uid), Reason: req.Reason}
	switch req.Op {
	case "list":
		return Response{Pending: t.List()}
	case "approve":
		d.Verdict = record.ApprovalApproved
	case "deny":
		d.Verdict = record.ApprovalDenied
	default:
		return Response{Error: fmt.Sprintf("unknown op %q", req.Op)}
	}
	if err := t.Decide(req.ID, d); err != nil {
		if errors.Is(err, ErrUnknown) {
			return Response{Error: err.Error(), Code: CodeUnknown}
		}
		return Response{Error: err.Error()}
	}
	return Response{}
}

// userName is the name of uid in the user database, or "" when it has
// none.
func userName(uid uint64) string {
	u, err := user.LookupId(strconv.FormatUint(uid, 10))
	if err != nil {
		return ""
	}
	return u.Username
}

func writeResponse(w io.Writer, r Response) {
	b, _ := json.Marshal(r)
	w.Write(append(b, '\n'))
}

// NotServedError: nothing accepts on the socket (a wrap killed before it
// could remove it leaves it behind), or it is not there.
type NotServedError struct {
	Path string
	Err  error
}

func (e *NotServedError) Error() string { return e.Path + ": not served: " + e.Err.Error() }
func (e *NotServedError) Unwrap() error { return e.Err }

// Do sends req to the approvals socket at path and returns its answer; a
// Response with Error set is returned as an error.
func Do(path string, req Request) (Response, error) {
	c, err := net.DialTimeout("unix", path, 5*time.Second)
	if err != nil {
		return Response{}, &NotServedError{Path: path, Err: err}
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(ioTimeout))
	b, _ := json.Marshal(req)
	// A server that refuses the peer answers and closes without reading
	// the request, so the write may fail where the answer, which says
	// why, is there to read.
	_, werr := c.Write(append(b, '\n'))
	line, err := bufio.NewReader(c).ReadBytes('\n')
	if err != nil {
		if werr != nil {
			return Response{}, werr
		}
		return Response{}, fmt.Errorf("%s: no answer: %w", path, err)
	}
	var resp Response
	if err := json.Unmarshal(line, &resp); err != nil {
		return Response{}, fmt.Errorf("%s: bad answer: %w", path, err)
	}
	if resp.Code == CodeUnknown {
		return resp, ErrRemoteUnknown
	}
	if resp.Error != "" {
		return resp, errors.New(resp.Error)
	}
	return resp, nil
}
