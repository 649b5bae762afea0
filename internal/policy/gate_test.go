package policy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/internal/gate"
)

func mustParse(t testing.TB, src string) *Policy {
	t.Helper()
	p, err := Parse("p.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestGateDecide(t *testing.T) {
	g := NewGate(mustParse(t, exampleFile))
	set := g.Current().Set()
	now := time.Unix(1000, 0)
	tests := []struct {
		tool string
		want gate.Decision
	}{
		{"read_file", gate.Decision{Verdict: gate.Allowed, Rule: "rules[0] read_file", Set: set, Line: 4}},
		{"delete_all", gate.Decision{Verdict: gate.Denied, Rule: "rules[1] delete_*", Set: set, Line: 6}},
		{"write_file", gate.Decision{Verdict: gate.PendingApproval, Rule: "rules[2] write_file", Set: set, Line: 8}},
		{"search", gate.Decision{Verdict: gate.Allowed, Rule: "rules[3] search", Set: set, Line: 10}},
		{"anything_else", gate.Decision{Verdict: gate.Allowed, Rule: "default", Set: set, Line: 2}},
	}
	for _, tt := range tests {
		fr := g.Begin(now)
		if fr.Set() != set {
			t.Errorf("Frame.Set() = %q; want %q", fr.Set(), set)
		}
		if got := fr.Decide(callTo(tt.tool)); got != tt.want {
			t.Errorf("Decide(%q) = %+v; want %+v", tt.tool, got, tt.want)
		}
	}
	deny := NewGate(mustParse(t, "version: 1\ndefault: deny\n"))
	if got := deny.Begin(now).Decide(callTo("x")); got.Verdict != gate.Denied || got.Rule != "default" {
		t.Errorf("default deny: Decide = %+v; want POLICY_DENIED by default", got)
	}
}

// TestRateWindow: N calls pass in a window, the N+1th is refused with the
// time until a token is back, and after that time a call passes again.
func TestRateWindow(t *testing.T) {
	g := NewGate(mustParse(t, "version: 1\ndefault: deny\nrules:\n  - {tool: search, action: allow, rate: 3/m}\n"))
	now := time.Unix(1000, 0)
	call := func(at time.Time) gate.Decision {
		fr := g.Begin(at)
		d := fr.Decide(callTo("search"))
		if !d.Refused() {
			fr.Commit()
		}
		return d
	}
	for i := range 3 {
		if d := call(now); d.Refused() {
			t.Fatalf("call %d = %+v; want allowed", i+1, d)
		}
	}
	d := call(now)
	if d.Verdict != gate.RateLimited || d.Rule != "rules[0] search" {
		t.Fatalf("call 4 = %+v; want rate_limited by rules[0]", d)
	}
	if d.RetryAfter != 20*time.Second {
		t.Errorf("call 4 RetryAfter = %v; want 20s (one token of 3/m)", d.RetryAfter)
	}
	if d := call(now.Add(19 * time.Second)); !d.Refused() {
		t.Errorf("call at +19s = %+v; want still rate_limited", d)
	}
	if d := call(now.Add(20 * time.Second)); d.Refused() {
		t.Errorf("call at +20s = %+v; want allowed", d)
	}
	if d := call(now.Add(time.Hour)); d.Refused() {
		t.Errorf("call after an hour = %+v; want allowed", d)
	}
}

// TestRateBatch: the calls of one frame need a token each, and a frame that
// is refused (never committed) takes none.
func TestRateBatch(t *testing.T) {
	g := NewGate(mustParse(t, "version: 1\ndefault: allow\nrules:\n  - {tool: 'q_*', action: allow, rate: 2/h}\n  - {tool: boom, action: deny}\n"))
	now := time.Unix(5000, 0)
	fr := g.Begin(now)
	a, b, c := fr.Decide(callTo("q_a")), fr.Decide(callTo("q_b")), fr.Decide(callTo("q_c"))
	if a.Refused() || b.Refused() || !c.Refused() || c.Verdict != gate.RateLimited {
		t.Fatalf("batch of 3 under 2/h = %v %v %v; want allowed, allowed, rate_limited", a.Verdict, b.Verdict, c.Verdict)
	}
	if c.RetryAfter != 30*time.Minute {
		t.Errorf("third call RetryAfter = %v; want 30m", c.RetryAfter)
	}
	// Not committed: a refused frame ran nothing and takes nothing.
	fr = g.Begin(now)
	fr.Decide(callTo("q_a"))
	if d := fr.Decide(callTo("boom")); d.Verdict != gate.Denied {
		t.Fatalf("boom = %+v; want denied", d)
	}
	fr = g.Begin(now)
	if x, y := fr.Decide(callTo("q_x")), fr.Decide(callTo("q_y")); x.Refused() || y.Refused() {
		t.Fatalf("after refused frames, 2 calls = %v %v; want both allowed (no token taken)", x.Verdict, y.Verdict)
	}
	fr.Commit()
	if d := g.Begin(now).Decide(callTo("q_z")); d.Verdict != gate.RateLimited {
		t.Errorf("after a committed frame of 2, q_z = %+v; want rate_limited", d)
	}
}

type reloadRec struct{ set, status string }

func TestReload(t *testing.T) {
	v1 := "version: 1\ndefault: allow\nrules:\n  - {tool: s, action: allow, rate: 1/h}\n  - {tool: x, action: deny}\n"
	v2 := "version: 1\ndefault: allow\nrules:\n  - {tool: s, action: allow, rate: 1/h}\n  - {tool: y, action: deny}\n"
	g := NewGate(mustParse(t, v1))
	now := time.Unix(0, 0)
	fr := g.Begin(now)
	if d := fr.Decide(callTo("s")); d.Refused() {
		t.Fatal("s refused on a full bucket")
	}
	fr.Commit()
	old := g.Current()
	var recs []reloadRec
	record := func(set, status string) error {
		if g.Current() != old {
			t.Error("record called after the swap; want before, so the log says so first")
		}
		recs = append(recs, reloadRec{set, status})
		return nil
	}
	// A frame begun before the reload keeps its rule set.
	inflight := g.Begin(now)
	if err := g.Reload("p.yaml", []byte(v2), record); err != nil {
		t.Fatalf("Reload(v2) = %v", err)
	}
	if inflight.Set() != old.Set() || inflight.Decide(callTo("x")).Verdict != gate.Denied {
		t.Error("a frame begun before the reload changed rule set")
	}
	if g.Current().Set() != SetOf([]byte(v2)) || len(recs) != 1 || recs[0] != (reloadRec{SetOf([]byte(v2)), StatusApplied}) {
		t.Fatalf("after Reload(v2): set %s, records %v; want v2 applied", g.Current().Set(), recs)
	}
	fr = g.Begin(now)
	if d := fr.Decide(callTo("x")); d.Refused() {
		t.Errorf("x under v2 = %+v; want allowed", d)
	}
	if d := fr.Decide(callTo("s")); d.Verdict != gate.RateLimited {
		t.Errorf("s under v2 = %+v; want rate_limited: the bucket carries over a reload", d)
	}
	// An invalid file is rejected and the old set stays.
	old = g.Current()
	bad := []byte("version: 1\ndefault: allow\nrules:\n  - {tool: y, action: nope}\n")
	err := g.Reload("p.yaml", bad, record)
	if !errors.Is(err, ErrInvalid) || g.Current() != old {
		t.Fatalf("Reload(bad) = %v, swapped %v; want ErrInvalid and the old set kept", err, g.Current() != old)
	}
	if last := recs[len(recs)-1]; last.set != SetOf(bad) || !strings.HasPrefix(last.status, `rejected: p.yaml:4:`) || !strings.Contains(last.status, `"nope"`) {
		t.Errorf("rejected reload recorded %+v; want its set and rejected: p.yaml:4:…", last)
	}
	// A record that fails keeps the old set too (fail closed).
	boom := errors.New("journal failed")
	if err := g.Reload("p.yaml", []byte(v1), func(string, string) error { return boom }); !errors.Is(err, boom) || g.Current() != old {
		t.Errorf("Reload with a failing record = %v; want its error and no swap", err)
	}
	// An unreadable file is rejected naming the set that stays.
	err = g.ReloadFile(filepath.Join(t.TempDir(), "missing.yaml"), record)
	if last := recs[len(recs)-1]; err == nil || last.set != old.Set() || !strings.HasPrefix(last.status, "rejected: policy: open ") {
		t.Errorf("ReloadFile(missing) = %v, recorded %+v; want rejected with the current set", err, last)
	}
}

// TestWatch: writing the file and renaming another over it are both
// reported; changes to other files in the directory are not.
func TestWatch(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.yaml")
	os.WriteFile(path, []byte(exampleFile), 0o600)
	w, err := Watch(path, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	expect := func(what string, want bool) {
		t.Helper()
		wait := 5 * time.Second
		if !want {
			wait = 300 * time.Millisecond // nothing should come: bounded, not a synchronisation
		}
		select {
		case <-w.C():
			if !want {
				t.Errorf("%s: reported a change; want none", what)
			}
		case <-time.After(wait):
			if want {
				t.Errorf("%s: no change reported in %v", what, wait)
			}
		}
	}
	os.WriteFile(filepath.Join(dir, "audit.jsonl"), []byte("x\n"), 0o600)
	expect("another file written", false)
	os.WriteFile(path, []byte(exampleFile+"\n"), 0o600)
	expect("file written", true)
	tmp := filepath.Join(dir, ".policy.yaml.tmp")
	os.WriteFile(tmp, []byte("version: 1\ndefault: deny\n"), 0o600)
	os.Rename(tmp, path)
	expect("file renamed over", true)
	if err := w.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}
}

// callTo is a call to tool, as the relay hands it to a decider.
func callTo(tool string) *gate.Call { return &gate.Call{Tool: []byte(tool)} }
