package otelexport

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// tapFile feeds the lines of a golden log to a fresh Exporter, a few
// lines a group as the journal's groups come, and returns the spans it
// exported and the file's lines.
func tapFile(t *testing.T, name string) ([]*tracepb.Span, [][]byte) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "journal", "record", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	// A batch of one span: each span is built in storage a span sent
	// before used.
	e, err := Start(Config{Client: rec, Server: "test", Batch: 1})
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	for i := 0; i < len(lines); i += 3 {
		e.Tap(bytes.Join(lines[i:min(i+3, len(lines))], nil))
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if s := e.Stats(); s.Exported != s.Spans || s.Spans == 0 {
		t.Fatalf("Stats = %+v; want every span exported", s)
	}
	var trimmed [][]byte
	for _, l := range lines {
		if l = bytes.TrimSuffix(l, []byte("\n")); len(l) > 0 {
			trimmed = append(trimmed, l)
		}
	}
	return rec.got, trimmed
}

// nopClient is a collector that takes everything.
type nopClient struct{}

func (nopClient) Start(context.Context) error                                  { return nil }
func (nopClient) Stop(context.Context) error                                   { return nil }
func (nopClient) UploadTraces(context.Context, []*tracepb.ResourceSpans) error { return nil }

// recorder is a collector that keeps what it takes: the wire bytes,
// decoded, as a collector reads them (the spans it is given are reused
// once it returns).
type recorder struct {
	nopClient
	mu  sync.Mutex
	got []*tracepb.Span
}

func (r *recorder) UploadTraces(_ context.Context, rss []*tracepb.ResourceSpans) error {
	for _, rs := range rss {
		b, err := proto.Marshal(rs)
		if err != nil {
			return err
		}
		var got tracepb.ResourceSpans
		if err := proto.Unmarshal(b, &got); err != nil {
			return err
		}
		r.mu.Lock()
		for _, ss := range got.ScopeSpans {
			r.got = append(r.got, ss.Spans...)
		}
		r.mu.Unlock()
	}
	return nil
}

