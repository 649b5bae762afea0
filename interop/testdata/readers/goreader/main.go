// Command goreader is TestReaders' Go readers (interop/readers_test.go):
// one child server per way a Go server reads its stdin, chosen by
// $AEGIS_READER_CHILD:
//
//	go-scanner    bufio.Scanner (ScanLines: lines end at "\n", one "\r"
//	              before it is dropped); each line decoded with
//	              encoding/json into a struct, as Go servers do (last
//	              duplicate wins, keys match case-insensitively); an array
//	              is a batch of messages
//	go-recursive  the same lines, and a batch handler that recurses into
//	              arrays inside arrays ([[call]] runs the call)
//	go-decoder    a json.Decoder reading a stream of values across lines
//	              (white space, "\r" and "\n" included, between them); it
//	              stops at the first syntax error, as such a server does
//	go-sdk        the official Go SDK server (mcp.Server over
//	              mcp.StdioTransport), tools echo and delete_all
//
// go-scanner also copies every byte it reads to $READER_EXEC.raw.
//
// Every tools/call a reader executes is appended to $READER_EXEC as one JSON
// line {"reader":…,"id":<id>,"tool":<name>}, before it is answered. The
// Go SDK hands a tool no JSON-RPC id, so its tools record the id the
// tests put in every call's arguments ({"id":<the call's id>}).
//
// The test builds it without the race detector, which would guard none of
// aegis's code here: the readers run as children, over a hundred times.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	mode := os.Getenv("AEGIS_READER_CHILD")
	execLog, err := os.OpenFile(os.Getenv("READER_EXEC"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "reader child:", err)
		os.Exit(1)
	}
	c := &goReader{name: mode, exec: execLog, out: bufio.NewWriter(os.Stdout)}
	switch mode {
	case "go-scanner", "go-recursive":
		var in io.Reader = os.Stdin
		if mode == "go-scanner" {
			// A copy of every byte read, for the test's byte-identity check.
			raw, err := os.OpenFile(os.Getenv("READER_EXEC")+".raw", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
			if err != nil {
				fmt.Fprintln(os.Stderr, "reader child:", err)
				os.Exit(1)
			}
			in = io.TeeReader(os.Stdin, raw)
		}
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			c.serveValue(sc.Bytes(), mode == "go-recursive", 0)
			c.out.Flush()
		}
	case "go-decoder":
		dec := json.NewDecoder(os.Stdin)
		for {
			var v json.RawMessage
			if dec.Decode(&v) != nil {
				break
			}
			c.serveValue(v, false, 0)
			c.out.Flush()
		}
	case "go-sdk":
		os.Exit(goSDKReader(execLog))
	default:
		fmt.Fprintf(os.Stderr, "reader child: unknown reader %q\n", mode)
		os.Exit(2)
	}
	os.Exit(0)
}

type goReader struct {
	name string
	exec *os.File
	out  *bufio.Writer
}

// execRecord is a line of $READER_EXEC.
type execRecord struct {
	Reader string          `json:"reader"`
	ID     json.RawMessage `json:"id"`
	Tool   string          `json:"tool"`
}

func (c *goReader) serveValue(v []byte, recursive bool, depth int) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return
	}
	if v[0] != '[' {
		c.serveMsg(v)
		return
	}
	var batch []json.RawMessage
	if json.Unmarshal(v, &batch) != nil {
		return
	}
	for _, e := range batch {
		e = bytes.TrimSpace(e)
		if recursive && len(e) > 0 && e[0] == '[' && depth < 100 {
			c.serveValue(e, true, depth+1)
			continue
		}
		c.serveMsg(e)
	}
}

func (c *goReader) serveMsg(v []byte) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params *struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	if json.Unmarshal(v, &m) != nil || m.Method == "" {
		return
	}
	hasID := len(m.ID) > 0 && string(m.ID) != "null"
	if m.Method != "tools/call" {
		if hasID {
			fmt.Fprintf(c.out, `{"jsonrpc":"2.0","id":%s,"result":{}}`+"\n", m.ID)
		}
		return
	}
	if m.Params == nil || m.Params.Name == "" {
		return
	}
	rec, _ := json.Marshal(execRecord{Reader: c.name, ID: m.ID, Tool: m.Params.Name})
	c.exec.Write(append(rec, '\n'))
	if hasID {
		name, _ := json.Marshal("ran " + m.Params.Name)
		fmt.Fprintf(c.out, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":%s}]}}`+"\n", m.ID, name)
	}
}

// goSDKReader serves tools echo and delete_all with the official Go SDK
// over stdio until stdin ends (or the SDK's reader gives up).
func goSDKReader(execLog io.Writer) int {
	server := mcp.NewServer(&mcp.Implementation{Name: "aegis-readers-go", Version: "1.0.0"}, nil)
	for _, name := range []string{"echo", "delete_all"} {
		server.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args struct {
				ID json.RawMessage `json:"id"`
			}
			json.Unmarshal(req.Params.Arguments, &args)
			rec, _ := json.Marshal(execRecord{Reader: "go-sdk", ID: args.ID, Tool: name})
			execLog.Write(append(rec, '\n'))
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ran " + name}}}, nil
		})
	}
	server.Run(context.Background(), &mcp.StdioTransport{})
	return 0
}
