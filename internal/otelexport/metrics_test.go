package otelexport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/aegisrelay/aegis/internal/gate"
	"github.com/aegisrelay/aegis/internal/pin"
	"github.com/aegisrelay/aegis/internal/relay"
	"github.com/aegisrelay/aegis/journal/calls"
	"github.com/aegisrelay/aegis/journal/record"
)

// tapMetrics feeds a golden log to an Exporter, group lines a group,
// and returns what its metrics read after Close.
func tapMetrics(t *testing.T, name string, group int) (metricdata.ResourceMetrics, int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "journal", "record", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	mem := &memMetrics{}
	// A periodic reader that never ticks within the test: Close's
	// shutdown makes the one reading, as it makes the last one of a run.
	reader := sdkmetric.NewPeriodicReader(mem, sdkmetric.WithInterval(time.Hour))
	e, err := Start(Config{Client: nopClient{}, MetricReader: reader})
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	if len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	groups := 0
	for i := 0; i < len(lines); i += group {
		// As the journal does: the group's sync time, then the group.
		e.TapSync(time.Duration(groups+1) * time.Millisecond)
		e.Tap(bytes.Join(lines[i:min(i+group, len(lines))], nil))
		groups++
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if len(mem.got) != 1 {
		t.Fatalf("%d exports; want 1, at Close", len(mem.got))
	}
	rm := mem.got[0]
	return rm, groups
}

// memMetrics keeps what it is given to export.
type memMetrics struct {
	mu  sync.Mutex
	got []metricdata.ResourceMetrics
}

func (m *memMetrics) Temporality(k sdkmetric.InstrumentKind) metricdata.Temporality {
	return sdkmetric.DefaultTemporalitySelector(k)
}

func (m *memMetrics) Aggregation(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
	return sdkmetric.DefaultAggregationSelector(k)
}

func (m *memMetrics) Export(_ context.Context, rm *metricdata.ResourceMetrics) error {
	m.mu.Lock()
	m.got = append(m.got, *rm)
	m.mu.Unlock()
	return nil
}

func (m *memMetrics) ForceFlush(context.Context) error { return nil }
func (m *memMetrics) Shutdown(context.Context) error   { return nil }

func find(rm metricdata.ResourceMetrics, name string) metricdata.Aggregation {
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m.Data
			}
		}
	}
	return nil
}

func sumsBy(t *testing.T, rm metricdata.ResourceMetrics, name string, key attribute.Key) map[string]int64 {
	t.Helper()
	got := map[string]int64{}
	a := find(rm, name)
	if a == nil {
		return got
	}
	s, ok := a.(metricdata.Sum[int64])
	if !ok {
		t.Fatalf("%s is a %T; want a Sum[int64]", name, a)
	}
	for _, dp := range s.DataPoints {
		v, _ := dp.Attributes.Value(key)
		got[v.AsString()] += dp.Value
	}
	return got
}

