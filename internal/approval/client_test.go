package approval

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/journal/record"
)

// TestListDecideSockets: with several wraps' sockets, List gathers what
// waits in each, passing over a socket no wrap serves only when told to;
// Decide reaches the wrap that parked the id, past the others (which know
// no such id) and past a gone socket, and says ErrNoSuchCall when none
// holds it.
func TestListDecideSockets(t *testing.T) {
	dir := t.TempDir()
	serveAt := func(name string, ids ...string) (*Table, *resolver) {
		ln, err := Listen(SocketPath(filepath.Join(dir, name+".jsonl")))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		tab, r := NewTable(time.Hour), &resolver{}
		for _, id := range ids {
			tab.Park(Pending{ID: id, Server: name, Since: time.Now()}, r)
		}
		go tab.Serve(ln, t.Logf)
		return tab, r
	}
	serveAt("a", "id-a")
	_, rb := serveAt("b", "id-b1", "id-b2")
	gone := SocketPath(filepath.Join(dir, "gone.jsonl"))
	ln, err := Listen(gone)
	if err != nil {
		t.Fatal(err)
	}
	ln.(interface{ SetUnlinkOnClose(bool) }).SetUnlinkOnClose(false)
	ln.Close()

	socks, err := Sockets(dir)
	if err != nil || len(socks) != 3 {
		t.Fatalf("Sockets = %v, %v; want 3", socks, err)
	}
	all, errs := List(socks, true)
	if len(all) != 3 || len(errs) != 0 {
		t.Fatalf("List skipping gone sockets = %d calls, errors %v; want 3, none", len(all), errs)
	}
	if _, errs := List(socks, false); len(errs) != 1 {
		t.Fatalf("List not skipping = errors %v; want the gone socket's", errs)
	}
	if err := Decide(socks, Request{Op: "approve", ID: "id-b2"}, true); err != nil {
		t.Fatalf("Decide id-b2: %v", err)
	}
	if len(rb.got) != 1 || rb.got[0].Verdict != record.ApprovalApproved {
		t.Fatalf("b's resolver got %+v; want one approval", rb.got)
	}
	if err := Decide(socks, Request{Op: "deny", ID: "id-none"}, true); !errors.Is(err, ErrNoSuchCall) {
		t.Fatalf("Decide of an id no wrap holds = %v; want ErrNoSuchCall", err)
	}
	if err := Decide(socks, Request{Op: "deny", ID: "id-none"}, false); err == nil || errors.Is(err, ErrNoSuchCall) {
		t.Fatalf("Decide not skipping a gone socket = %v; want its error", err)
	}
}
