package otelexport

import (
	"context"
	"sync"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// exportTimeout bounds one export: a collector that takes longer fails
// the batch, which is counted, and the next batch is tried.
const exportTimeout = 10 * time.Second

// processor is an Exporter's queue of finished spans, exported in
// batches by one goroutine with the SDK's span exporter. Unlike the
// SDK's batch processor it counts what it drops and what the collector
// does not take, for Close to say, and its goroutine wakes only when the
// Exporter's reading goroutine has built a reading's spans (kick) or a
// batch's worth is queued: never once per span.
type processor struct {
	exp   sdktrace.SpanExporter
	max   int // spans queued at most
	batch int
	logf  func(string, ...any)
	wake  chan struct{}
	stop  chan struct{} // closed by Shutdown: drain and return
	done  chan struct{}
	once  sync.Once

	mu       sync.Mutex
	q        []sdktrace.ReadOnlySpan // spans waiting to be exported
	spans    uint64
	exported uint64
	dropped  uint64
	failed   uint64
	lastErr  error
	failing  bool // the last export failed: its error was said
	ctx      context.Context
	cancel   context.CancelFunc
}

func newProcessor(exp sdktrace.SpanExporter, queue, batch int, logf func(string, ...any)) *processor {
	p := &processor{exp: exp, max: queue, batch: batch, logf: logf,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	go p.run()
	return p
}

// OnEnd queues s, or drops it if the queue is full; a batch's worth
// queued wakes the exporting goroutine.
func (p *processor) OnEnd(s sdktrace.ReadOnlySpan) {
	p.mu.Lock()
	p.spans++
	if len(p.q) >= p.max {
		p.dropped++
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
	var spare []sdktrace.ReadOnlySpan
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

// export sends one batch, counting it as exported or failed.
func (p *processor) export(buf []sdktrace.ReadOnlySpan) {
	ctx, cancel := context.WithTimeout(p.ctx, exportTimeout)
	err := p.exp.ExportSpans(ctx, buf)
	cancel()
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
	return p.exp.Shutdown(ctx)
}

func (p *processor) stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Stats{Spans: p.spans, Exported: p.exported, SpansDropped: p.dropped, Failed: p.failed, LastErr: p.lastErr}
}
