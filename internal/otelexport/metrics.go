package otelexport

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/aegisrelay/aegis/internal/gate"
	"github.com/aegisrelay/aegis/journal/calls"
	"github.com/aegisrelay/aegis/journal/record"
)

// MaxSeries bounds the attribute sets one instrument keeps: tool names
// come from peers, and past the bound the SDK folds new sets into one
// series marked otel.metric.overflow.
const MaxSeries = 2000

// The metrics' names.
const (
	MetricDuration = "mcp.server.operation.duration" // histogram, s
	MetricCalls    = "aegis.calls"                   // counter, by aegis.status
	MetricRefusals = "aegis.refusals"                // counter, by aegis.refusal.code
	MetricGroup    = "aegis.journal.commit.lines"    // histogram, lines per written group
	MetricFsync    = "aegis.journal.fsync.duration"  // histogram, s, per group synced
	MetricBytes    = "aegis.relay.bytes"             // observable counter, By, by aegis.relay.direction
)

// The values of aegis.relay.direction: which peer sent the bytes.
const (
	ClientToServer = "client_to_server"
	ServerToClient = "server_to_client"
)

// Reasons the log gives to refusals that are not the intent's verdict;
// spelled as internal/relay and internal/pin write them.
const (
	reasonSibling         = "not executed: sibling call in this batch was refused"
	reasonApprovalDenied  = "not executed: approval denied"
	reasonApprovalExpired = "not executed: approval expired"
	reasonToolChanged     = "tool definition differs from its pin (on_tool_change: block): aegis pin accept"
)

// meters are an Exporter's instruments, recorded by its reading
// goroutine alone.
type meters struct {
	mp       *sdkmetric.MeterProvider
	duration metric.Float64Histogram
	calls    metric.Int64Counter
	refusals metric.Int64Counter
	group    metric.Int64Histogram
	fsync    metric.Float64Histogram
	exp      *countingExporter // the OTLP exporter; nil with Config.MetricReader
	// sets caches the attribute sets the calls are recorded under, by
	// their values, at most MaxSeries of them: building a set sorts and
	// allocates, and a log's calls repeat a few tools and statuses.
	sets map[setKey]setOpts
}

// setOpts are one attribute set's option, as the slices Record and Add
// take: passed whole (opts...), they are not copied into a new slice
// at each measurement.
type setOpts struct {
	rec []metric.RecordOption
	add []metric.AddOption
}

// setKey names one attribute set of meters.sets: which instrument's
// (kind) and its values.
type setKey struct {
	kind     byte // 'd' duration, 'c' calls, 'r' refusals
	tool, et string
}

// opt returns the cached options of k's attribute set, making them
// with attrs the first time.
func (m *meters) opt(k setKey, attrs func() []attribute.KeyValue) setOpts {
	if o, ok := m.sets[k]; ok {
		return o
	}
	w := metric.WithAttributeSet(attribute.NewSet(attrs()...))
	o := setOpts{rec: []metric.RecordOption{w}, add: []metric.AddOption{w}}
	if len(m.sets) < 3*MaxSeries {
		m.sets[k] = o
	}
	return o
}

// metricsEnabled reports whether the environment, which asks for spans,
// asks for metrics too: an endpoint for both, or for metrics, is set,
// and OTEL_METRICS_EXPORTER is not none.
func metricsEnabled(getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_METRICS_EXPORTER")), "none") {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") != ""
}