func attrs(s *tracepb.Span) map[string]*commonpb.AnyValue {
	m := map[string]*commonpb.AnyValue{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

func digest(line []byte) string {
	d := sha256.Sum256(line)
	return "sha256:" + hex.EncodeToString(d[:])
}

// callWant is what one call's span must say.
type callWant struct {
	seq       int64 // its first intent's
	name      string
	status    string
	errorType string // "": none
	outcome   int64
	verdict   string
	rounds    int // child round spans
	task      []string
	revision  string
}

func TestSpans(t *testing.T) {
	for _, tc := range []struct {
		file  string
		calls []callWant
	}{
		{"rounds.jsonl", []callWant{
			{seq: 2, name: "tools/call book", status: "ok", outcome: 5, verdict: "pass-through", rounds: 2, revision: "2026-07-28"},
			{seq: 6, name: "tools/call book", status: "other", errorType: "other", outcome: 7, verdict: "pass-through", revision: "2026-07-28"},
			{seq: 8, name: "tools/call render", status: "tool_error", errorType: "tool_error", outcome: 9, verdict: "pass-through",
				task: []string{"input_required", "update", "end"}, revision: "2026-07-28"},
			{seq: 13, name: "tools/call slow", status: "cancelled", errorType: "cancelled", outcome: 16, verdict: "pass-through",
				task: []string{"cancel", "end"}, revision: "2026-07-28"},
			{seq: 19, name: "tools/call slow", status: "cancelled", errorType: "cancelled", outcome: 20, verdict: "pass-through", revision: "2026-07-28"},
			{seq: 21, name: "tools/call render", status: "unfinished", errorType: "unfinished", outcome: 22, verdict: "pass-through",
				task: []string{"end"}, revision: "2026-07-28"},
		}},
		{"decided.jsonl", []callWant{
			{seq: 1, name: "tools/call read_file", status: "ok", outcome: 2, verdict: "allowed"},
			{seq: 3, name: "tools/call read_file", status: "host_denied", errorType: "host_denied", outcome: 4, verdict: "denied"},
			{seq: 5, name: "tools/call read_file", status: "host_denied", errorType: "host_denied", outcome: 6, verdict: "denied"},
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			spans, lines := tapFile(t, tc.file)
			bySeq := map[int64]*tracepb.Span{}
			children := map[string][]*tracepb.Span{}
			for _, s := range spans {
				if len(s.ParentSpanId) > 0 {
					children[string(s.ParentSpanId)] = append(children[string(s.ParentSpanId)], s)
					continue
				}
				bySeq[attrs(s)["aegis.record.seq"].GetIntValue()] = s
			}
			if len(bySeq) != len(tc.calls) {
				t.Fatalf("%d call spans; want %d", len(bySeq), len(tc.calls))
			}
			for _, w := range tc.calls {
				s, ok := bySeq[w.seq]
				if !ok {
					t.Fatalf("no span of the call at seq %d", w.seq)
				}
				a := attrs(s)
				got := callWant{seq: w.seq, name: s.Name, status: a["aegis.status"].GetStringValue(), errorType: a["error.type"].GetStringValue(),
					outcome: a["aegis.outcome.seq"].GetIntValue(), verdict: a["aegis.policy.verdict"].GetStringValue(), revision: a["mcp.protocol.version"].GetStringValue()}
				for _, c := range children[string(s.SpanId)] {
					if ca := attrs(c); ca["aegis.round.n"] != nil {
						got.rounds++
					} else {
						for _, ev := range c.Events {
							got.task = append(got.task, ev.Name)
						}
					}
				}
				if !equalWant(got, w) {
					t.Errorf("span of seq %d = %+v; want %+v", w.seq, got, w)
				}
				// Joined to the evidence: the digests are the lines'.
				if d := a["aegis.record.digest"].GetStringValue(); d != digest(lines[w.seq]) {
					t.Errorf("seq %d: aegis.record.digest = %s; want %s", w.seq, d, digest(lines[w.seq]))
				}
				if d := a["aegis.outcome.digest"].GetStringValue(); d != digest(lines[w.outcome]) {
					t.Errorf("seq %d: aegis.outcome.digest = %s; want %s", w.seq, d, digest(lines[w.outcome]))
				}
				if s.Kind != tracepb.Span_SPAN_KIND_SERVER || a["mcp.method.name"].GetStringValue() != "tools/call" ||
					a["gen_ai.operation.name"].GetStringValue() != "execute_tool" || a["gen_ai.tool.name"].GetStringValue() == "" ||
					a["jsonrpc.request.id"].GetStringValue() == "" || a["aegis.session"].GetStringValue() == "" || a["aegis.log.origin"].GetStringValue() == "" {
					t.Errorf("seq %d: kind %v, attributes %v: want the conventions' and aegis's", w.seq, s.Kind, a)
				}
				if wantErr := w.errorType != ""; (s.Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR) != wantErr {
					t.Errorf("seq %d: status %v; want error %v", w.seq, s.Status, wantErr)
				}
				if s.StartTimeUnixNano >= s.EndTimeUnixNano {
					t.Errorf("seq %d: span from %v to %v", w.seq, s.StartTimeUnixNano, s.EndTimeUnixNano)
				}
			}
		})
	}
}

func equalWant(a, b callWant) bool {
	if len(a.task) != len(b.task) {
		return false
	}
	for i := range a.task {
		if a.task[i] != b.task[i] {
			return false
		}
	}
	a.task, b.task = nil, nil
	return a.name == b.name && a.status == b.status && a.errorType == b.errorType && a.outcome == b.outcome &&
		a.verdict == b.verdict && a.rounds == b.rounds && a.revision == b.revision
}

// stuck is a collector that takes nothing until released.
type stuck struct {
	nopClient
	release chan struct{}
}

func (s *stuck) UploadTraces(ctx context.Context, _ []*tracepb.ResourceSpans) error {
	select {
	case <-s.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestStuckCollector: a collector that takes nothing never holds Tap,
// which drops what does not fit and counts it, nor Close beyond its
// timeout, which says what was lost.
func TestStuckCollector(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "journal", "record", "testdata", "decided.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	st := &stuck{release: make(chan struct{})}
	var said []string
	var mu sync.Mutex
	e, err := Start(Config{Client: st, QueueBytes: 3 * len(b), QueueSpans: 2, Batch: 1, CloseTimeout: 50 * time.Millisecond,
		Logf: func(f string, args ...any) { mu.Lock(); said = append(said, f); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	// The same session's lines over and over: its calls are built
	// (a reused session id is the model's anomaly, not the exporter's).
	for range 200 {
		e.Tap(b)
	}
	if err := e.Close(); err != nil && err != context.DeadlineExceeded {
		t.Logf("Close: %v", err)
	}
	s := e.Stats()
	if s.Exported != 0 || s.RecordsDropped == 0 || s.Spans == 0 {
		t.Fatalf("Stats = %+v; want records dropped, spans built, none exported", s)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(said) == 0 {
		t.Fatal("Close said nothing of the spans lost")
	}
}

// TestDisabled: with no endpoint, Start makes nothing.
func TestDisabled(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want bool
	}{
		{"none", nil, false},
		{"endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true},
		{"traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, true},
		{"sdk disabled", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_SDK_DISABLED": "true"}, false},
		{"exporter none", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_TRACES_EXPORTER": "none"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			getenv := func(k string) string { return tc.env[k] }
			if got := Enabled(getenv); got != tc.want {
				t.Fatalf("Enabled = %v; want %v", got, tc.want)
			}
			e, err := Start(Config{Getenv: getenv})
			if err != nil {
				t.Fatal(err)
			}
			if (e != nil) != tc.want || (e.TapLinesFunc() != nil) != tc.want {
				t.Fatalf("Start = %v; want one: %v", e, tc.want)
			}
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestProtocol: each signal's protocol is its own variable's, else the
// general one's, else http/protobuf; grpc and http/protobuf start, any
// other fails Start with ErrProtocol.
func TestProtocol(t *testing.T) {
	for _, tc := range []struct {
		name            string
		env             map[string]string
		traces, metrics string
		err             bool
	}{
		{"default", nil, ProtocolHTTP, ProtocolHTTP, false},
		{"grpc", map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, ProtocolGRPC, ProtocolGRPC, false},
		{"http", map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}, ProtocolHTTP, ProtocolHTTP, false},
		{"traces grpc", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"}, ProtocolGRPC, ProtocolHTTP, false},
		{"metrics grpc", map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "grpc"}, ProtocolHTTP, ProtocolGRPC, false},
		{"traces over general", map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}, ProtocolHTTP, ProtocolGRPC, false},
		{"json", map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, "", "", true},
		{"metrics json", map[string]string{"OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "http/json"}, ProtocolHTTP, "", true},
		{"case variant", map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "GRPC"}, "", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			getenv := func(k string) string { return tc.env[k] }
			tr, terr := protocol(getenv, "TRACES")
			me, merr := protocol(getenv, "METRICS")
			if tr != tc.traces || me != tc.metrics || (terr != nil || merr != nil) != tc.err {
				t.Fatalf("protocols %q (%v), %q (%v); want %q, %q, error %v", tr, terr, me, merr, tc.traces, tc.metrics, tc.err)
			}
			env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}
			for k, v := range tc.env {
				env[k] = v
			}
			e, err := Start(Config{Getenv: func(k string) string { return env[k] }, CloseTimeout: time.Millisecond})
			if tc.err {
				if !errors.Is(err, ErrProtocol) || e != nil {
					t.Fatalf("Start = %v, %v; want ErrProtocol", e, err)
				}
				return
			}
			if err != nil || e == nil {
				t.Fatalf("Start = %v, %v", e, err)
			}
			e.Close()
		})
	}
}

// TestChunks: the lines of one group larger than a queue chunk, and of
// many groups filling several chunks, are read whole and in order:
// the spans are those of the same lines tapped a few at a time.
func TestChunks(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "journal", "record", "testdata", "decided.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat(b, 2*chunkSize/len(b)+1)
	spans := func(groups [][]byte) uint64 {
		e, err := Start(Config{Client: nopClient{}})
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range groups {
			e.Tap(g)
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		s := e.Stats()
		if s.RecordsDropped != 0 || s.Exported != s.Spans {
			t.Fatalf("Stats = %+v", s)
		}
		return s.Spans
	}
	files := func(big []byte, n int) (out [][]byte) {
		for i := 0; i < len(big); i += n {
			out = append(out, big[i:i+n])
		}
		return out
	}
	want := spans(bytes.SplitAfter(big, []byte("\n")))
	if want == 0 {
		t.Fatal("no spans")
	}
	for name, groups := range map[string][][]byte{
		"one group":    {big},
		"two groups":   {big[:len(b)], big[len(b):]},
		"file by file": files(big, len(b)),
	} {
		if got := spans(groups); got != want {
			t.Errorf("%s: %d spans; want %d", name, got, want)
		}
	}
}
