package approval

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/journal/record"
)

// resolver records the decisions it is given.
type resolver struct {
	mu  sync.Mutex
	got []Decision
	ch  chan Decision
}

func (r *resolver) Resolve(id string, d Decision) error {
	r.mu.Lock()
	r.got = append(r.got, d)
	r.mu.Unlock()
	if r.ch != nil {
		r.ch <- d
	}
	return nil
}

// TestDecideOnce: an id is decided once; a second decision, of either
// kind, fails with ErrDecided and reaches no resolver, and an id never
// parked is ErrUnknown.
func TestDecideOnce(t *testing.T) {
	tab := NewTable(time.Hour)
	r := &resolver{}
	id := NewID()
	tab.Park(Pending{ID: id, Since: time.Now()}, r)
	if err := tab.Decide(id, Decision{Verdict: record.ApprovalApproved, HasBy: true}); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{record.ApprovalApproved, record.ApprovalDenied} {
		if err := tab.Decide(id, Decision{Verdict: v}); !errors.Is(err, ErrDecided) {
			t.Errorf("second Decide(%s) = %v; want ErrDecided", v, err)
		}
	}
	if err := tab.Decide(NewID(), Decision{Verdict: record.ApprovalApproved}); !errors.Is(err, ErrUnknown) {
		t.Errorf("Decide(unknown) = %v; want ErrUnknown", err)
	}
	if len(r.got) != 1 || len(tab.List()) != 0 {
		t.Fatalf("resolved %d times, %d still listed; want 1 and 0", len(r.got), len(tab.List()))
	}
}

// TestExpiry: a call no one decides is decided expired, without an
// approver, once its timeout passes; Drop ends one without a decision.
func TestExpiry(t *testing.T) {
	tab := NewTable(50 * time.Millisecond)
	r := &resolver{ch: make(chan Decision, 1)}
	id := NewID()
	tab.Park(Pending{ID: id, Since: time.Now()}, r)
	d := <-r.ch
	if d.Verdict != record.ApprovalExpired || d.HasBy {
		t.Fatalf("decision %+v; want expired with no approver", d)
	}
	dropped := NewID()
	tab.Park(Pending{ID: dropped, Since: time.Now()}, &resolver{})
	tab.Drop(dropped)
	if err := tab.Decide(dropped, Decision{Verdict: record.ApprovalApproved}); !errors.Is(err, ErrDecided) {
		t.Errorf("Decide(dropped) = %v; want ErrDecided", err)
	}
}

// TestQuoteAndBound: what a client sent is listed as inert text, and an
// approver's reason is bounded valid UTF-8.
func TestQuoteAndBound(t *testing.T) {
	got := Quote([]byte("{\"p\":\"\x1b[2J\u202e\xff\"}"))
	for _, bad := range []string{"\x1b", "\u202e", "\xff"} {
		if strings.Contains(got, bad) {
			t.Errorf("Quote kept %q: %s", bad, got)
		}
	}
	long := Quote([]byte(strings.Repeat("é", 300)))
	if !strings.HasSuffix(long, "… (600 bytes)") || len(long) > MaxShown+40 {
		t.Errorf("Quote(600 bytes) = %s", long)
	}
	if b := bound("ok\xff" + strings.Repeat("x", 600)); len(b) > MaxReason || strings.Contains(b, "\xff") {
		t.Errorf("bound kept %d bytes or an invalid byte", len(b))
	}
}

// TestSocket: the socket is 0600, answers its owner (list, approve,
// the second approve refused), replaces a socket nothing serves, and
// leaves a file that is not a socket as it was.
func TestSocket(t *testing.T) {
	dir := t.TempDir()
	path := SocketPath(filepath.Join(dir, "srv.jsonl"))
	if err := os.WriteFile(path, []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(path); err == nil {
		t.Fatal("Listen over a regular file succeeded")
	}
	if b, _ := os.ReadFile(path); string(b) != "mine" {
		t.Fatal("Listen changed the file it refused")
	}
	os.Remove(path)
	ln, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	ln.(interface{ SetUnlinkOnClose(bool) }).SetUnlinkOnClose(false)
	ln.Close() // a socket left behind, served by no one
	ln, err = Listen(path)
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	defer ln.Close()
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	if _, err := Listen(path); err == nil {
		t.Fatal("a second Listen on a served socket succeeded")
	}
	tab := NewTable(time.Hour)
	go tab.Serve(ln, t.Logf)
	r := &resolver{}
	id := NewID()
	tab.Park(Pending{ID: id, Tool: Quote([]byte("add")), Since: time.Now()}, r)
	resp, err := Do(path, Request{Op: "list"})
	if err != nil || len(resp.Pending) != 1 || resp.Pending[0].ID != id {
		t.Fatalf("list = %+v, %v", resp, err)
	}
	if _, err := Do(path, Request{Op: "approve", ID: id}); err != nil {
		t.Fatal(err)
	}
	if _, err := Do(path, Request{Op: "approve", ID: id}); err == nil || !strings.Contains(err.Error(), "already decided") {
		t.Fatalf("second approve: %v", err)
	}
	if _, err := Do(path, Request{Op: "deny", ID: NewID()}); !errors.Is(err, ErrRemoteUnknown) {
		t.Fatalf("deny unknown: %v", err)
	}
	if len(r.got) != 1 || r.got[0].UID != uint64(os.Getuid()) || !r.got[0].HasBy {
		t.Fatalf("decisions %+v; want one by uid %d", r.got, os.Getuid())
	}
}
