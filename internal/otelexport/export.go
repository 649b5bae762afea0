package otelexport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
)

// Errors Start returns.
var (
	// ErrProtocol: OTEL_EXPORTER_OTLP_PROTOCOL (or its traces or metrics
	// variant) names a protocol this build does not export with (it
	// exports with grpc and http/protobuf).
	ErrProtocol = errors.New("otelexport: unsupported OTLP protocol")
	// ErrBatchSetting: an OTEL_BSP_* variable is not a whole number in
	// its range.
	ErrBatchSetting = errors.New("otelexport: bad batch setting")
)

// Defaults of Config.
const (
	DefaultQueueBytes = 4 << 20
	DefaultQueueSpans = 4096
	DefaultBatch      = 512
	// DefaultDelay is the OpenTelemetry specification's default batch
	// delay (OTEL_BSP_SCHEDULE_DELAY): the time a reading waits for more
	// lines. What a reading and its exports cost once is shared by the
	// calls of the delay: at a few calls a second, a shorter delay
	// costs each call about an export request of its own.
	DefaultDelay         = 5 * time.Second
	DefaultExportTimeout = 10 * time.Second
	DefaultCloseTimeout  = 3 * time.Second
)

// Config configures Start. The zero value, with the environment asking
// for export, exports with the defaults.
type Config struct {
	// Getenv reads the environment. Default os.Getenv.
	Getenv func(string) string
	// Server is the wrapped server's name (wrap's --name), a resource
	// attribute (aegis.server).
	Server string
	// Origin is the log's checkpoint origin, when known beforehand; a
	// run that writes seq 0 learns it from that line.
	Origin string
	// QueueBytes bounds the lines waiting to be read (default
	// DefaultQueueBytes), QueueSpans the spans waiting to be exported
	// (default DefaultQueueSpans); Batch is the most spans one export
	// sends (default DefaultBatch). With QueueSpans or Batch zero, the
	// environment's OTEL_BSP_MAX_QUEUE_SIZE or
	// OTEL_BSP_MAX_EXPORT_BATCH_SIZE sets it, if set; a batch larger
	// than the queue is the queue.
	QueueBytes, QueueSpans, Batch int
	// Delay is how long a reading waits, after the first group into an
	// empty queue, for more (default OTEL_BSP_SCHEDULE_DELAY, else
	// DefaultDelay); ExportTimeout bounds one export (default
	// OTEL_BSP_EXPORT_TIMEOUT, else DefaultExportTimeout).
	Delay, ExportTimeout time.Duration
	// CloseTimeout bounds what Close waits for the collector (default
	// DefaultCloseTimeout).
	CloseTimeout time.Duration
	// Client, when set, sends the spans instead of the OTLP client the
	// environment configures (tests). It is started by Start and
	// stopped by Close; the spans it is given are reused once
	// UploadTraces returns.
	Client otlptrace.Client
	// MetricReader, when set, reads the metrics instead of the OTLP
	// metric exporter the environment configures (tests).
	MetricReader sdkmetric.Reader
	// Relayed, when set, returns the bytes relayed so far from clients to
	// servers and back (relay.Relayed), read at each metric reading as
	// aegis.relay.bytes.
	Relayed func() (clientToServer, serverToClient uint64)
	// Logf says what is not exported. Default: discard.
	Logf func(format string, args ...any)
}

