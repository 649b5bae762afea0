package relay_test

import (
	"bytes"
	"crypto/sha256"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/aegisrelay/aegis/internal/relay"
	"github.com/aegisrelay/aegis/journal/record"
)

// stepReader hands out the slices sent on data, one after the other, and
// says so on waiting each time it has none left and blocks for the next:
// the pump that reads it has dealt with everything sent before.
type stepReader struct {
	waiting chan struct{}
	data    chan []byte
	cur     []byte
}

func newStepReader() *stepReader {
	return &stepReader{waiting: make(chan struct{}), data: make(chan []byte)}
}

func (s *stepReader) Read(p []byte) (int, error) {
	if len(s.cur) == 0 {
		s.cur = nil // an empty tail of a sent slice would keep it alive
		s.waiting <- struct{}{}
		b, ok := <-s.data
		if !ok {
			return 0, io.EOF
		}
		s.cur = b
	}
	n := copy(p, s.cur)
	s.cur = s.cur[n:]
	return n, nil
}

// liveHeap is the heap in use after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// longLine returns prefix, n bytes of 'y' and suffix.
func longLine(prefix string, n int, suffix string) []byte {
	b := make([]byte, 0, len(prefix)+n+len(suffix))
	b = append(b, prefix...)
	b = append(b, bytes.Repeat([]byte("y"), n)...)
	return append(b, suffix...)
}

// TestPumpsReleaseLongLine relays a 16 MiB tools/call and its 16 MiB
// response, both recorded, and checks that while each pump waits for its
// next line nothing holds on to the long one: neither the pump's state
// (its Frame, intent and Classifier alias the lines of the last run) nor
// its Reader.
func TestPumpsReleaseLongLine(t *testing.T) {
	const size = 16 << 20
	j, _ := testJournal(t)
	r := relay.New(relay.Config{Journal: j})
	up, down := newStepReader(), newStepReader()
	done := make(chan error, 2)
	go func() { done <- r.Upstream(up, io.Discard) }()
	go func() { done <- r.Downstream(down, io.Discard) }()
	<-up.waiting
	<-down.waiting
	base := liveHeap()

	steps := []struct {
		name string
		src  *stepReader
		line func() []byte
	}{
		{"request", up, func() []byte {
			return longLine(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"`, size, `"}}}`+"\n")
		}},
		{"response", down, func() []byte {
			return longLine(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"`, size, `"}]}}`+"\n")
		}},
	}
	for _, st := range steps {
		st.src.data <- st.line()
		<-st.src.waiting // the line is relayed; the pump waits for the next
		if got := liveHeap(); got > base+4<<20 {
			t.Errorf("after a 16 MiB %s, live heap = %.1f MiB; want at most %.1f MiB (before it, +4)", st.name, float64(got)/(1<<20), float64(base)/(1<<20)+4)
		}
	}
	if c := r.Counts(); c.Intents != 1 || c.Outcomes != 1 {
		t.Errorf("counts = %d intents, %d outcomes; want 1, 1", c.Intents, c.Outcomes)
	}
	close(up.data)
	close(down.data)
	for range 2 {
		if err := <-done; err != nil {
			t.Errorf("pump = %v; want nil", err)
		}
	}
}

// TestLongAnswerDigests relays answers on both sides of the length from
// which a line is hashed while it is classified (a single answer, a
// batch answering two calls, and a line that answers a call only as some
// clients read its id, an anomaly), and checks that every outcome and
// anomaly carries the digest of its own line.
func TestLongAnswerDigests(t *testing.T) {
	for _, size := range []int{100, 64<<10 - 200, 64 << 10, 1 << 20} {
		j, path := testJournal(t)
		r := relay.New(relay.Config{Journal: j})
		text := strings.Repeat("y", size)
		answer := func(id string) string {
			return `{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":"` + text + `"}]}}`
		}
		var up strings.Builder
		for _, id := range []string{"1", "2", "3", "4"} {
			up.WriteString(tcall(id, "echo") + "\n")
		}
		if err := r.Upstream(strings.NewReader(up.String()), io.Discard); err != nil {
			t.Fatal(err)
		}
		lines := []string{
			answer("1"),
			"[" + answer("2") + "," + answer("3") + "]",
			answer(`"4"`), // 4 only as some clients read ids: an anomaly
		}
		if err := r.Downstream(strings.NewReader(strings.Join(lines, "\n")+"\n"), io.Discard); err != nil {
			t.Fatal(err)
		}
		want := map[string]record.Digest{}
		for i, id := range []string{"1", "2", "3"} {
			want[id] = sha256.Sum256([]byte(lines[min(i, 1)]))
		}
		got := map[string]record.Digest{}
		anomalies := 0
		for _, rec := range records(t, j, path) {
			switch b := rec.Body.(type) {
			case *record.Outcome:
				got[string(b.Call.Text)] = b.ResponseDigest
			case *record.Anomaly:
				anomalies++
				if b.Digest != sha256.Sum256([]byte(lines[2])) {
					t.Errorf("%d-byte text: the anomaly's digest is not its line's", size)
				}
			}
		}
		for id, d := range want {
			if got[id] != d {
				t.Errorf("%d-byte text: call %s's outcome digest %x; want its line's, %x", size, id, got[id], d)
			}
		}
		if anomalies != 1 {
			t.Errorf("%d-byte text: %d anomalies; want 1 (id \"4\" for call 4)", size, anomalies)
		}
	}
}

// BenchmarkLongAnswer records one tools/call and its answer of 16 MiB,
// in process at none, with the answer hashed while it is classified
// ("parallel", as the relay does) and after it ("serial"); -count N runs
// the two N times, one after the other.
func BenchmarkLongAnswer(b *testing.B) {
	const size = 16 << 20
	j, path := testJournal(b)
	r := relay.New(relay.Config{Journal: j})
	answer := longLine(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"`, size, `"}]}}`+"\n")
	call := []byte(tcall("1", "echo") + "\n")
	calls := 0
	one := func(b *testing.B) {
		calls++
		if err := r.Upstream(bytes.NewReader(call), io.Discard); err != nil {
			b.Fatal(err)
		}
		if err := r.Downstream(bytes.NewReader(answer), io.Discard); err != nil {
			b.Fatal(err)
		}
	}
	for _, mode := range []struct {
		name string
		from int
	}{{"parallel", 64 << 10}, {"serial", int(^uint(0) >> 1)}} {
		b.Run(mode.name, func(b *testing.B) {
			undo := relay.SetParallelDigest(mode.from)
			defer undo()
			b.SetBytes(size)
			for b.Loop() {
				one(b)
			}
		})
	}
	// What is timed is recording: every call's outcome is in the log,
	// with the digest of the whole 16 MiB line.
	want := record.Digest(sha256.Sum256(answer[:len(answer)-1]))
	outcomes := 0
	for _, rec := range records(b, j, path) {
		if o, ok := rec.Body.(*record.Outcome); ok {
			if o.ResponseDigest != want {
				b.Fatalf("outcome %d: response digest %v; want the answer's, %v", rec.Seq, o.ResponseDigest, want)
			}
			outcomes++
		}
	}
	if outcomes != calls {
		b.Fatalf("%d outcomes in the log; want one per call, %d", outcomes, calls)
	}
}
