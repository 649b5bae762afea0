package otelexport

import (
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
)

// drain empties p's span queue as an export does, its chunks kept to
// fill again.
func (p *processor) drain() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.q {
		c.b, c.ends = c.b[:0], c.ends[:0]
		p.free = append(p.free, c)
	}
	p.q, p.queued = p.q[:0], 0
}

// TestCallAllocs: once the builder has seen a tool, reading a call of
// one round (its intent and outcome lines), building its span into the
// span queue and recording its metrics allocates nothing: the garbage a
// call's telemetry makes is what makes the collections that a process
// with telemetry off never runs, and they cost more than the work.
func TestCallAllocs(t *testing.T) {
	m, err := newMeters(Config{MetricReader: sdkmetric.NewManualReader()}, resource.Empty())
	if err != nil {
		t.Fatal(err)
	}
	p := &processor{max: 1 << 30, batch: 1 << 30, wake: make(chan struct{}, 1)}
	b := newBuilder(p, "", m)
	c := newCallLines(t)
	b.lines(c.head)
	i := 0
	call := func() {
		b.lines(c.line(i, false))
		b.lines(c.line(i, true))
		p.drain()
		i++
	}
	for range 100 {
		call()
	}
	spans := p.spans
	if allocs := testing.AllocsPerRun(1000, call); allocs != 0 {
		t.Errorf("a call's telemetry allocates %v times; want 0", allocs)
	}
	if got, want := p.spans-spans, uint64(1001); got != want {
		t.Errorf("%d spans built; want %d", got, want)
	}
}