// Enabled reports whether the environment getenv reads asks for spans
// to be exported: an OTLP endpoint is set, and neither the SDK nor the
// traces exporter is turned off.
func Enabled(getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")), "none") {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// The OTLP protocols Start exports with.
const (
	ProtocolGRPC = "grpc"
	ProtocolHTTP = "http/protobuf" // the default
)

// protocol is the OTLP protocol of signal (TRACES or METRICS): its own
// OTEL_EXPORTER_OTLP_{signal}_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL,
// else http/protobuf, the specification's default.
func protocol(getenv func(string) string, signal string) (string, error) {
	p := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_" + signal + "_PROTOCOL"))
	if p == "" {
		p = strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_PROTOCOL"))
	}
	switch p {
	case "", ProtocolHTTP:
		return ProtocolHTTP, nil
	case ProtocolGRPC:
		return ProtocolGRPC, nil
	}
	return "", fmt.Errorf("%w %q: this build exports with %s or %s", ErrProtocol, p, ProtocolGRPC, ProtocolHTTP)
}

// maxSizes bounds the group sizes waiting for the metrics; a group
// past it is not counted in the commit group histogram.
const maxSizes = 4096

// Exporter exports the calls of the lines Tap is given. A nil *Exporter
// exports nothing.
type Exporter struct {
	cfg  Config
	proc *processor
	b    *builder
	m    *meters // nil: metrics off

	mu sync.Mutex
	// chunks hold the lines waiting to be read, queued bytes of them,
	// whole groups in order; free holds chunks read, to fill again.
	chunks  [][]byte
	queued  int
	free    [][]byte
	dropped uint64          // records dropped with the line queue full
	digests [][32]byte      // the SHA-256 of each queued line, in order (TapLines; none with Tap)
	sizes   []int           // lines per tapped group, for the metrics; at most maxSizes
	syncs   []time.Duration // fdatasync times (TapSync), for the metrics; at most maxSizes
	// pointsDropped counts group sizes and sync times not recorded, with
	// maxSizes of them waiting.
	pointsDropped uint64
	// synced is the last TapSync's time, not yet queued with its group
	// (hasSynced): the journal's writer alone reads and writes them,
	// and Tap queues it under the lock it takes for the group.
	synced    time.Duration
	hasSynced bool
	closed    bool
	wake      chan struct{} // the first group into an empty queue, and Close
	full      chan struct{} // the queue past half of QueueBytes, and Close
	done      chan struct{}
}

// batchSettings fills cfg's span queue, batch, delay and export
// timeout: each as cfg sets it, else as the OTEL_BSP_* variable of the
// SDK's batch span processor says (whole numbers; times in ms), else
// its default.
func batchSettings(cfg *Config) error {
	// env reads the variable name: a whole number from min to 2^31-1,
	// or def if it is unset.
	env := func(name string, min, def int) (int, error) {
		v := strings.TrimSpace(cfg.Getenv(name))
		if v == "" {
			return def, nil
		}
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < int64(min) {
			return 0, fmt.Errorf("%w: %s=%q: want a whole number from %d to %d", ErrBatchSetting, name, v, min, math.MaxInt32)
		}
		return int(n), nil
	}
	var err error
	if cfg.QueueSpans <= 0 {
		if cfg.QueueSpans, err = env("OTEL_BSP_MAX_QUEUE_SIZE", 1, DefaultQueueSpans); err != nil {
			return err
		}
	}
	if cfg.Batch <= 0 {
		if cfg.Batch, err = env("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 1, DefaultBatch); err != nil {
			return err
		}
	}
	cfg.Batch = min(cfg.Batch, cfg.QueueSpans)
	if cfg.Delay <= 0 {
		// Zero, from the environment, reads at once.
		n, err := env("OTEL_BSP_SCHEDULE_DELAY", 0, int(DefaultDelay.Milliseconds()))
		if err != nil {
			return err
		}
		cfg.Delay = time.Duration(n) * time.Millisecond
	}
	if cfg.ExportTimeout <= 0 {
		n, err := env("OTEL_BSP_EXPORT_TIMEOUT", 1, int(DefaultExportTimeout.Milliseconds()))
		if err != nil {
			return err
		}
		cfg.ExportTimeout = time.Duration(n) * time.Millisecond
	}
	return nil
}

// Start returns the Exporter the environment asks for, running, or nil
// when it asks for none (Enabled).
func Start(cfg Config) (*Exporter, error) {
	if cfg.Getenv == nil {
		cfg.Getenv = os.Getenv
	}
	if cfg.Client == nil && !Enabled(cfg.Getenv) {
		return nil, nil
	}
	if cfg.QueueBytes <= 0 {
		cfg.QueueBytes = DefaultQueueBytes
	}
	if err := batchSettings(&cfg); err != nil {
		return nil, err
	}
	if cfg.CloseTimeout <= 0 {
		cfg.CloseTimeout = DefaultCloseTimeout
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	client := cfg.Client
	if client == nil {
		proto, err := protocol(cfg.Getenv, "TRACES")
		if err != nil {
			return nil, err
		}
		// The OTLP exporters' clients read their endpoint, headers,
		// timeout, compression and TLS settings from the
		// OTEL_EXPORTER_OTLP_* variables, and retry as the exporters
		// do; they dial nothing until the first export.
		if proto == ProtocolGRPC {
			client = otlptracegrpc.NewClient()
		} else {
			client = otlptracehttp.NewClient()
		}
	}
	if err := client.Start(context.Background()); err != nil {
		return nil, fmt.Errorf("otelexport: %w", err)
	}
	res, err := resource.New(context.Background(),
		resource.WithAttributes(attribute.String("service.name", "aegis")),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(),
		resource.WithAttributes(attribute.String("aegis.server", cfg.Server)))
	if err != nil && res == nil {
		client.Stop(context.Background())
		return nil, fmt.Errorf("otelexport: %w", err)
	}
	e := &Exporter{cfg: cfg, wake: make(chan struct{}, 1), full: make(chan struct{}, 1), done: make(chan struct{})}
	if cfg.MetricReader != nil || (cfg.Client == nil && metricsEnabled(cfg.Getenv)) {
		if e.m, err = newMeters(cfg, res); err != nil {
			return nil, err
		}
	}
	e.proc = newProcessor(client, resourceProto(res), res.SchemaURL(), cfg.QueueSpans, cfg.Batch, cfg.ExportTimeout, cfg.Logf)
	e.b = newBuilder(e.proc, cfg.Origin, e.m)
	go e.run()
	return e, nil
}

// TapLinesFunc returns e.TapLines, or nil for a nil e: what
// journal.Options.TapLines takes.
func (e *Exporter) TapLinesFunc() func([]byte, [][32]byte) {
	if e == nil {
		return nil
	}
	return e.TapLines
}

// Tap queues a group of whole lines the journal wrote: a copy, or, if
// the queue cannot take it, nothing (its records counted as dropped). It
// never blocks on anything but the queue's lock, and wakes the reading
// goroutine only for the first group into an empty queue and when the
// queue passes half its bound. The reading goroutine computes each
// line's SHA-256 (aegis.record.digest).
func (e *Exporter) Tap(lines []byte) { e.tap(lines, nil) }

// TapLines is Tap given the SHA-256 of each line but an empty one, in
// order, as the journal computes them for its chain
// (journal.Options.TapLines): they are queued with the lines, and the
// reading goroutine names the lines by them instead of hashing the
// lines again. An Exporter is given its groups by one of Tap and
// TapLines, never both.
func (e *Exporter) TapLines(lines []byte, digests [][32]byte) { e.tap(lines, digests) }

// tap is Tap given the lines' digests, if any.
func (e *Exporter) tap(lines []byte, digests [][32]byte) {
	e.mu.Lock()
	e.queueSync()
	if e.closed || e.queued+len(lines) > e.cfg.QueueBytes {
		e.dropped += uint64(bytes.Count(lines, []byte{'\n'}))
		e.mu.Unlock()
		return
	}
	if e.m != nil {
		if len(e.sizes) < maxSizes {
			e.sizes = append(e.sizes, bytes.Count(lines, []byte{'\n'}))
		} else {
			e.pointsDropped++
		}
	}
	was := e.queued
	n := len(e.chunks)
	if n == 0 || len(e.chunks[n-1])+len(lines) > cap(e.chunks[n-1]) {
		e.chunks = append(e.chunks, e.chunk(len(lines)))
		n++
	}
	e.chunks[n-1] = append(e.chunks[n-1], lines...)
	e.digests = append(e.digests, digests...)
	e.queued += len(lines)
	half := e.cfg.QueueBytes / 2
	e.mu.Unlock()
	switch {
	case was == 0:
		signal(e.wake)
	case was <= half && was+len(lines) > half:
		signal(e.full)
	}
}

// chunkSize is the size of the line queue's chunks: the queue grows
// and empties by chunks used again, never by copying the lines into a
// larger buffer (which, as a reading's lines grow, costs the journal's
// writer copies, zeroing and page faults of fresh memory).
const chunkSize = 64 << 10

// chunk returns an empty chunk for a group of n bytes: one read
// before, or a new one (of n bytes, for a group larger than a chunk).
// Called with mu held.
func (e *Exporter) chunk(n int) []byte {
	if n > chunkSize {
		return make([]byte, 0, n)
	}
	if k := len(e.free); k > 0 {
		c := e.free[k-1]
		e.free = e.free[:k-1]
		return c
	}
	return make([]byte, 0, chunkSize)
}

// TapSyncFunc returns e.TapSync, or nil when e records no metrics: what
// journal.Options.TapSync takes.
func (e *Exporter) TapSyncFunc() func(time.Duration) {
	if e == nil || e.m == nil {
		return nil
	}
	return e.TapSync
}

// TapSync notes how long one fdatasync of a group took, for the fsync
// latency histogram. It takes no lock: the group's Tap, which follows on
// the same writer, queues the time with the group (or counts it as
// dropped with maxSizes waiting) under the lock it takes anyway, and
// wakes the reading goroutine.
func (e *Exporter) TapSync(d time.Duration) {
	if e.hasSynced {
		// A sync with no group after it (nothing written since): its
		// time is queued now.
		e.mu.Lock()
		e.queueSync()
		e.mu.Unlock()
	}
	e.synced, e.hasSynced = d, true
}

// queueSync queues the time TapSync noted, if any, or counts it as
// dropped with maxSizes waiting or the exporter closed. Called with mu
// held, by the journal's writer or, once it is done, by Close.
func (e *Exporter) queueSync() {
	if !e.hasSynced {
		return
	}
	e.hasSynced = false
	if !e.closed && len(e.syncs) < maxSizes {
		e.syncs = append(e.syncs, e.synced)
	} else {
		e.pointsDropped++
	}
}

// signal wakes the goroutine waiting on c, if it is not woken already.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// run reads the queued lines, Config.Delay after the first of a run of
// groups (or at once when the queue is half full), until Close, then
// what is left; it hands the spans of each reading to the processor at
// once. Waking a goroutine for each group (a call or two) costs more
// CPU than building the call's span, so it wakes at most twice per
// delay (the first group, the timer) however busy the log is, and not
// at all while it is idle.
func (e *Exporter) run() {
	defer close(e.done)
	var spare [][]byte
	var spareSizes []int
	var spareSyncs []time.Duration
	var spareDigests [][32]byte
	timer := time.NewTimer(e.cfg.Delay)
	timer.Stop()
	for {
		<-e.wake
		timer.Reset(e.cfg.Delay)
		select {
		case <-timer.C:
		case <-e.full:
			timer.Stop()
		}
		e.mu.Lock()
		chunks, closed, sizes, syncs, digests := e.chunks, e.closed, e.sizes, e.syncs, e.digests
		e.chunks, e.queued, e.sizes, e.syncs, e.digests = spare[:0], 0, spareSizes[:0], spareSyncs[:0], spareDigests[:0]
		e.mu.Unlock()
		e.m.groups(sizes, syncs)
		e.b.digests = digests
		for _, c := range chunks {
			e.b.lines(c)
		}
		e.b.digests = nil
		e.mu.Lock()
		for _, c := range chunks {
			// The chunks read are kept, up to a queue's worth.
			if cap(c) == chunkSize && len(e.free)*chunkSize < e.cfg.QueueBytes {
				e.free = append(e.free, c[:0])
			}
		}
		e.mu.Unlock()
		clear(chunks)
		if closed {
			e.b.close()
		}
		e.proc.kick()
		spare, spareSizes, spareSyncs, spareDigests = chunks, sizes, syncs, digests
		if closed {
			return
		}
	}
}

// Stats are an Exporter's counts so far.
type Stats struct {
	Spans    uint64 // spans built
	Exported uint64 // spans the collector took
	// RecordsDropped counts records not read, their group dropped with
	// the line queue full; SpansDropped spans dropped with the span queue
	// full; Failed spans in batches the collector did not take.
	RecordsDropped, SpansDropped, Failed uint64
	LastErr                              error // the last export's error
	// MetricExports counts the metric readings exported, MetricFailed
	// those the collector did not take; PointsDropped counts group sizes
	// and sync times not recorded, with too many waiting.
	MetricExports, MetricFailed, PointsDropped uint64
}

// Stats returns e's counts so far.
func (e *Exporter) Stats() Stats {
	e.mu.Lock()
	dropped, points := e.dropped, e.pointsDropped
	e.mu.Unlock()
	s := e.proc.stats()
	s.RecordsDropped, s.PointsDropped = dropped, points
	if e.m != nil && e.m.exp != nil {
		s.MetricExports, s.MetricFailed = e.m.exp.counts()
	}
	return s
}

// Close reads what is queued, exports what it can within
// Config.CloseTimeout, says what was not exported, and stops. It is
// called once the log is closed (its last line tapped).
func (e *Exporter) Close() error {
	if e == nil {
		return nil
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.queueSync()
	e.closed = true
	e.mu.Unlock()
	signal(e.wake)
	signal(e.full)
	<-e.done
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.CloseTimeout)
	defer cancel()
	err := e.proc.Shutdown(ctx)
	if e.m != nil {
		// The last reading: what the calls of this run add up to.
		// A collector that does not take them is said, as for spans,
		// and is no error of the run's.
		if merr := e.m.mp.Shutdown(ctx); merr != nil {
			e.cfg.Logf("telemetry: metrics not exported: %v", merr)
		}
	}
	s := e.Stats()
	if s.MetricFailed > 0 || s.PointsDropped > 0 {
		e.cfg.Logf("telemetry: %d of %d metric readings not taken by the collector, %d measurements dropped with the queue full",
			s.MetricFailed, s.MetricExports, s.PointsDropped)
	}
	if lost := s.Spans - s.Exported; lost > 0 || s.RecordsDropped > 0 {
		why := ""
		if s.LastErr != nil {
			why = fmt.Sprintf("; the collector: %v", s.LastErr)
		}
		e.cfg.Logf("telemetry: %d of %d spans not exported (%d dropped with the queue full, %d not taken), %d records not read%s",
			lost, s.Spans, s.SpansDropped, lost-s.SpansDropped, s.RecordsDropped, why)
	}
	return err
}
