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

// processor is the SDK's span processor of an Exporter: a bounded queue
// of finished spans, exported in batches by one goroutine. Unlike the
// SDK's batch processor it counts what it drops and what the collector
// does not take, for Close to say.
type processor struct {
	exp   sdktrace.SpanExporter
	q     chan sdktrace.ReadOnlySpan
	batch int
	logf  func(string, ...any)
	stop  chan struct{} // closed by Shutdown: drain and return
	done  chan struct{}
	once  sync.Once

	mu       sync.Mutex
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
	p := &processor{exp: exp, q: make(chan sdktrace.ReadOnlySpan, queue), batch: batch, logf: logf,
		stop: make(chan struct{}), done: make(chan struct{})}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	go p.run()
	return p
}

func (p *processor) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd queues s, or drops it if the queue is full.
func (p *processor) OnEnd(s sdktrace.ReadOnlySpan) {
	p.mu.Lock()
	p.spans++
	p.mu.Unlock()
	select {
	case p.q <- s:
	default:
		p.mu.Lock()
		p.dropped++
		p.mu.Unlock()
	}
}

// linger is how long run gathers spans after the first of a batch: one
// export per span would cost more than the call it describes.
const linger = 200 * time.Millisecond

// run exports the queue in batches: a batch leaves when it is full or
// linger after its first span, so that a quiet wrap's spans leave soon
// and a busy one's leave in full batches.
func (p *processor) run() {
	defer close(p.done)
	buf := make([]sdktrace.ReadOnlySpan, 0, p.batch)
	timer := time.NewTimer(linger)
	timer.Stop()
	for {
		select {
		case s := <-p.q:
			buf = append(buf[:0], s)
		case <-p.stop:
			p.drain(buf[:0])
			return
		}
		timer.Reset(linger)
	more:
		for len(buf) < p.batch {
			select {
			case s := <-p.q:
				buf = append(buf, s)
			case <-timer.C:
				break more
			case <-p.stop:
				timer.Stop()
				p.export(buf)
				p.drain(buf[:0])
				return
			}
		}
		timer.Stop()
		p.export(buf)
	}
}

// drain exports what is queued, in batches, until the queue is empty or
// Shutdown's context is done.
func (p *processor) drain(buf []sdktrace.ReadOnlySpan) {
	for p.ctx.Err() == nil {
		buf = buf[:0]
	more:
		for len(buf) < p.batch {
			select {
			case s := <-p.q:
				buf = append(buf, s)
			default:
				break more
			}
		}
		if len(buf) == 0 {
			return
		}
		p.export(buf)
	}
}

// export sends one batch, counting it as exported or failed.
func (p *processor) export(buf []sdktrace.ReadOnlySpan) {
	ctx, cancel := context.WithTimeout(p.ctx, exportTimeout)
	err := p.exp.ExportSpans(ctx, buf)
	cancel()
	clear(buf)
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

// Shutdown drains the queue, exporting until ctx is done, then shuts the
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

// ForceFlush does nothing: run exports as soon as spans are queued.
func (p *processor) ForceFlush(context.Context) error { return nil }

func (p *processor) stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Stats{Spans: p.spans, Exported: p.exported, SpansDropped: p.dropped, Failed: p.failed, LastErr: p.lastErr}
}
