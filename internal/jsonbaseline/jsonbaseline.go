// Package jsonbaseline is what frame.Classifier is measured against: the
// typical MCP frames of the benchmarks, and how a Go program would
// classify them with encoding/json. frame's Go benchmarks and the bench
// harness share it, so that both compare the same work on the same bytes.
package jsonbaseline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Frame is one typical frame, as an MCP client or server sends it, with
// its trailing newline. Its Line must not be modified.
type Frame struct {
	Name string
	Line []byte
}

// Frames are the benchmarks' typical frames: a tools/call, a 4 KiB
// response and a batch of 8 calls.
var Frames = []Frame{
	{"call", []byte(`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/home/user/project/src/main.go","encoding":"utf-8"},"_meta":{"progressToken":"p-42"}}}` + "\n")},
	{"response4k", func() []byte {
		text := strings.Repeat(`package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hello, world\")\n}\n`, 48)
		return []byte(`{"jsonrpc":"2.0","id":42,"result":{"content":[{"type":"text","text":"` + text + `"}],"structuredContent":{"lines":384,"bytes":3744,"truncated":false},"isError":false}}` + "\n")
	}()},
	{"batch8", func() []byte {
		var sb strings.Builder
		sb.WriteString("[")
		for i := range 8 {
			if i > 0 {
				sb.WriteString(",")
			}
			fmt.Fprintf(&sb, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"search","arguments":{"query":"frame scanner %d","limit":10}}}`, i, i)
		}
		sb.WriteString("]\n")
		return []byte(sb.String())
	}()},
}

// Summary is what a classification finds in a line: its tools/calls and
// the last one's tool name, its responses and how many are tool errors.
type Summary struct {
	ToolCalls, Responses, ToolErrors int
	Tool                             string
}

// message is how a Go program would decode a JSON-RPC message.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  *string         `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

// Classify is the encoding/json baseline: struct decoding, with no
// duplicate or case-variant detection (it cannot see them), so it does
// less than frame.Classifier.Classify. It overwrites *s. It allocates, as
// encoding/json does.
func Classify(line []byte, s *Summary) error {
	*s = Summary{}
	line = bytes.TrimSpace(line)
	if len(line) > 0 && line[0] == '[' {
		var elems []json.RawMessage
		if err := json.Unmarshal(line, &elems); err != nil {
			return err
		}
		for _, e := range elems {
			if err := classifyMessage(e, s); err != nil {
				return err
			}
		}
		return nil
	}
	return classifyMessage(line, s)
}

func classifyMessage(raw []byte, s *Summary) error {
	var m message
	if err := json.Unmarshal(raw, &m); err != nil {
		return err
	}
	if m.Method != nil && *m.Method == "tools/call" {
		s.ToolCalls++
		var p struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(m.Params, &p); err != nil {
			return err
		}
		s.Tool = p.Name
	}
	if m.Method == nil && m.ID != nil && (m.Result != nil || m.Error != nil) {
		s.Responses++
		if m.Result != nil {
			var r struct {
				IsError bool `json:"isError"`
			}
			if err := json.Unmarshal(m.Result, &r); err != nil {
				return err
			}
			if r.IsError {
				s.ToolErrors++
			}
		}
	}
	return nil
}
