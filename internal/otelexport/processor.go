package otelexport

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// exportTimeout bounds one export: a collector that takes longer fails
// the batch, which is counted, and the next batch is tried.
const exportTimeout = 10 * time.Second

// processor is an Exporter's queue of finished spans, exported in
// batches by one goroutine with the SDK's OTLP client (otlptrace.Client:
// the transport, retries and OTEL_* configuration of the SDK's
// exporters). The spans are queued already written (pspan), and a batch
// is sent as the bytes of its ScopeSpans' spans field, which the client
// marshals as they are (the message's unknown fields: protobuf writes
// them back unchanged). Unlike the SDK's batch processor it counts what
// it drops and what the collector does not take, for Close to say, and
// its goroutine wakes only when the Exporter's reading goroutine has
// built a reading's spans (kick) or a batch's worth is queued: never
// once per span.
type processor struct {
	client otlptrace.Client
	max    int // spans queued at most
	batch  int
	logf   func(string, ...any)
	wake   chan struct{}
	stop   chan struct{} // closed by Shutdown: drain and return
	done   chan struct{}
	once   sync.Once
	// rs is every export's request: the resource and the scope, whose
	// spans are the batch's bytes (the goroutine's alone).
	rs []*tracepb.ResourceSpans

	mu       sync.Mutex
	q        []byte // spans waiting to be exported, written
	ends     []int  // where each span of q ends
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

// OnEnd queues a copy of the span s, or drops it if the queue is full;
// a batch's worth queued wakes the exporting goroutine.
func (p *processor) OnEnd(s *pspan) {
	p.mu.Lock()
	p.spans++
	if len(p.ends) >= p.max {
		p.dropped++
		p.mu.Unlock()
		return
	}
	p.q = s.appendTo(p.q)
	p.ends = append(p.ends, len(p.q))
	n := len(p.ends)
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
	var spare []byte
	var spareEnds []int
	for {
		select {
		case <-p.wake:
		case <-p.stop:
		}
		p.mu.Lock()
		q, ends := p.q, p.ends
		p.q, p.ends = spare[:0], spareEnds[:0]
		p.mu.Unlock()
		start := 0
		for i := 0; i < len(ends) && p.ctx.Err() == nil; i += p.batch {
			last := min(i+p.batch, len(ends)) - 1
			p.export(q[start:ends[last]], last+1-i)
			start = ends[last]
		}
		spare, spareEnds = q, ends
		select {
		case <-p.stop:
			p.mu.Lock()
			left := len(p.ends)
			p.mu.Unlock()
			if left == 0 || p.ctx.Err() != nil {
				return
			}
		default:
		}
	}
}

// export sends one batch of n spans, written in raw, counting them as
// exported or failed.
func (p *processor) export(raw []byte, n int) {
	ss := p.rs[0].ScopeSpans[0].ProtoReflect()
	ss.SetUnknown(protoreflect.RawFields(raw))
	ctx, cancel := context.WithTimeout(p.ctx, exportTimeout)
	err := p.client.UploadTraces(ctx, p.rs)
	cancel()
	ss.SetUnknown(nil)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err == nil {
		p.exported += uint64(n)
		if p.failing {
			p.failing = false
			p.logf("telemetry: the collector takes spans again")
		}
		return
	}
	p.failed += uint64(n)
	p.lastErr = err
	if !p.failing {
		p.failing = true
		p.logf("telemetry: the collector did not take %d spans: %v; spans are dropped, and counted, while it fails", n, err)
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
