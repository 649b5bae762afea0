package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/frame"
)

// Typical frames, as an MCP client and server send them (the same as
// frame/bench_test.go's).
var scanFrames = []struct {
	name string
	line []byte
}{
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

// ScanResult is frame.Classifier.Classify against encoding/json doing the
// same classification (find tools/calls and their names, responses and
// their isError) on the same frame, in the same rounds.
type ScanResult struct {
	Frame     string  `json:"frame"`
	Bytes     int     `json:"bytes"`
	Classify  Stats   `json:"classify"` // ns per frame, one sample per round
	JSON      Stats   `json:"encoding_json"`
	FrameMBps float64 `json:"classify_mb_s"`
	JSONMBps  float64 `json:"encoding_json_mb_s"`
	// Speedup is encoding/json's median ÷ Classify's; the target is ≥ 5.
	Speedup     Ratio   `json:"speedup"`
	FrameAllocs float64 `json:"classify_allocs_per_frame"` // steady state; the target is 0
	JSONAllocs  float64 `json:"encoding_json_allocs_per_frame"`
}

func (h *harness) scanSection(ctx context.Context) error {
	for _, fr := range scanFrames {
		var c frame.Classifier
		var f frame.Frame
		var s ejSummary
		classify := func() { c.Classify(fr.line, &f) }
		decode := func() {
			if err := ejClassify(fr.line, &s); err != nil {
				panic(err) // the frames are fixed and valid
			}
		}
		classify()
		if f.Kind == frame.NotJSON || f.Anomaly != "" {
			return fmt.Errorf("frame %s: classified %v %q", fr.name, f.Kind, f.Anomaly)
		}
		var fs, js samples
		n := h.it.scanFrames
		for round := 0; round < h.it.scanRounds && ctx.Err() == nil; round++ {
			fs.add(timePer(classify, n))
			js.add(timePer(decode, n))
		}
		r := ScanResult{Frame: fr.name, Bytes: len(fr.line), Classify: fs.stats(), JSON: js.stats()}
		r.FrameMBps = float64(len(fr.line)) / r.Classify.Median * 1e3
		r.JSONMBps = float64(len(fr.line)) / r.JSON.Median * 1e3
		r.Speedup = ratio(r.JSON.Median, r.Classify.Median)
		r.FrameAllocs = testing.AllocsPerRun(200, classify)
		r.JSONAllocs = testing.AllocsPerRun(200, decode)
		h.res.Scan = append(h.res.Scan, r)
		h.logf("   %-10s classify %6.0f ns (%4.0f MB/s, %.0f allocs), encoding/json %6.0f ns (%.0f allocs): %.1f×",
			fr.name, r.Classify.Median, r.FrameMBps, r.FrameAllocs, r.JSON.Median, r.JSONAllocs, r.Speedup)
	}
	return nil
}

// timePer runs f n times and returns the time per run.
func timePer(f func(), n int) time.Duration {
	t0 := time.Now()
	for range n {
		f()
	}
	return time.Since(t0) / time.Duration(n)
}

// ejMessage is how a Go program would classify with encoding/json.
type ejMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  *string         `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

type ejSummary struct {
	toolCalls, responses, toolErrors int
	tool                             string
}

// ejClassify is the encoding/json baseline of frame/bench_test.go: struct
// decoding, with no duplicate or case-variant detection (it cannot see
// them), so it does less than Classify.
func ejClassify(line []byte, s *ejSummary) error {
	*s = ejSummary{}
	line = bytes.TrimSpace(line)
	if len(line) > 0 && line[0] == '[' {
		var elems []json.RawMessage
		if err := json.Unmarshal(line, &elems); err != nil {
			return err
		}
		for _, e := range elems {
			if err := ejClassifyMsg(e, s); err != nil {
				return err
			}
		}
		return nil
	}
	return ejClassifyMsg(line, s)
}

func ejClassifyMsg(raw []byte, s *ejSummary) error {
	var m ejMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return err
	}
	if m.Method != nil && *m.Method == "tools/call" {
		s.toolCalls++
		var p struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(m.Params, &p); err != nil {
			return err
		}
		s.tool = p.Name
	}
	if m.Method == nil && m.ID != nil && (m.Result != nil || m.Error != nil) {
		s.responses++
		if m.Result != nil {
			var r struct {
				IsError bool `json:"isError"`
			}
			if err := json.Unmarshal(m.Result, &r); err != nil {
				return err
			}
			if r.IsError {
				s.toolErrors++
			}
		}
	}
	return nil
}
