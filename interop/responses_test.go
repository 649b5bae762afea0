package interop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Every response a client accepts has its outcome. The
// official TypeScript SDK client matches a response to its request by
// Number(id) (so "1", "1e0", " 1 ", "0x1" answer call 1) and reads the last
// of duplicate keys; the Go SDK client reads a numeric id as a float64 and
// truncates it to an int64 (1.5 answers call 1); the Python SDK client
// turns a string id into int(id) (" 1 ", "0_1", "١"); a client that reads
// lines with Node's readline sees a response hidden behind a CR. A child that
// answers a tools/call in such a form gets its answer taken by the client;
// aegis must record it: as the call's outcome, or as an anomaly with the
// response line's digest when the match is ambiguous.
//
// TestResponseIDs drives each real client through the real aegis wrap to a
// malicious child (testdata/responses/child.py) that answers the call with
// a form line and then canonically, records which line each client took,
// and for every form line a client took requires the record.

// A respForm is the first line the child answers a tools/call with; %ID% is
// the request's id as JSON, %HEX% and %BIN% its digits in base 16 and 2,
// %ARABIC% and %FULLWIDTH% its decimal digits in those scripts.
type respForm struct {
	name string
	line string
	// Whether each client takes the form line as the call's answer.
	ts, goSDK, readline, py bool
}

const formResult = `"result":{"content":[{"type":"text","text":"form"}]}`

func respForms() []respForm {
	resp := func(id string) string { return `{"jsonrpc":"2.0","id":` + id + `,` + formResult + `}` }
	return []respForm{
		{name: "canonical", line: resp(`%ID%`), ts: true, goSDK: true, readline: true, py: true},
		{name: "string", line: resp(`"%ID%"`), ts: true, readline: true, py: true},
		{name: "string-exponent", line: resp(`"%ID%e0"`), ts: true, readline: true},
		{name: "string-float", line: resp(`"%ID%.0"`), ts: true, readline: true},
		{name: "string-padded", line: resp(`" %ID% "`), ts: true, readline: true, py: true},
		{name: "string-escaped-white-space", line: resp(`"\t%ID%\n"`), ts: true, readline: true, py: true},
		{name: "string-nbsp", line: resp(`"\u00a0%ID%"`), ts: true, readline: true, py: true},
		{name: "string-plus", line: resp(`"+%ID%"`), ts: true, readline: true, py: true},
		{name: "string-leading-zero", line: resp(`"0%ID%"`), ts: true, readline: true, py: true},
		{name: "string-hex", line: resp(`"0x%HEX%"`), ts: true, readline: true},
		{name: "string-binary", line: resp(`"0b%BIN%"`), ts: true, readline: true},
		// Only Python's int() reads these.
		{name: "string-underscore", line: resp(`"0_%ID%"`), py: true},
		{name: "string-arabic-indic-digits", line: resp(`"%ARABIC%"`), py: true},
		{name: "string-fullwidth-digits", line: resp(`"%FULLWIDTH%"`), py: true},
		{name: "float", line: resp(`%ID%.0`), ts: true, goSDK: true, readline: true, py: true},
		{name: "exponent", line: resp(`%ID%e0`), ts: true, goSDK: true, readline: true, py: true},
		{name: "scaled-exponent", line: resp(`%ID%0e-1`), ts: true, goSDK: true, readline: true, py: true},
		// Equal as float64, not as a decimal.
		{name: "near-float", line: resp(`%ID%.0000000000000001`), ts: true, goSDK: true, readline: true, py: true},
		// The Go SDK truncates to int64; the TS schema wants an integer.
		{name: "fraction", line: resp(`%ID%.5`), goSDK: true},
		{name: "duplicate-id-last", line: `{"jsonrpc":"2.0","id":7777,"id":%ID%,` + formResult + `}`, ts: true, goSDK: true, readline: true, py: true},
		{name: "duplicate-id-first", line: `{"jsonrpc":"2.0","id":%ID%,"id":7777,` + formResult + `}`},
		// Behind a CR: a member value to a reader of "\n" lines.
		{name: "cr-hidden", line: "{\"x\":\r" + resp(`%ID%`) + "\r}", readline: true},
		{name: "cr-hidden-string", line: "{\"x\":\r" + resp(`"%ID%"`) + "\r}", readline: true},
		// A second value after a CR: a stream decoder reads it.
		{name: "cr-second-value", line: resp(`7777`) + "\r" + resp(`%ID%`), goSDK: true, readline: true},
		// A batch of one response; the Go SDK client reads batches.
		{name: "batch-near-float", line: `[` + resp(`%ID%.0000000000000001`) + `]`, goSDK: true},
	}
}