// TestMetrics: the call duration histogram counts every done call once,
// under the MCP conventions' attributes; calls are counted by status,
// refusals by the code the client was answered with; the commit group
// histogram counts every tapped group and its lines.
func TestMetrics(t *testing.T) {
	for _, tc := range []struct {
		file     string
		group    int
		calls    map[string]int64 // by aegis.status
		refusals map[string]int64 // by aegis.refusal.code
		byTool   map[string]uint64
	}{
		{"decided.jsonl", 2, map[string]int64{"ok": 1, "host_denied": 2}, map[string]int64{"POLICY_DENIED": 2},
			map[string]uint64{"read_file": 3}},
		{"rounds.jsonl", 3, map[string]int64{"ok": 1, "other": 1, "tool_error": 1, "cancelled": 2, "unfinished": 1}, map[string]int64{},
			map[string]uint64{"book": 2, "render": 2, "slow": 2}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			rm, groups := tapMetrics(t, tc.file, tc.group)
			h, ok := find(rm, MetricDuration).(metricdata.Histogram[float64])
			if !ok {
				t.Fatalf("%s missing or not a float histogram", MetricDuration)
			}
			byTool := map[string]uint64{}
			for _, dp := range h.DataPoints {
				if v, _ := dp.Attributes.Value("mcp.method.name"); v.AsString() != Method {
					t.Errorf("duration point %v: mcp.method.name %q", dp.Attributes, v.AsString())
				}
				tool, _ := dp.Attributes.Value("gen_ai.tool.name")
				byTool[tool.AsString()] += dp.Count
			}
			if !mapsEqual(byTool, tc.byTool) {
				t.Errorf("duration counts by tool = %v; want %v", byTool, tc.byTool)
			}
			if got := sumsBy(t, rm, MetricCalls, "aegis.status"); !mapsEqual(got, tc.calls) {
				t.Errorf("calls by status = %v; want %v", got, tc.calls)
			}
			if got := sumsBy(t, rm, MetricRefusals, "aegis.refusal.code"); !mapsEqual(got, tc.refusals) {
				t.Errorf("refusals by code = %v; want %v", got, tc.refusals)
			}
			g, ok := find(rm, MetricGroup).(metricdata.Histogram[int64])
			if !ok || len(g.DataPoints) != 1 {
				t.Fatalf("%s: %+v", MetricGroup, g)
			}
			b, _ := os.ReadFile(filepath.Join("..", "..", "journal", "record", "testdata", tc.file))
			if dp := g.DataPoints[0]; dp.Count != uint64(groups) || dp.Sum != int64(bytes.Count(b, []byte("\n"))) {
				t.Errorf("group histogram: count %d sum %d; want %d groups of %d lines", dp.Count, dp.Sum, groups, bytes.Count(b, []byte("\n")))
			}
			// The fsync histogram: one point per sync, 1ms, 2ms, ...
			f, ok := find(rm, MetricFsync).(metricdata.Histogram[float64])
			if !ok || len(f.DataPoints) != 1 {
				t.Fatalf("%s: %+v", MetricFsync, f)
			}
			if dp, want := f.DataPoints[0], float64(groups*(groups+1)/2)/1000; dp.Count != uint64(groups) || dp.Sum < want-1e-9 || dp.Sum > want+1e-9 {
				t.Errorf("fsync histogram: count %d sum %v; want %d syncs summing to %vs", dp.Count, dp.Sum, groups, want)
			}
		})
	}
}

