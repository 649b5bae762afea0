package otelexport

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the CPU time the process has used, user and system.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// callLines makes the lines of call i of a log that began with
// testdata/call.jsonl's session_start and protocol records: its intent
// and its outcome, each a group of its own, as a strict log writes
// them. The lines are testdata's, with their seqs and call ids
// renumbered; everything else the decoder checks is kept.
type callLines struct {
	head            []byte   // session_start and protocol
	intent, outcome [][]byte // the parts around the numbers
	buf             []byte
}

func newCallLines(tb testing.TB) *callLines {
	b, err := os.ReadFile(filepath.Join("testdata", "call.jsonl"))
	if err != nil {
		tb.Fatal(err)
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	cut := func(line []byte, marks ...string) [][]byte {
		var parts [][]byte
		for _, m := range marks {
			i := bytes.Index(line, []byte(m))
			if i < 0 {
				tb.Fatalf("no %s in %s", m, line)
			}
			j := bytes.IndexByte(line[i+len(m):], ',')
			parts = append(parts, line[:i+len(m)])
			line = line[i+len(m)+j:]
		}
		return append(parts, line)
	}
	return &callLines{head: bytes.Join(lines[:2], nil),
		intent:  cut(lines[2], `"seq":`, `"call":`),
		outcome: cut(lines[3], `"seq":`, `"call":`, `"intent":`)}
}

// line returns call i's intent line, or its outcome's; the slice is
// valid until the next call.
func (c *callLines) line(i int, outcome bool) []byte {
	seq := int64(2 + 2*i)
	c.buf = c.buf[:0]
	if !outcome {
		c.buf = append(c.buf, c.intent[0]...)
		c.buf = strconv.AppendInt(c.buf, seq, 10)
		c.buf = append(c.buf, c.intent[1]...)
		c.buf = strconv.AppendInt(c.buf, int64(i+1), 10)
		c.buf = append(c.buf, c.intent[2]...)
		return c.buf
	}
	c.buf = append(c.buf, c.outcome[0]...)
	c.buf = strconv.AppendInt(c.buf, seq+1, 10)
	c.buf = append(c.buf, c.outcome[1]...)
	c.buf = strconv.AppendInt(c.buf, int64(i+1), 10)
	c.buf = append(c.buf, c.outcome[2]...)
	c.buf = strconv.AppendInt(c.buf, seq, 10)
	c.buf = append(c.buf, c.outcome[3]...)
	return c.buf
}

// BenchmarkTap is what telemetry costs a call once the journal has
// written it: its two groups tapped, read, made a span and metrics, and
// exported over OTLP/HTTP (the SDK's exporters, as Start makes them from
// the environment) to a collector that takes everything. Per op: one
// call.
func BenchmarkTap(b *testing.B) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		requests.Add(1)
	}))
	defer srv.Close()
	// The SDK's exporters read the environment themselves.
	b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	e, err := Start(Config{})
	if err != nil || e == nil {
		b.Fatal(e, err)
	}
	c := newCallLines(b)
	e.Tap(c.head)
	// A journal writes a call's lines no faster than it syncs them;
	// this loop, doing nothing else, would fill the queue. Paced, every
	// call is read: the benchmark measures the CPU each costs, not the
	// queue's bound. It waits only with three quarters of the queue
	// unread, past the half at which a reading starts without waiting
	// for its delay.
	perCall := len(c.line(0, false)) + len(c.line(0, true))
	lag := uint64(DefaultQueueBytes * 3 / 4 / perCall)
	b.ReportAllocs()
	cpu0 := cpuTime(b)
	b.ResetTimer()
	for i := range b.N {
		e.Tap(c.line(i, false))
		e.Tap(c.line(i, true))
		if i%256 == 255 {
			for uint64(i)-min(e.Stats().Spans, uint64(i)) > lag {
				time.Sleep(time.Millisecond)
			}
		}
	}
	if err := e.Close(); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
	s := e.Stats()
	if s.Spans != uint64(b.N) || s.Exported != s.Spans || s.RecordsDropped != 0 {
		b.Fatalf("Stats = %+v; want %d spans, every one exported", s, b.N)
	}
	b.ReportMetric(float64(requests.Load())/float64(b.N), "requests/op")
}