// respSession is one session's files: the argv that runs aegis wrap in
// front of the malicious child, its audit log and the child's log of the
// lines it wrote.
type respSession struct {
	form      respForm
	argv      []string
	audit, rl string
}

func (e *readersEnv) respSessions(t *testing.T, forms []respForm) []respSession {
	t.Helper()
	python := python3Path(t)
	child, err := filepath.Abs(filepath.Join("testdata", "responses", "child.py"))
	if err != nil {
		t.Fatal(err)
	}
	var out []respSession
	for _, f := range forms {
		dir := t.TempDir()
		s := respSession{form: f, audit: filepath.Join(dir, "audit.jsonl"), rl: filepath.Join(dir, "lines.jsonl")}
		s.argv = []string{e.aegis, "wrap", "--audit", s.audit, "--signing-key", e.key, "--durability", "none", "--grace", "10s", "--",
			"env", "RESP_FORM=" + f.line, "RESP_LOG=" + s.rl, python, child}
		out = append(out, s)
	}
	return out
}

// formLine returns the exact form line the child wrote (without '\n').
func (s respSession) formLine(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(s.rl)
	if err != nil {
		t.Fatalf("%s: the child's log: %v", s.form.name, err)
	}
	var lines []string
	for _, l := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var x struct{ Kind, Line string }
		if json.Unmarshal(l, &x) == nil && x.Kind == "form" {
			lines = append(lines, x.Line)
		}
	}
	if len(lines) != 1 {
		t.Fatalf("%s: the child wrote %d form lines; want 1 (one tools/call)", s.form.name, len(lines))
	}
	return lines[0]
}

// checkResponse holds one session to its client's verdict: the client took
// the form line (text "form") or the canonical answer ("canonical"); a
// form line it took must be recorded, as the outcome of the call or as an
// anomaly with the line's digest.
func (e *readersEnv) checkResponse(t *testing.T, client string, s respSession, want bool, text, callErr string) {
	t.Helper()
	// A client that gives up on the line (the Go SDK's reader stops at a
	// message it cannot decode) fails the call: it took nothing.
	took := text == "form"
	if callErr == "" && !took && text != "canonical" {
		t.Fatalf("%s: result text %q; want form or canonical", client, text)
	}
	if took != want {
		t.Errorf("%s took the form line %q = %v (result %q, error %q); want %v", client, s.form.line, took, text, callErr, want)
	}
	vcmd := exec.Command(e.aegis, "verify", "--key", "@"+e.key+".pub", s.audit)
	if out, _ := vcmd.CombinedOutput(); vcmd.ProcessState.ExitCode() != 0 {
		t.Errorf("aegis verify = exit %d; want 0\n%s", vcmd.ProcessState.ExitCode(), out)
	}
	if !took {
		return
	}
	line := s.formLine(t)
	digest := digestOf(line)
	recs := readAuditRecs(t, s.audit)
	var intents []*auditRec
	var desc []string
	for _, r := range recs {
		if r.Kind == "intent" {
			intents = append(intents, r)
		}
		if r.Kind == "intent" || r.Kind == "outcome" || r.Kind == "anomaly" {
			d := r.String()
			if r.ResponseDigest != nil {
				d += " response_digest " + *r.ResponseDigest
			}
			desc = append(desc, d)
		}
	}
	if len(intents) != 1 {
		t.Fatalf("%d intents; want 1 (one tools/call)\n  %s", len(intents), strings.Join(desc, "\n  "))
	}
	recorded := false
	for _, r := range recs {
		switch {
		case r.Kind == "outcome" && r.Intent != nil && *r.Intent == intents[0].Seq && r.ResponseDigest != nil && *r.ResponseDigest == digest:
			recorded = true
		case r.Kind == "anomaly" && (r.RequestDigest == digest || (r.ResponseDigest != nil && *r.ResponseDigest == digest)):
			recorded = true
		}
	}
	if !recorded {
		t.Errorf("%s took %q as the answer to call %s: record of it = none; want the call's outcome with response_digest %s, or an anomaly with that digest\n  %s",
			client, line, intents[0].Call, digest, strings.Join(desc, "\n  "))
	}
}

