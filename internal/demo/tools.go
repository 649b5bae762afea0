package demo

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Bounds of the slow tool's ms argument, in milliseconds.
const (
	SlowDefaultMS = 300
	SlowMaxMS     = 5000
)

// toolDef is a tool as tools/list describes it.
type toolDef struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	InputSchema map[string]any `json:"inputSchema"`
}

type tool struct {
	toolDef
	// run returns the tools/call result, or an error for arguments that do
	// not fit the schema (answered as -32602).
	run func(args json.RawMessage) (toolResult, error)
}

type toolResult struct {
	Content []textContent `json:"content"`
	IsError bool          `json:"isError,omitempty"`
}

type textContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func text(s string) toolResult {
	return toolResult{Content: []textContent{{Type: "text", Text: s}}}
}

func object(props map[string]any, required ...string) map[string]any {
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

// tools are the demo tools in the order tools/list gives them.
var tools = []tool{
	{
		toolDef: toolDef{
			Name:        "echo",
			Description: "Returns its text argument unchanged.",
			InputSchema: object(map[string]any{
				"text": map[string]any{"type": "string", "description": "the text to send back"},
			}, "text"),
		},
		run: func(args json.RawMessage) (toolResult, error) {
			var a struct {
				Text *string `json:"text"`
			}
			if err := decodeArgs(args, &a); err != nil {
				return toolResult{}, err
			}
			if a.Text == nil {
				return toolResult{}, errors.New("text is required")
			}
			return text(*a.Text), nil
		},
	},
	{
		toolDef: toolDef{
			Name:        "add",
			Description: "Returns the sum of two numbers.",
			InputSchema: object(map[string]any{
				"a": map[string]any{"type": "number"},
				"b": map[string]any{"type": "number"},
			}, "a", "b"),
		},
		run: func(args json.RawMessage) (toolResult, error) {
			var a struct {
				A *float64 `json:"a"`
				B *float64 `json:"b"`
			}
			if err := decodeArgs(args, &a); err != nil {
				return toolResult{}, err
			}
			if a.A == nil || a.B == nil {
				return toolResult{}, errors.New("a and b are required")
			}
			return text(strconv.FormatFloat(*a.A+*a.B, 'g', -1, 64)), nil
		},
	},
	{
		toolDef: toolDef{
			Name:        "slow",
			Description: "Sleeps for ms milliseconds, then answers. Other calls are answered meanwhile.",
			InputSchema: object(map[string]any{
				"ms": map[string]any{"type": "integer", "minimum": 0, "maximum": SlowMaxMS, "default": SlowDefaultMS},
			}),
		},
		run: func(args json.RawMessage) (toolResult, error) {
			var a struct {
				MS *int `json:"ms"`
			}
			if err := decodeArgs(args, &a); err != nil {
				return toolResult{}, err
			}
			ms := SlowDefaultMS
			if a.MS != nil {
				ms = *a.MS
			}
			if ms < 0 || ms > SlowMaxMS {
				return toolResult{}, fmt.Errorf("ms must be between 0 and %d", SlowMaxMS)
			}
			time.Sleep(time.Duration(ms) * time.Millisecond)
			return text(fmt.Sprintf("slept %dms", ms)), nil
		},
	},
	{
		toolDef: toolDef{
			Name:        "fail",
			Description: "Always fails, on purpose: a tool error (isError), not a protocol error.",
			InputSchema: object(map[string]any{}),
		},
		run: func(json.RawMessage) (toolResult, error) {
			r := text("fail: this tool fails on purpose, to show a tool error")
			r.IsError = true
			return r, nil
		},
	},
}

func findTool(name string) *tool {
	for i := range tools {
		if tools[i].Name == name {
			return &tools[i]
		}
	}
	return nil
}

// decodeArgs decodes a tool's arguments object into dst, refusing members
// the tool's schema does not have (its schemas say additionalProperties:
// false).
func decodeArgs(args json.RawMessage, dst any) error {
	if len(args) == 0 || args[0] != '{' {
		return errors.New("arguments must be an object")
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return fmt.Errorf("bad arguments: %v", err)
	}
	return nil
}
