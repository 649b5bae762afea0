package otelexport

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// exportTimeout bounds one export: a collector that takes longer fails
// the batch, which is counted, and the next batch is tried.
const exportTimeout = 10 * time.Second

// processor is an Exporter's queue of finished spans, exported in
// batches by one goroutine with the SDK's OTLP client (otlptrace.Client:
// the transport, retries and OTEL_* configuration of the SDK's
// exporters, given the spans in OTLP's types). Unlike the SDK's batch
// processor it counts what it drops and what the collector does not
// take, for Close to say, and its goroutine wakes only when the
// Exporter's reading goroutine has built a reading's spans (kick) or a
// batch's worth is queued: never once per span. The spans of a batch
// sent are kept, at most 2*batch of them, for the next spans built.
type processor struct {
	client otlptrace.Client
	max    int // spans queued at most
	batch  int
	logf   func(string, ...any)
	wake   chan struct{}
	stop   chan struct{} // closed by Shutdown: drain and return
	done   chan struct{}
	once   sync.Once
	// rs is every export's request: the resource and scope, and the
	// batch's spans (the goroutine's alone).
	rs  []*tracepb.ResourceSpans
	out []*tracepb.Span

	mu       sync.Mutex
	q        []*pspan // spans waiting to be exported
	free     []*pspan // spans sent, to build again
	spans    uint64
	exported uint64
	dropped  uint64
	failed   uint64
	lastErr  error
	failing  bool // the last export failed: its error was said
	ctx      context.Context
	cancel   context.CancelFunc
}

func newProcessor(client otlptrace.Client, res *resourcepb.Resource, schemaURL string, queue, batch int, logf func(string, ...any)) *processor {
	p := &processor{client: client, max: queue, batch: batch, logf: logf,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	p.rs = []*tracepb.ResourceSpans{{Resource: res, SchemaUrl: schemaURL,
		ScopeSpans: []*tracepb.ScopeSpans{{Scope: &commonpb.InstrumentationScope{Name: scopeName}}}}}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	go p.run()
	return p
}

// get returns a pspan to build a span in: one sent before, or a new
// one.
func (p *processor) get() *pspan {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.free); n > 0 {
		s := p.free[n-1]
		p.free = p.free[:n-1]
		return s
	}
	return &pspan{}
}

// OnEnd queues s, built, or drops it if the queue is full; a batch's
// worth queued wakes the exporting goroutine.
func (p *processor) OnEnd(s *pspan) {
	p.mu.Lock()
	p.spans++
	if len(p.q) >= p.max {
		p.dropped++
		p.keep(s)
		p.mu.Unlock()
		return
	}
	p.q = append(p.q, s)
	n := len(p.q)
	p.mu.Unlock()
	if n == p.batch {
		signal(p.wake)
	}
}

// kick wakes the exporting goroutine for what is queued.
func (p *processor) kick() { signal(p.wake) }

// run exports the queue, in batches, each time it is woken, until
// Shutdown; then what is left, while Shutdown's context allows.
func (p *processor) run() {
	defer close(p.done)
	var spare []*pspan
	for {
		select {
		case <-p.wake:
		case <-p.stop:
		}
		p.mu.Lock()
		q := p.q
		p.q = spare[:0]
		p.mu.Unlock()
		for i := 0; i < len(q) && p.ctx.Err() == nil; i += p.batch {
			p.export(q[i:min(i+p.batch, len(q))])
		}
		p.mu.Lock()
		for _, s := range q {
			p.keep(s)
		}
		p.mu.Unlock()
		clear(q)
		spare = q
		select {
		case <-p.stop:
			p.mu.Lock()
			left := len(p.q)
			p.mu.Unlock()
			if left == 0 || p.ctx.Err() != nil {
				return
			}
		default:
		}
	}
}

// keep keeps s, sent or dropped, to build again, unless 2*batch are
// kept. Called with mu held.
func (p *processor) keep(s *pspan) {
	if len(p.free) < 2*p.batch {
		p.free = append(p.free, s)
	}
}

// export sends one batch, counting it as exported or failed.
func (p *processor) export(buf []*pspan) {
	p.out = p.out[:0]
	for _, s := range buf {
		p.out = append(p.out, &s.s)
	}
	p.rs[0].ScopeSpans[0].Spans = p.out
	ctx, cancel := context.WithTimeout(p.ctx, exportTimeout)
	err := p.client.UploadTraces(ctx, p.rs)
	cancel()
	p.rs[0].ScopeSpans[0].Spans = nil
	clear(p.out)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err == nil {
		p.exported += uint64(len(buf))
		if p.failing {
			p.failing = false
			p.logf("telemetry: the collector takes spans again")
		}
		return
	}
	p.failed += uint64(len(buf))
	p.lastErr = err
	if !p.failing {
		p.failing = true
		p.logf("telemetry: the collector did not take %d spans: %v; spans are dropped, and counted, while it fails", len(buf), err)
	}
}

// Shutdown exports what is queued until ctx is done, then shuts the
// exporter down.
func (p *processor) Shutdown(ctx context.Context) error {
	p.once.Do(func() {
		stop := context.AfterFunc(ctx, p.cancel)
		defer stop()
		close(p.stop)
		<-p.done
	})
	return p.client.Stop(ctx)
}

func (p *processor) stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Stats{Spans: p.spans, Exported: p.exported, SpansDropped: p.dropped, Failed: p.failed, LastErr: p.lastErr}
}