// runClient runs a client script (testdata/responses/script, run by the
// interpreter named) over sessions and returns its lines by form.
func runClient(t *testing.T, interpreter, script string, sessions []respSession) map[string]struct{ Text, Error string } {
	t.Helper()
	type sess struct {
		Form string   `json:"form"`
		Argv []string `json:"argv"`
	}
	var in []sess
	for _, s := range sessions {
		in = append(in, sess{s.form.name, s.argv})
	}
	js, _ := json.Marshal(in)
	ctx, cancel := context.WithTimeout(context.Background(), sessionTimeout)
	defer cancel()
	path, err := filepath.Abs(filepath.Join("testdata", "responses", script))
	if err != nil {
		t.Fatal(err)
	}
	bin := python3Path(t)
	if interpreter != "python3" {
		bin = lookPath(t, interpreter)
	}
	cmd := exec.CommandContext(ctx, bin, path)
	cmd.Env = append(os.Environ(), "RESP_SESSIONS="+string(js))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", interpreter, script, err, stdout.String(), stderr.String())
	}
	out := map[string]struct{ Text, Error string }{}
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		var l struct {
			Form  string  `json:"form"`
			Text  *string `json:"text"`
			Error string  `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%s %s printed %q: %v", interpreter, script, sc.Text(), err)
		}
		r := struct{ Text, Error string }{Error: l.Error}
		if l.Text != nil {
			r.Text = *l.Text
		}
		out[l.Form] = r
	}
	if len(out) != len(sessions) {
		t.Fatalf("%s %s answered %d sessions; want %d\n%s\nstderr:\n%s", interpreter, script, len(out), len(sessions), stdout.String(), stderr.String())
	}
	return out
}

// TestResponseIDs: subtests client/form, e.g.
// -run 'TestResponseIDs/ts-sdk/string$'.
func TestResponseIDs(t *testing.T) {
	if _, err := os.Stat("node_modules/@modelcontextprotocol/sdk/package.json"); err != nil {
		t.Fatalf("the TypeScript SDK is not installed (%v).\nRun `npm ci` in interop/ first.", err)
	}
	env := newReadersEnv(t)
	forms := respForms()

	t.Run("ts-sdk", func(t *testing.T) {
		t.Parallel()
		sessions := env.respSessions(t, forms)
		got := runClient(t, "node", "ts_client.mjs", sessions)
		for _, s := range sessions {
			t.Run(s.form.name, func(t *testing.T) {
				r := got[s.form.name]
				env.checkResponse(t, "the TS SDK client", s, s.form.ts, r.Text, r.Error)
			})
		}
	})

	t.Run("readline", func(t *testing.T) {
		t.Parallel()
		sessions := env.respSessions(t, forms)
		got := runClient(t, "node", "readline_client.mjs", sessions)
		for _, s := range sessions {
			t.Run(s.form.name, func(t *testing.T) {
				r := got[s.form.name]
				env.checkResponse(t, "the readline client", s, s.form.readline, r.Text, r.Error)
			})
		}
	})

	t.Run("python", func(t *testing.T) {
		t.Parallel()
		sessions := env.respSessions(t, forms)
		got := runClient(t, "python3", "py_client.py", sessions)
		for _, s := range sessions {
			t.Run(s.form.name, func(t *testing.T) {
				r := got[s.form.name]
				env.checkResponse(t, "the Python SDK client emulation", s, s.form.py, r.Text, r.Error)
			})
		}
	})

	t.Run("go-sdk", func(t *testing.T) {
		t.Parallel()
		for _, s := range env.respSessions(t, forms) {
			t.Run(s.form.name, func(t *testing.T) {
				t.Parallel()
				text, callErr := goSDKCall(t, s.argv)
				env.checkResponse(t, "the Go SDK client", s, s.form.goSDK, text, callErr)
			})
		}
	})
}

// goSDKCall connects the official Go SDK client to argv, calls echo once
// and closes (waiting for the process to exit); it returns the result's
// text or the call's error.
func goSDKCall(t *testing.T, argv []string) (text, callErr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), sessionTimeout)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "aegis-ids-go", Version: "1.0.0"}, nil)
	var stderr syncBuffer
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = &stderr
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{}})
	switch {
	case err != nil:
		callErr = err.Error()
	case len(res.Content) == 1:
		if tc, ok := res.Content[0].(*mcp.TextContent); ok {
			text = tc.Text
		}
	}
	cs.Close()
	return text, callErr
}
