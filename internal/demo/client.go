package demo

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"
)

// AnswerTimeout bounds every wait of Drive for an answer.
const AnswerTimeout = 10 * time.Second

// Drive runs the demo client script against a server whose stdin is w and
// whose stdout is r, checks every answer, and writes one human line per step
// to log. It returns nil when every answer was the expected one, and
// otherwise an error matching ErrAnswer, ErrTimeout or ErrClosed.
//
// Answers are matched by id and may come in any order. Drive closes nothing:
// the caller closes w afterwards to end the server. A goroutine started by
// Drive keeps reading r, discarding what it reads, until r returns EOF or an
// error, so r must be closed or reach EOF for it to end. Drive is not
// goroutine-safe with other users of w, r or log.
func Drive(w io.Writer, r io.Reader, log io.Writer) error {
	return drive(w, r, log, AnswerTimeout)
}

func drive(w io.Writer, r io.Reader, log io.Writer, timeout time.Duration) error {
	c := &client{
		w:       w,
		log:     log,
		timeout: timeout,
		waiting: make(map[string]chan json.RawMessage),
		batches: make(chan []json.RawMessage, 1),
		done:    make(chan struct{}),
	}
	go c.read(r)
	if err := c.script(); err != nil {
		return err
	}
	return c.strayErr()
}