func mapsEqual[V comparable](a, b map[string]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestRefusalCode: every code a refusal frame carries is read back from
// what the log records of the call, with the reasons spelled as the
// relay and pin write them.
func TestRefusalCode(t *testing.T) {
	if reasonSibling != relay.ReasonSibling || reasonApprovalDenied != relay.ReasonApprovalDenied ||
		reasonApprovalExpired != relay.ReasonApprovalExpired || reasonToolChanged != pin.ReasonChanged {
		t.Fatal("a refusal reason is spelled otherwise than the relay or pin writes it")
	}
	for _, tc := range []struct {
		verdict, policyReason, status, reason, want string
	}{
		{record.VerdictDenied, "", record.StatusHostDenied, relay.ReasonNotExecuted, gate.CodePolicyDenied},
		{record.VerdictDenied, pin.ReasonChanged, record.StatusHostDenied, relay.ReasonNotExecuted, gate.CodeToolChanged},
		{record.VerdictRateLimited, "", record.StatusHostDenied, relay.ReasonNotExecuted, gate.CodeRateLimited},
		{record.VerdictPendingApproval, "", record.StatusHostDenied, relay.ReasonNotExecuted, gate.CodePendingApproval},
		{record.VerdictPendingApproval, "", record.StatusHostDenied, relay.ReasonApprovalDenied, gate.CodeApprovalDenied},
		{record.VerdictPendingApproval, "", record.StatusHostDenied, relay.ReasonApprovalExpired, gate.CodeApprovalTimeout},
		{record.VerdictPendingApproval, "", record.StatusHostDenied, calls.ReasonApprovalEnded, ""},
		{record.VerdictAllowed, "", record.StatusHostDenied, relay.ReasonSibling, gate.CodeHostDenied},
		{record.VerdictAllowed, "", record.StatusOK, "", ""},
		{record.VerdictPendingApproval, "", record.StatusOK, "", ""}, // approved, then run
		{record.VerdictAllowed, "", record.StatusTimeout, "", ""},
	} {
		d := &callData{verdict: tc.verdict, policyReason: tc.policyReason}
		c := &calls.Call[*callData]{Status: tc.status, Reason: tc.reason}
		if got := refusalCode(d, c); got != tc.want {
			t.Errorf("refusalCode(%+v) = %q; want %q", tc, got, tc.want)
		}
	}
}

// failingMetrics is a metric exporter the collector never answers.
type failingMetrics struct{ memMetrics }

func (*failingMetrics) Export(context.Context, *metricdata.ResourceMetrics) error {
	return errors.New("connection refused")
}

// TestMetricsNotTaken: a reading the collector does not take is counted
// and said, the first of a run at once and the count at Close, as for
// spans; so are measurements dropped with too many waiting.
func TestMetricsNotTaken(t *testing.T) {
	var mu sync.Mutex
	var said []string
	logf := func(f string, a ...any) {
		mu.Lock()
		said = append(said, fmt.Sprintf(f, a...))
		mu.Unlock()
	}
	m, err := newMeters(Config{Logf: logf, Getenv: func(string) string { return "" }}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.mp.Shutdown(context.Background())
	// newMeters made the OTLP exporter, wrapped: swap in one that fails.
	m.exp.Exporter = &failingMetrics{}
	e, err := Start(Config{Client: nopClient{}, Logf: logf,
		MetricReader: sdkmetric.NewPeriodicReader(m.exp, sdkmetric.WithInterval(time.Hour))})
	if err != nil {
		t.Fatal(err)
	}
	e.m.exp = m.exp
	for range maxSizes + 3 {
		e.TapSync(time.Millisecond)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	s := e.Stats()
	if s.MetricExports != 1 || s.MetricFailed != 1 || s.PointsDropped != 3 {
		t.Fatalf("Stats = %+v; want 1 reading, not taken, and 3 measurements dropped", s)
	}
	all := strings.Join(said, "\n")
	for _, want := range []string{"did not take a metric reading: connection refused", "1 of 1 metric readings not taken", "3 measurements dropped"} {
		if !strings.Contains(all, want) {
			t.Errorf("said %q; want %q", all, want)
		}
	}
}

// TestRelayedBytes: each reading of the metrics carries, as
// aegis.relay.bytes by aegis.relay.direction, the sums Config.Relayed
// returns at that reading; without Config.Relayed there is no such metric.
func TestRelayedBytes(t *testing.T) {
	var up, down atomic.Uint64
	reader := sdkmetric.NewManualReader()
	e, err := Start(Config{Client: nopClient{}, MetricReader: reader,
		Relayed: func() (uint64, uint64) { return up.Load(), down.Load() }})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, step := range []struct{ up, down uint64 }{{0, 0}, {123, 4567}, {1 << 40, 4568}} {
		up.Store(step.up)
		down.Store(step.down)
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(context.Background(), &rm); err != nil {
			t.Fatal(err)
		}
		got := sumsBy(t, rm, MetricBytes, "aegis.relay.direction")
		want := map[string]int64{ClientToServer: int64(step.up), ServerToClient: int64(step.down)}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("aegis.relay.bytes = %v; want %v", got, want)
		}
		if s, ok := find(rm, MetricBytes).(metricdata.Sum[int64]); !ok || !s.IsMonotonic || s.Temporality != metricdata.CumulativeTemporality {
			t.Errorf("aegis.relay.bytes is %+v; want a cumulative monotonic sum", find(rm, MetricBytes))
		}
	}

	reader = sdkmetric.NewManualReader()
	e2, err := Start(Config{Client: nopClient{}, MetricReader: reader})
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Close()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	if a := find(rm, MetricBytes); a != nil {
		t.Errorf("without Config.Relayed, aegis.relay.bytes = %+v; want none", a)
	}
}
