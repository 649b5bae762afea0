package pincmd

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"
)

// conn is aegis pin's side of an MCP session over a server's stdio: one
// request at a time, each answered by the line with its id; other lines
// (notifications, the server's own requests) are passed over.
type conn struct {
	in       io.Writer
	lines    chan []byte // the server's lines, closed at the end of its output
	end      error       // why its output ended, once lines is closed
	deadline time.Time   // for the whole session
	id       int
}

// maxLine bounds a line of the server's.
const maxLine = 64 << 20

func newConn(in io.Writer, out io.Reader, deadline time.Time) *conn {
	c := &conn{in: in, lines: make(chan []byte), deadline: deadline}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, maxLine)
		for sc.Scan() {
			c.lines <- slices.Clone(sc.Bytes())
		}
		c.end = sc.Err()
		close(c.lines)
	}()
	return c
}

// rpcError is a JSON-RPC error answer.
type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("error %d: %s", e.Code, e.Message) }

var errTimeout = errors.New("no answer in time")

// call sends method with params (with rev's _meta when rev is Modern) and
// returns the answer's line; an error answer is an *rpcError. It waits
// until the session's deadline, or wait when not 0.
func (c *conn) call(method, rev string, params map[string]any, wait time.Duration) ([]byte, error) {
	id, err := c.send(method, rev, params)
	if err != nil {
		return nil, err
	}
	_, line, err := c.await(method, wait, id)
	return line, err
}

// send sends a request and returns its id.
func (c *conn) send(method, rev string, params map[string]any) (int, error) {
	c.id++
	if params == nil {
		params = map[string]any{}
	}
	if rev == Modern {
		params["_meta"] = map[string]any{
			"io.modelcontextprotocol/protocolVersion":    Modern,
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "aegis-pin", "version": "1"},
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		}
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": params})
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		return 0, fmt.Errorf("%s: the server closed its input (%v)", method, err)
	}
	return c.id, nil
}

// await returns the first answer to one of the requests ids, and its id;
// an error answer is an *rpcError. It waits until the session's
// deadline, or wait when not 0; method names what it waits for in its
// errors.
func (c *conn) await(method string, wait time.Duration, ids ...int) (int, []byte, error) {
	deadline := c.deadline
	if d := time.Now().Add(wait); wait > 0 && d.Before(deadline) {
		deadline = d
	}
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				return 0, nil, fmt.Errorf("%s: the server closed its output (%v)", method, c.end)
			}
			var m struct {
				ID    *int      `json:"id"`
				Error *rpcError `json:"error"`
			}
			if json.Unmarshal(line, &m) != nil || m.ID == nil || !slices.Contains(ids, *m.ID) {
				continue
			}
			if m.Error != nil {
				return *m.ID, nil, fmt.Errorf("%s: %w", method, m.Error)
			}
			return *m.ID, line, nil
		case <-timer.C:
			return 0, nil, fmt.Errorf("%s: %w", method, errTimeout)
		}
	}
}

// initParams are initialize's params.
var initParams = map[string]any{"protocolVersion": Legacy, "capabilities": map[string]any{},
	"clientInfo": map[string]any{"name": "aegis-pin", "version": "1"}}

// open starts the session over protocol, or, when it is "", asks the
// server with server/discover (the 2026-07-28 revision's way on stdio)
// and falls back to initialize when the server does not answer it as a
// server of that revision does. A server slow to answer is sent
// initialize after ProbeTimeout, and the first answer decides: a late
// answer to server/discover still makes the session Modern. It returns
// the revision and how it was chosen.
func (c *conn) open(protocol string) (rev, how string, err error) {
	if protocol == Modern {
		return Modern, "--protocol", nil
	}
	if protocol == Legacy {
		return c.initialize("--protocol", 0)
	}
	did, err := c.send("server/discover", Modern, nil)
	if err != nil {
		return "", "", err
	}
	_, line, err := c.await("server/discover", ProbeTimeout, did)
	if !errors.Is(err, errTimeout) {
		rev, how, err := discovered(line, err)
		if err != nil || rev == Modern {
			return rev, how, err
		}
		return c.initialize(how, 0)
	}
	iid, err := c.send("initialize", "", initParams)
	if err != nil {
		return "", "", err
	}
	id, line, err := c.await("initialize", 0, did, iid)
	if id == did {
		rev, how, err := discovered(line, err)
		if err != nil || rev == Modern {
			return rev, how, err
		}
		return c.initialize(how, iid)
	}
	if err != nil {
		return "", "", err
	}
	return c.initialize(fmt.Sprintf("no answer to server/discover in %v: initialize", ProbeTimeout), -1)
}

// initialize sends initialize, or waits for the answer to the one sent as
// request id (> 0), or takes it as answered (-1); then
// notifications/initialized.
func (c *conn) initialize(how string, id int) (string, string, error) {
	var err error
	switch {
	case id == 0:
		_, err = c.call("initialize", "", initParams, 0)
	case id > 0:
		_, _, err = c.await("initialize", 0, id)
	}
	if err != nil {
		return "", "", err
	}
	if _, err := io.WriteString(c.in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		return "", "", fmt.Errorf("notifications/initialized: the server closed its input (%v)", err)
	}
	return Legacy, how, nil
}

// unsupportedVersion is the 2026-07-28 revision's error code for a
// protocol version the server does not speak; its data lists those it
// does.
const unsupportedVersion = -32022

// discovered reads the answer to server/discover (line, or err): a
// DiscoverResult naming Modern, or an unsupported-version error naming
// Legacy and not Modern; anything else (another error, a result without
// Modern) is a server of Legacy only. A server gone is an error.
func discovered(line []byte, err error) (rev, how string, _ error) {
	var rpc *rpcError
	switch {
	case err == nil:
		var m struct {
			Result struct {
				SupportedVersions []string `json:"supportedVersions"`
			} `json:"result"`
		}
		json.Unmarshal(line, &m)
		if slices.Contains(m.Result.SupportedVersions, Modern) {
			return Modern, "the server's answer to server/discover", nil
		}
		return Legacy, "server/discover answered without " + Modern + ": initialize", nil
	case errors.As(err, &rpc) && rpc.Code == unsupportedVersion:
		var d struct {
			Supported []string `json:"supported"`
		}
		json.Unmarshal(rpc.Data, &d)
		if !slices.Contains(d.Supported, Legacy) {
			return "", "", fmt.Errorf("the server speaks %q; aegis pin speaks %s and %s", d.Supported, Modern, Legacy)
		}
		return Legacy, "server/discover: the server speaks " + Legacy + ", not " + Modern, nil
	case rpc != nil:
		return Legacy, fmt.Sprintf("server/discover refused (%d): initialize", rpc.Code), nil
	}
	return "", "", err // the server closed its output, or its input
}
