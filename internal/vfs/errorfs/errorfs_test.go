package errorfs

import (
	"errors"
	"fmt"
	"sync"
	"testing"
)

func TestPredicates(t *testing.T) {
	ops := []Op{
		{OpOpen, "/d/audit.jsonl"},
		{OpWrite, "/d/audit.jsonl"},
		{OpSync, "/d/audit.jsonl"},
		{OpWrite, "/d/audit.jsonl"},
		{OpCreate, "/d/audit.jsonl.next"},
		{OpWrite, "/d/audit.jsonl.0-9.jsonl.zst.tmp"},
		{OpRenameExchange, "/d/audit.jsonl.next"},
		{OpWrite, "/d/audit.jsonl"},
		{OpSync, "/d/audit.jsonl"},
	}
	tests := []struct {
		name string
		p    Predicate
		want string // which ops match: one digit per op
	}{
		{"any", Any, "111111111"},
		{"kind", Kind(OpWrite), "010101010"},
		{"kinds", Kind(OpSync, OpOpen), "101000001"},
		{"exact path", Path("/d/audit.jsonl"), "111100011"},
		{"path glob", Path("/d/audit.jsonl.*"), "000011100"},
		{"base glob", Base("*.zst.tmp"), "000001000"},
		{"and", And(Kind(OpWrite), Path("/d/audit.jsonl")), "010100010"},
		{"or", Or(Kind(OpCreate), Base("*.tmp")), "000011000"},
		{"not", Not(Kind(OpWrite)), "101010101"},
		{"nth", Nth(2, Kind(OpWrite)), "000100000"},
		{"nth beyond", Nth(9, Kind(OpWrite)), "000000000"},
		{"nth zero", Nth(0, Any), "000000000"},
		{"from nth", FromNth(2, Kind(OpWrite)), "000101010"},
		{"nth of and", Nth(3, And(Kind(OpWrite), Path("/d/audit.jsonl"))), "000000010"},
		// And asks every operand, so Nth counts every write, not only
		// those of the live file.
		{"and of nth", And(Path("/d/audit.jsonl"), Nth(3, Kind(OpWrite))), "000000000"},
		{"and of nth, in the other order", And(Nth(4, Kind(OpWrite)), Path("/d/audit.jsonl")), "000000010"},
	}
	for _, tt := range tests {
		got := make([]byte, len(ops))
		for i, op := range ops {
			got[i] = '0'
			if tt.p.Match(op) {
				got[i] = '1'
			}
		}
		if string(got) != tt.want {
			t.Errorf("%s: matches %s; want %s", tt.name, got, tt.want)
		}
	}
}

func TestPathPanicsOnBadPattern(t *testing.T) {
	for _, f := range []func(string) Predicate{Path, Base} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("a malformed pattern did not panic")
				}
			}()
			f("[")
		}()
	}
}

func TestInjector(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name  string
		rules []Rule
		ops   []Op
		want  []string // per op: "run", or the fault as "err/cut of 10"
	}{
		{"no rules", nil,
			[]Op{{OpWrite, "a"}, {OpSync, "a"}},
			[]string{"run", "run"}},
		{"second write fails", []Rule{Fail(Nth(2, Kind(OpWrite)), EIO)},
			[]Op{{OpWrite, "a"}, {OpSync, "a"}, {OpWrite, "a"}, {OpWrite, "a"}},
			[]string{"run", "run", "input/output error/0", "run"}},
		{"short write with no error", []Rule{ShortWrite(Nth(1, Kind(OpWrite)), nil)},
			[]Op{{OpWrite, "a"}, {OpWrite, "a"}},
			[]string{"<nil>/5", "run"}},
		{"short write, then ENOSPC", []Rule{ShortWrite(Kind(OpWrite), ENOSPC)},
			[]Op{{OpWrite, "a"}},
			[]string{"no space left on device/5"}},
		{"first rule wins; both count", []Rule{Fail(Nth(1, Kind(OpSync)), boom), Fail(Nth(2, Kind(OpSync)), EROFS)},
			[]Op{{OpSync, "a"}, {OpSync, "a"}, {OpSync, "a"}},
			[]string{"boom/0", "read-only file system/0", "run"}},
		{"an earlier rule does not hide an op from a later one", []Rule{Fail(Kind(OpSync), boom), Fail(Nth(2, Kind(OpSync, OpWrite)), EIO)},
			[]Op{{OpSync, "a"}, {OpWrite, "a"}},
			[]string{"boom/0", "input/output error/0"}},
	}
	for _, tt := range tests {
		in := New(tt.rules...)
		for i, op := range tt.ops {
			got := "run"
			if f, ok := in.Inject(op); ok {
				got = fmt.Sprintf("%v/%d", f.Err, f.Cut(10))
			}
			if got != tt.want[i] {
				t.Errorf("%s: op %d %v = %s; want %s", tt.name, i, op, got, tt.want[i])
			}
		}
	}
}

func TestCounts(t *testing.T) {
	in := New(Fail(Kind(OpSync), EIO))
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				in.Inject(Op{OpWrite, "a"})
				in.Inject(Op{OpSync, "a"})
			}
		}()
	}
	wg.Wait()
	for _, tt := range []struct {
		kinds []OpKind
		want  int
	}{{[]OpKind{OpWrite}, 800}, {[]OpKind{OpSync}, 800}, {nil, 1600}, {[]OpKind{OpWrite, OpSync, OpOpen}, 1600}, {[]OpKind{OpOpen}, 0}} {
		if got := in.Count(tt.kinds...); got != tt.want {
			t.Errorf("Count(%v) = %d; want %d", tt.kinds, got, tt.want)
		}
	}
	if got := in.Injected(); got != 800 {
		t.Errorf("Injected() = %d; want 800", got)
	}
	var none *Injector
	if f, ok := none.Inject(Op{OpWrite, "a"}); ok || none.Count() != 0 || none.Injected() != 0 {
		t.Errorf("a nil Injector: Inject = %v, %v, Count %d; want no fault, 0", f, ok, none.Count())
	}
}
