package relay_test

import (
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/aegisrelay/aegis/internal/relay"
	"github.com/aegisrelay/aegis/journal/record"
)

// TestPendingBoundedInBytes sends 300 tools/calls whose ids are 100 kB
// long (strings, and numbers of 100 kB of digits: each line longer than
// the reader's block, as a long line is read), none answered, and checks
// that the calls in flight hold a few hundred bytes each, not their ids:
// 30 MB of ids must cost the relay no more than 2 MiB. Then every call is
// answered by an id as long, and each answer is matched.
func TestPendingBoundedInBytes(t *testing.T) {
	const (
		calls  = 300
		idSize = 100_000
		bound  = 2 << 20
	)
	j, path := testJournal(t)
	r := relay.New(relay.Config{Journal: j})
	// Each line is made in one allocation, of the ids' tails made once:
	// copies of megabytes are most of what the test costs under the race
	// detector.
	xs, zeros := strings.Repeat("x", idSize), strings.Repeat("0", idSize)
	id := func(k int) []string {
		if k%2 == 0 {
			return []string{`"`, strconv.Itoa(k), xs, `"`}
		}
		return []string{strconv.Itoa(k), zeros}
	}
	before := liveHeap()
	src := newStepReader()
	done := make(chan error)
	go func() { done <- r.Upstream(src, io.Discard) }()
	for k := range calls {
		<-src.waiting
		src.data <- joinLine(`{"jsonrpc":"2.0","id":`, id(k), `,"method":"tools/call","params":{"name":"echo"}}`+"\n")
	}
	<-src.waiting
	grew := int64(liveHeap()) - int64(before)
	t.Logf("%d calls in flight with %d-byte ids: the heap grew by %d KiB", calls, idSize, grew>>10)
	if grew > bound {
		t.Errorf("%d calls in flight with %d-byte ids hold %d MiB; want at most %d MiB", calls, idSize, grew>>20, bound>>20)
	}
	close(src.data)
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	down := newStepReader()
	go func() { done <- r.Downstream(down, io.Discard) }()
	for k := range calls {
		<-down.waiting
		down.data <- joinLine(`{"jsonrpc":"2.0","id":`, id(k), `,"result":{}}`+"\n")
	}
	<-down.waiting
	close(down.data)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	counts, err := r.End(record.StatusUnanswered, "test")
	if err != nil {
		t.Fatal(err)
	}
	if counts.Intents != calls || counts.Outcomes != calls || counts.Unanswered != 0 {
		t.Errorf("counts = %+v; want %d intents and outcomes, none unanswered", counts, calls)
	}
	for _, rec := range records(t, j, path) {
		if o, ok := rec.Body.(*record.Outcome); ok && (o.Status != record.StatusOK || !o.Call.Abbreviated()) {
			t.Fatalf("outcome %+v; want ok, with the id abbreviated", o)
		}
	}
}

// joinLine returns the concatenation of before, parts and after, made in
// one allocation.
func joinLine(before string, parts []string, after string) []byte {
	n := len(before) + len(after)
	for _, p := range parts {
		n += len(p)
	}
	b := make([]byte, 0, n)
	b = append(b, before...)
	for _, p := range parts {
		b = append(b, p...)
	}
	return append(b, after...)
}