// script is the demo: every step sends, waits and checks.
func (c *client) script() error {
	init, err := c.request("initialize", map[string]any{
		"protocolVersion": ProtocolVersion,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]string{"name": "aegis-demo-client", "version": ServerVersion},
	})
	if err != nil {
		return err
	}
	var ir struct {
		ProtocolVersion string `json:"protocolVersion"`
		Capabilities    struct {
			Tools json.RawMessage `json:"tools"`
		} `json:"capabilities"`
		ServerInfo struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"serverInfo"`
	}
	if err := json.Unmarshal(init, &ir); err != nil || ir.ProtocolVersion != ProtocolVersion || ir.Capabilities.Tools == nil || ir.ServerInfo.Name == "" {
		return fmt.Errorf("%w: initialize: %s", ErrAnswer, init)
	}
	c.logf("initialize", "%s %s, protocol %s", ir.ServerInfo.Name, ir.ServerInfo.Version, ir.ProtocolVersion)

	if err := c.send(outMsg{JSONRPC: "2.0", Method: "notifications/initialized"}); err != nil {
		return err
	}
	c.logf("notifications/initialized", "(a notification: no answer)")

	list, err := c.request("tools/list", nil)
	if err != nil {
		return err
	}
	var lr struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(list, &lr); err != nil {
		return fmt.Errorf("%w: tools/list: %s", ErrAnswer, list)
	}
	var names []string
	for _, t := range lr.Tools {
		names = append(names, t.Name)
	}
	for _, want := range []string{"echo", "add", "slow", "fail"} {
		if !slices.Contains(names, want) {
			return fmt.Errorf("%w: tools/list has no %s: %s", ErrAnswer, want, list)
		}
	}
	c.logf("tools/list", "%s", strings.Join(names, ", "))

	if err := c.callText("echo", map[string]any{"text": "hello, aegis"}, "hello, aegis"); err != nil {
		return err
	}
	if err := c.callText("add", map[string]any{"a": 2, "b": 3}, "5"); err != nil {
		return err
	}
	if err := c.overtake(); err != nil {
		return err
	}

	res, err := c.call("fail", map[string]any{})
	if err != nil {
		return err
	}
	msg, isError, err := toolText(res)
	if err != nil || !isError {
		return fmt.Errorf("%w: tools/call fail: want isError: %s", ErrAnswer, res)
	}
	c.logf(`tools/call fail {}`, "isError: %s", msg)

	if err := c.unknownTool(); err != nil {
		return err
	}
	return c.batch()
}

// overtake sends a slow call, then an add while the slow one is in flight:
// the add is answered first, out of order, as real servers do.
func (c *client) overtake() error {
	slowArgs := map[string]any{"ms": SlowDefaultMS}
	slowID, slowCh, err := c.start("tools/call", callArgs("slow", slowArgs))
	if err != nil {
		return err
	}
	c.logf("tools/call slow "+compact(slowArgs), "(in flight)")
	if err := c.callText("add", map[string]any{"a": 40, "b": 2}, "42"); err != nil {
		return err
	}
	select {
	case early := <-slowCh:
		slowCh <- early // back for the wait below; nothing else sends on it
		c.logf("", "(slow answered before add: in order this time)")
	default:
		c.logf("", "(add answered while slow was still in flight: out of order)")
	}
	res, err := c.await(slowID, slowCh, "tools/call slow")
	if err != nil {
		return err
	}
	want := fmt.Sprintf("slept %dms", SlowDefaultMS)
	if got, isError, err := toolText(res); err != nil || isError || got != want {
		return fmt.Errorf("%w: tools/call slow = %s; want text %q", ErrAnswer, res, want)
	}
	c.logf("", "slow: %s", want)
	return nil
}

func (c *client) unknownTool() error {
	const name = "no-such-tool"
	id, ch, err := c.start("tools/call", callArgs(name, map[string]any{}))
	if err != nil {
		return err
	}
	ans, err := c.awaitAnswer(id, ch, "tools/call "+name)
	if err != nil {
		return err
	}
	if ans.Error == nil || ans.Error.Code != CodeInvalidParams {
		return fmt.Errorf("%w: tools/call %s: want error %d, got %s", ErrAnswer, name, CodeInvalidParams, ans.raw)
	}
	c.logf("tools/call "+name+" {}", "error %d: %s", ans.Error.Code, ans.Error.Message)
	return nil
}

// batch sends two calls in one JSON-RPC batch and expects one array that
// answers both, in any order.
func (c *client) batch() error {
	echoArgs := map[string]any{"text": "batched"}
	addArgs := map[string]any{"a": 1.5, "b": 2.25}
	want := map[string]string{}
	var msgs []outMsg
	for _, call := range []struct {
		name string
		args map[string]any
		want string
	}{{"echo", echoArgs, "batched"}, {"add", addArgs, "3.75"}} {
		id := c.newID()
		msgs = append(msgs, outMsg{JSONRPC: "2.0", ID: &id, Method: "tools/call", Params: callArgs(call.name, call.args)})
		want[fmt.Sprint(id)] = call.want
	}
	// Drain a stray batch answer so the one awaited below is this one's.
	select {
	case <-c.batches:
	default:
	}
	if err := c.send(msgs); err != nil {
		return err
	}
	timer := time.NewTimer(c.timeout)
	defer timer.Stop()
	var elems []json.RawMessage
	select {
	case elems = <-c.batches:
	case <-c.done:
		select {
		case elems = <-c.batches:
		default:
			return fmt.Errorf("%w: batch: %v", ErrClosed, c.readErr)
		}
	case <-timer.C:
		return fmt.Errorf("%w: batch after %v", ErrTimeout, c.timeout)
	}
	if len(elems) != len(msgs) {
		return fmt.Errorf("%w: batch of %d calls answered by %d answers", ErrAnswer, len(msgs), len(elems))
	}
	var got []string
	for _, e := range elems {
		a, err := decodeAnswer(e)
		if err != nil {
			return err
		}
		w, ok := want[idKey(a.ID)]
		if !ok {
			return fmt.Errorf("%w: batch answer with id %s, which the batch did not carry", ErrAnswer, a.ID)
		}
		delete(want, idKey(a.ID))
		txt, isError, err := toolText(a.Result)
		if a.Error != nil || err != nil || isError || txt != w {
			return fmt.Errorf("%w: batch answer %s; want text %q", ErrAnswer, e, w)
		}
		got = append(got, txt)
	}
	c.logf(fmt.Sprintf("[tools/call echo %s, tools/call add %s]", compact(echoArgs), compact(addArgs)), "[%s]", strings.Join(got, ", "))
	return nil
}

type client struct {
	w       io.Writer
	log     io.Writer
	timeout time.Duration
	lastID  int

	mu      sync.Mutex
	waiting map[string]chan json.RawMessage // id → where its answer goes
	stray   []string                        // what came that nobody waited for

	batches chan []json.RawMessage
	done    chan struct{} // closed when read returns
	readErr error         // why read returned; read before done is closed
}

// outMsg is a message Drive writes. A nil ID makes it a notification.
type outMsg struct {
	JSONRPC string `json:"jsonrpc"`
	ID      *int   `json:"id,omitempty"`
	Method  string `json:"method"`
	Params  any    `json:"params,omitempty"`
}

type rpcAnswer struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *rpcError       `json:"error"`
	raw    json.RawMessage
}

// read delivers every answer on r to its waiter until r ends.
func (c *client) read(r io.Reader) {
	br := bufio.NewReader(r)
	var err error
	for err == nil {
		var line []byte
		line, err = br.ReadBytes('\n')
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if line[0] == '[' {
			var elems []json.RawMessage
			if json.Unmarshal(line, &elems) != nil {
				c.addStray("not JSON: " + string(line))
				continue
			}
			select {
			case c.batches <- elems:
			default:
				c.addStray("second batch answer: " + string(line))
			}
			continue
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(line, &m) != nil {
			c.addStray("not JSON: " + string(line))
			continue
		}
		if m.Method != "" {
			// A request or notification from the server: the demo server
			// sends none, and Drive has nothing to answer with.
			c.addStray("server message: " + string(line))
			continue
		}
		c.mu.Lock()
		ch, ok := c.waiting[idKey(m.ID)]
		delete(c.waiting, idKey(m.ID))
		c.mu.Unlock()
		if !ok {
			c.addStray("answer nobody waits for: " + string(line))
			continue
		}
		ch <- slices.Clone(line)
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	c.readErr = err
	close(c.done)
}

func (c *client) addStray(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stray = append(c.stray, s)
}

func (c *client) strayErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.stray) > 0 {
		return fmt.Errorf("%w: %s", ErrAnswer, strings.Join(c.stray, "; "))
	}
	return nil
}

func (c *client) newID() int {
	c.lastID++
	return c.lastID
}

func (c *client) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("demo: marshal own message: %v", err))
	}
	if _, err := c.w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("demo: write: %w", err)
	}
	return nil
}

// start sends a request and returns where its answer will arrive.
func (c *client) start(method string, params any) (int, chan json.RawMessage, error) {
	id := c.newID()
	ch := make(chan json.RawMessage, 1)
	c.mu.Lock()
	c.waiting[fmt.Sprint(id)] = ch
	c.mu.Unlock()
	return id, ch, c.send(outMsg{JSONRPC: "2.0", ID: &id, Method: method, Params: params})
}

// awaitAnswer waits at most c.timeout for the answer to request id.
func (c *client) awaitAnswer(id int, ch chan json.RawMessage, what string) (rpcAnswer, error) {
	timer := time.NewTimer(c.timeout)
	defer timer.Stop()
	var line json.RawMessage
	select {
	case line = <-ch:
	case <-c.done:
		select {
		case line = <-ch:
		default:
			return rpcAnswer{}, fmt.Errorf("%w: %s (id %d): %v", ErrClosed, what, id, c.readErr)
		}
	case <-timer.C:
		return rpcAnswer{}, fmt.Errorf("%w: %s (id %d) after %v", ErrTimeout, what, id, c.timeout)
	}
	return decodeAnswer(line)
}

// await is awaitAnswer for a request that must succeed; it returns the result.
func (c *client) await(id int, ch chan json.RawMessage, what string) (json.RawMessage, error) {
	a, err := c.awaitAnswer(id, ch, what)
	if err != nil {
		return nil, err
	}
	if a.Error != nil || a.Result == nil {
		return nil, fmt.Errorf("%w: %s: %s", ErrAnswer, what, a.raw)
	}
	return a.Result, nil
}

func (c *client) request(method string, params any) (json.RawMessage, error) {
	id, ch, err := c.start(method, params)
	if err != nil {
		return nil, err
	}
	return c.await(id, ch, method)
}

func (c *client) call(name string, args map[string]any) (json.RawMessage, error) {
	id, ch, err := c.start("tools/call", callArgs(name, args))
	if err != nil {
		return nil, err
	}
	return c.await(id, ch, "tools/call "+name)
}

// callText calls a tool that must answer with the text want.
func (c *client) callText(name string, args map[string]any, want string) error {
	res, err := c.call(name, args)
	if err != nil {
		return err
	}
	got, isError, err := toolText(res)
	if err != nil || isError || got != want {
		return fmt.Errorf("%w: tools/call %s %s = %s; want text %q", ErrAnswer, name, compact(args), res, want)
	}
	c.logf("tools/call "+name+" "+compact(args), "%s", got)
	return nil
}

func (c *client) logf(sent, format string, args ...any) {
	arrow := "→"
	if sent == "" {
		arrow = " "
	}
	fmt.Fprintf(c.log, "%s %-40s ← %s\n", arrow, sent, fmt.Sprintf(format, args...))
}

func callArgs(name string, args map[string]any) map[string]any {
	return map[string]any{"name": name, "arguments": args}
}

func decodeAnswer(line json.RawMessage) (rpcAnswer, error) {
	var a rpcAnswer
	if err := json.Unmarshal(line, &a); err != nil {
		return a, fmt.Errorf("%w: %s", ErrAnswer, line)
	}
	a.raw = line
	return a, nil
}

// toolText returns the text of a tools/call result with one text content
// block, and whether the result is a tool error.
func toolText(result json.RawMessage) (string, bool, error) {
	var r toolResult
	if err := json.Unmarshal(result, &r); err != nil {
		return "", false, err
	}
	if len(r.Content) != 1 || r.Content[0].Type != "text" {
		return "", r.IsError, fmt.Errorf("want one text block, got %s", result)
	}
	return r.Content[0].Text, r.IsError, nil
}

// idKey is the map key of an id: its JSON text without white space, which
// for the integer ids Drive sends is their decimal form.
func idKey(id json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, id) != nil {
		return string(id)
	}
	return b.String()
}

func compact(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