// newMeters builds the instruments over reader, or, when reader is nil,
// over the OTLP metric exporter the environment configures, read on the
// SDK's interval (OTEL_METRIC_EXPORT_INTERVAL) and once more at Close.
func newMeters(cfg Config, res *resource.Resource) (*meters, error) {
	reader := cfg.MetricReader
	var cexp *countingExporter
	if reader == nil {
		proto, err := protocol(cfg.Getenv, "METRICS")
		if err != nil {
			return nil, err
		}
		var exp sdkmetric.Exporter
		if proto == ProtocolGRPC {
			exp, err = otlpmetricgrpc.New(context.Background())
		} else {
			exp, err = otlpmetrichttp.New(context.Background())
		}
		if err != nil {
			return nil, fmt.Errorf("otelexport: %w", err)
		}
		cexp = &countingExporter{Exporter: exp, logf: cfg.Logf}
		reader = sdkmetric.NewPeriodicReader(cexp)
	}
	m := &meters{exp: cexp, sets: map[setKey]setOpts{}, mp: sdkmetric.NewMeterProvider(sdkmetric.WithResource(res), sdkmetric.WithReader(reader),
		sdkmetric.WithCardinalityLimit(MaxSeries))}
	meter := m.mp.Meter(scopeName)
	var err error
	if m.duration, err = meter.Float64Histogram(MetricDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of a tools/call, from its first intent to its final record"),
		// The MCP semantic conventions' advised buckets.
		metric.WithExplicitBucketBoundaries(0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300)); err != nil {
		return nil, fmt.Errorf("otelexport: %w", err)
	}
	if m.calls, err = meter.Int64Counter(MetricCalls, metric.WithUnit("{call}"),
		metric.WithDescription("Calls the log records done, by aegis.status")); err != nil {
		return nil, fmt.Errorf("otelexport: %w", err)
	}
	if m.refusals, err = meter.Int64Counter(MetricRefusals, metric.WithUnit("{call}"),
		metric.WithDescription("Calls aegis refused, by the refusal frame's code")); err != nil {
		return nil, fmt.Errorf("otelexport: %w", err)
	}
	if m.group, err = meter.Int64Histogram(MetricGroup, metric.WithUnit("{line}"),
		metric.WithDescription("Lines per group the journal wrote (and synced) at once"),
		metric.WithExplicitBucketBoundaries(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)); err != nil {
		return nil, fmt.Errorf("otelexport: %w", err)
	}
	if m.fsync, err = meter.Float64Histogram(MetricFsync, metric.WithUnit("s"),
		metric.WithDescription("Time each fdatasync of a group the journal wrote took"),
		metric.WithExplicitBucketBoundaries(0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1)); err != nil {
		return nil, fmt.Errorf("otelexport: %w", err)
	}
	if cfg.Relayed != nil {
		if err := observeRelayed(meter, cfg.Relayed); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// observeRelayed registers aegis.relay.bytes, whose reading calls relayed
// for the sums the relays keep: nothing is recorded between readings.
func observeRelayed(meter metric.Meter, relayed func() (clientToServer, serverToClient uint64)) error {
	up := metric.WithAttributeSet(attribute.NewSet(attribute.String("aegis.relay.direction", ClientToServer)))
	down := metric.WithAttributeSet(attribute.NewSet(attribute.String("aegis.relay.direction", ServerToClient)))
	_, err := meter.Int64ObservableCounter(MetricBytes, metric.WithUnit("By"),
		metric.WithDescription("Bytes aegis read from clients and from servers, by aegis.relay.direction"),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			c, s := relayed()
			o.Observe(int64(c), up) // 2^63 bytes are not relayed in a run
			o.Observe(int64(s), down)
			return nil
		}))
	if err != nil {
		return fmt.Errorf("otelexport: %w", err)
	}
	return nil
}

// call records one done call.
func (m *meters) call(d *callData, c *calls.Call[*callData], dur time.Duration) {
	if m == nil {
		return
	}
	ctx := context.Background()
	et := errorType(c.Status)
	m.duration.Record(ctx, dur.Seconds(), m.opt(setKey{'d', d.tool, et}, func() []attribute.KeyValue {
		attrs := []attribute.KeyValue{attribute.String("mcp.method.name", Method)}
		if d.tool != "" {
			attrs = append(attrs, attribute.String("gen_ai.tool.name", d.tool))
		}
		if et != "" {
			attrs = append(attrs, attribute.String("error.type", et))
		}
		return attrs
	}).rec...)
	m.calls.Add(ctx, 1, m.opt(setKey{'c', "", c.Status}, func() []attribute.KeyValue {
		return []attribute.KeyValue{attribute.String("aegis.status", c.Status)}
	}).add...)
	if code := refusalCode(d, c); code != "" {
		m.refusals.Add(ctx, 1, m.opt(setKey{'r', "", code}, func() []attribute.KeyValue {
			return []attribute.KeyValue{attribute.String("aegis.refusal.code", code)}
		}).add...)
	}
}

// groups records the sizes of written groups and the times of their
// syncs.
func (m *meters) groups(sizes []int, syncs []time.Duration) {
	if m == nil {
		return
	}
	for _, n := range sizes {
		m.group.Record(context.Background(), int64(n))
	}
	for _, d := range syncs {
		m.fsync.Record(context.Background(), d.Seconds())
	}
}

// countingExporter is the OTLP metric exporter, counting the readings it
// exports and those the collector does not take, and saying the first
// of a run of failures (Close says the count).
type countingExporter struct {
	sdkmetric.Exporter
	logf func(string, ...any)

	mu              sync.Mutex
	exports, failed uint64
	failing         bool
}

func (c *countingExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	err := c.Exporter.Export(ctx, rm)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.exports++
	if err == nil {
		c.failing = false
		return nil
	}
	c.failed++
	if !c.failing {
		c.failing = true
		c.logf("telemetry: the collector did not take a metric reading: %v; readings are counted while it fails", err)
	}
	return err
}

func (c *countingExporter) counts() (exports, failed uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.exports, c.failed
}

// refusalCode is the code of the refusal frame aegis answered a call
// with, as its records say it, or "" for a call aegis did not refuse.
func refusalCode(d *callData, c *calls.Call[*callData]) string {
	if c.Status != record.StatusHostDenied {
		return ""
	}
	switch c.Reason {
	case reasonSibling:
		return gate.CodeHostDenied
	case reasonApprovalDenied:
		return gate.CodeApprovalDenied
	case reasonApprovalExpired:
		return gate.CodeApprovalTimeout
	case calls.ReasonApprovalEnded:
		return "" // its session ended: no one was answered
	}
	switch d.verdict {
	case record.VerdictRateLimited:
		return gate.CodeRateLimited
	case record.VerdictPendingApproval:
		return gate.CodePendingApproval
	case record.VerdictDenied:
		if d.policyReason == reasonToolChanged {
			return gate.CodeToolChanged
		}
		return gate.CodePolicyDenied
	}
	return ""
}
