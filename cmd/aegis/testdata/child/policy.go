package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
)

// childTools are the tools policyChild runs.
var childTools = map[string]bool{"read_file": true, "delete_all": true, "delete_x": true, "write_file": true, "search": true, "echo": true, "flip": true, "steady": true}

// policyChild, the child of $AEGIS_POLICY_CHILD, is the policy tests'
// tool server, as lenient as a real one can be, so that what reaches it
// is judged by what a real decoder would run:
//
//   - it reads stdin as a stream of JSON values across lines (Go's
//     json.Decoder, as the Go SDK's stdio transport does), so a call split
//     over two lines, or after another value on the same line, is read;
//   - it decodes messages with encoding/json: the last duplicate key wins,
//     and keys match case-insensitively ("Name", "paramſ"), escapes decoded;
//   - it runs a tool by exact name from a fixed set, as MCP servers look
//     tools up, and answers other names "unknown tool" (an error result);
//   - it ignores SIGHUP, which aegis forwards to it when it reloads.
//
// It appends every raw line it reads to $AEGIS_TEST_LOG, and every tool it
// runs (or refuses as unknown) to $AEGIS_POLICY_EXEC, one JSON string a
// line: "ran:NAME" or "unknown:NAME".
func policyChild() int {
	signal.Ignore(syscall.SIGHUP)
	var logf, execf *os.File
	if p := os.Getenv("AEGIS_TEST_LOG"); p != "" {
		logf, _ = os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	}
	if p := os.Getenv("AEGIS_POLICY_EXEC"); p != "" {
		execf, _ = os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	}
	out := bufio.NewWriter(os.Stdout)
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	var pending []byte
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 {
			if logf != nil {
				logf.Write(line)
				if line[len(line)-1] != '\n' {
					logf.Write([]byte("\n"))
				}
			}
			pending = append(pending, line...)
			pending = serveValues(pending, out, execf)
			out.Flush()
		}
		if err != nil {
			return 0
		}
	}
}

// serveValues answers every complete JSON value at the front of buf and
// returns what is left: the start of a value still to come. Input that is
// not JSON is skipped to the next line, as a resynchronising decoder does.
func serveValues(buf []byte, out *bufio.Writer, execf *os.File) []byte {
	for {
		dec := json.NewDecoder(bytes.NewReader(buf))
		var v json.RawMessage
		err := dec.Decode(&v)
		switch {
		case err == nil:
			answer := serveValue(v, execf)
			if answer != nil {
				out.Write(answer)
				out.WriteByte('\n')
			}
			buf = buf[dec.InputOffset():]
		case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
			return buf
		default:
			k := bytes.IndexByte(buf, '\n')
			if k < 0 {
				return buf[:0]
			}
			buf = buf[k+1:]
		}
	}
}

type childMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name string `json:"name"`
	} `json:"params"`
}

func serveValue(v json.RawMessage, execf *os.File) []byte {
	v = bytes.TrimSpace(v)
	if len(v) > 0 && v[0] == '[' {
		var batch []json.RawMessage
		if json.Unmarshal(v, &batch) != nil {
			return nil
		}
		var answers [][]byte
		for _, e := range batch {
			if a := serveMsg(e, execf); a != nil {
				answers = append(answers, a)
			}
		}
		if len(answers) == 0 {
			return nil
		}
		return append(append([]byte("["), bytes.Join(answers, []byte(","))...), ']')
	}
	return serveMsg(v, execf)
}

func serveMsg(v json.RawMessage, execf *os.File) []byte {
	var m childMsg
	if err := json.Unmarshal(v, &m); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) || m.Method == "" {
			return nil // not an object, or nothing a server would act on
		}
	}
	if m.Method == "" {
		return nil // a response to a server request: nothing to run
	}
	result := `{}`
	if m.Method == "tools/call" {
		what := "unknown:" + m.Params.Name
		result = `{"content":[],"isError":true,"unknownTool":` + strconv.Quote(m.Params.Name) + `}`
		if childTools[m.Params.Name] {
			what = "ran:" + m.Params.Name
			result = `{"content":[{"type":"text","text":` + strconv.Quote("ran "+m.Params.Name) + `}]}`
		}
		if execf != nil {
			b, _ := json.Marshal(what)
			execf.Write(append(b, '\n'))
		}
	}
	if len(m.ID) == 0 {
		return nil
	}
	return []byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":` + result + `}`)
}
