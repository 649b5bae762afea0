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
	// timeout bounds one export: a collector that takes longer fails
	// the batch, which is counted, and the next batch is tried.
	timeout time.Duration
	logf    func(string, ...any)
	wake    chan struct{}
	stop    chan struct{} // closed by Shutdown: drain and return
	done    chan struct{}
	once    sync.Once
	// rs is every export's request: the resource and the scope, whose
	// spans are the batch's bytes (the goroutine's alone).
	rs []*tracepb.ResourceSpans

	mu sync.Mutex
	// q holds the spans waiting to be exported, written, in chunks
	// filled in turn; free holds chunks exported, to fill again.
	q        []*spanChunk
	queued   int // spans in q
	free     []*spanChunk
	spans    uint64
	exported uint64
	dropped  uint64
	failed   uint64
	lastErr  error
	failing  bool // the last export failed: its error was said
	ctx      context.Context
	cancel   context.CancelFunc
}

func newProcessor(client otlptrace.Client, res *resourcepb.Resource, schemaURL string, queue, batch int, timeout time.Duration, logf func(string, ...any)) *processor {
	p := &processor{client: client, max: queue, batch: batch, timeout: timeout, logf: logf,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	p.rs = []*tracepb.ResourceSpans{{Resource: res, SchemaUrl: schemaURL,
		ScopeSpans: []*tracepb.ScopeSpans{{Scope: &commonpb.InstrumentationScope{Name: scopeName}}}}}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	go p.run()
	return p
}

// spanChunk is one chunk of the span queue: whole spans, written, and
// where each ends.
type spanChunk struct {
	b    []byte
	ends []int
}

// spanChunkSize is the size of the span queue's chunks, and so the most
// one export sends (but for a span larger than a chunk, which has one
// of its own): the queue grows and empties by chunks used again, never
// by copying its spans into a larger buffer, whose fresh memory (and
// the copies) cost more than writing the spans; and the request the
// OTLP client marshals for a chunk is small enough for the heap to
// serve from memory it has used before.
const spanChunkSize = 128 << 10

// maxFreeChunks bounds the chunks kept to fill again.
const maxFreeChunks = 32

// OnEnd queues a copy of the span s, or drops it if the queue is full;
// a batch's worth queued wakes the exporting goroutine.
func (p *processor) OnEnd(s *pspan) {
	p.mu.Lock()
	p.spans++
	if p.queued >= p.max {
		p.dropped++
		p.mu.Unlock()
		return
	}
	n := s.size()
	k := len(p.q)
	if k == 0 || len(p.q[k-1].b)+n > cap(p.q[k-1].b) {
		p.q = append(p.q, p.chunk(n))
		k++
	}
	c := p.q[k-1]
	c.b = s.appendTo(c.b)
	c.ends = append(c.ends, len(c.b))
	p.queued++
	queued := p.queued
	p.mu.Unlock()
	if queued == p.batch {
		signal(p.wake)
	}
}

// chunk returns an empty chunk for a span of n bytes: one exported
// before, or a new one (of n bytes, for a span larger than a chunk).
// Called with mu held.
func (p *processor) chunk(n int) *spanChunk {
	if n > spanChunkSize {
		return &spanChunk{b: make([]byte, 0, n)}
	}
	if k := len(p.free); k > 0 {
		c := p.free[k-1]
		p.free = p.free[:k-1]
		return c
	}
	return &spanChunk{b: make([]byte, 0, spanChunkSize)}
}

// kick wakes the exporting goroutine for what is queued.
func (p *processor) kick() { signal(p.wake) }

// run exports the queue, in batches, each time it is woken, until
// Shutdown; then what is left, while Shutdown's context allows.
func (p *processor) run() {
	defer close(p.done)
	var spare []*spanChunk
	for {
		select {
		case <-p.wake:
		case <-p.stop:
		}
		p.mu.Lock()
		q := p.q
		p.q, p.queued = spare[:0], 0
		p.mu.Unlock()
		for _, c := range q {
			start := 0
			for i := 0; i < len(c.ends) && p.ctx.Err() == nil; i += p.batch {
				last := min(i+p.batch, len(c.ends)) - 1
				p.export(c.b[start:c.ends[last]], last+1-i)
				start = c.ends[last]
			}
		}
		p.mu.Lock()
		for _, c := range q {
			if cap(c.b) == spanChunkSize && len(p.free) < maxFreeChunks {
				c.b, c.ends = c.b[:0], c.ends[:0]
				p.free = append(p.free, c)
			}
		}
		p.mu.Unlock()
		clear(q)
		spare = q
		select {
		case <-p.stop:
			p.mu.Lock()
			left := p.queued
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
	ctx, cancel := context.WithTimeout(p.ctx, p.timeout)
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
