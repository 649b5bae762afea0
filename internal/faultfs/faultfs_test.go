package faultfs

import (
	"errors"
	"fmt"
	"sync"
	"testing"
)

func TestPredicates(t *testing.T) {
	ops := []Op{
		{"open", "/d/audit.jsonl"},
		{"write", "/d/audit.jsonl"},
		{"sync", "/d/audit.jsonl"},
		{"write", "/d/audit.jsonl"},
		{"create", "/d/audit.jsonl.next"},
		{"write", "/d/audit.jsonl.0-9.jsonl.zst.tmp"},
		{"rename-exchange", "/d/audit.jsonl.next"},
		{"write", "/d/audit.jsonl"},
		{"sync", "/d/audit.jsonl"},
	}
	tests := []struct {
		name string
		p    Predicate
		want string // which ops match: one digit per op
	}{
		{"any", Any, "111111111"},
		{"kind", Kind("write"), "010101010"},
		{"kinds", Kind("sync", "open"), "101000001"},
		{"exact path", Path("/d/audit.jsonl"), "111100011"},
		{"path glob", Path("/d/audit.jsonl.*"), "000011100"},
		{"base glob", Base("*.zst.tmp"), "000001000"},
		{"and", And(Kind("write"), Path("/d/audit.jsonl")), "010100010"},
		{"or", Or(Kind("create"), Base("*.tmp")), "000011000"},
		{"not", Not(Kind("write")), "101010101"},
		{"nth", Nth(2, Kind("write")), "000100000"},
		{"nth beyond", Nth(9, Kind("write")), "000000000"},
		{"nth zero", Nth(0, Any), "000000000"},
		{"from nth", FromNth(2, Kind("write")), "000101010"},
		{"nth of and", Nth(3, And(Kind("write"), Path("/d/audit.jsonl"))), "000000010"},
		// And asks every operand, so Nth counts every write, not only
		// those of the live file.
		{"and of nth", And(Path("/d/audit.jsonl"), Nth(3, Kind("write"))), "000000000"},
		{"and of nth, in the other order", And(Nth(4, Kind("write")), Path("/d/audit.jsonl")), "000000010"},
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
			[]Op{{"write", "a"}, {"sync", "a"}},
			[]string{"run", "run"}},
		{"second write fails", []Rule{Fail(Nth(2, Kind("write")), EIO)},
			[]Op{{"write", "a"}, {"sync", "a"}, {"write", "a"}, {"write", "a"}},
			[]string{"run", "run", "input/output error/0", "run"}},
		{"short write with no error", []Rule{ShortWrite(Nth(1, Kind("write")), nil)},
			[]Op{{"write", "a"}, {"write", "a"}},
			[]string{"<nil>/5", "run"}},
		{"short write, then ENOSPC", []Rule{ShortWrite(Kind("write"), ENOSPC)},
			[]Op{{"write", "a"}},
			[]string{"no space left on device/5"}},
		{"first rule wins; both count", []Rule{Fail(Nth(1, Kind("sync")), boom), Fail(Nth(2, Kind("sync")), EROFS)},
			[]Op{{"sync", "a"}, {"sync", "a"}, {"sync", "a"}},
			[]string{"boom/0", "read-only file system/0", "run"}},
		{"an earlier rule does not hide an op from a later one", []Rule{Fail(Kind("sync"), boom), Fail(Nth(2, Kind("sync", "write")), EIO)},
			[]Op{{"sync", "a"}, {"write", "a"}},
			[]string{"boom/0", "input/output error/0"}},
	}
	for _, tt := range tests {
		in := New(tt.rules...)
		for i, op := range tt.ops {
			got := "run"
			if k, err := in.Hook(op.Kind, op.Path, 10); k != 10 || err != nil {
				got = fmt.Sprintf("%v/%d", err, k)
			}
			if got != tt.want[i] {
				t.Errorf("%s: op %d %v = %s; want %s", tt.name, i, op, got, tt.want[i])
			}
		}
	}
}

func TestCounts(t *testing.T) {
	in := New(Fail(Kind("sync"), EIO))
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				in.Hook("write", "a", 1)
				in.Hook("sync", "a", 0)
			}
		}()
	}
	wg.Wait()
	for _, tt := range []struct {
		kinds []string
		want  int
	}{{[]string{"write"}, 800}, {[]string{"sync"}, 800}, {nil, 1600}, {[]string{"write", "sync", "open"}, 1600}, {[]string{"open"}, 0}} {
		if got := in.Count(tt.kinds...); got != tt.want {
			t.Errorf("Count(%v) = %d; want %d", tt.kinds, got, tt.want)
		}
	}
	if got := in.Injected(); got != 800 {
		t.Errorf("Injected() = %d; want 800", got)
	}
	var none *Injector
	if k, err := none.Hook("write", "a", 7); k != 7 || err != nil || none.Count() != 0 || none.Injected() != 0 {
		t.Errorf("a nil Injector: Hook = %d, %v, Count %d; want 7, nil, 0", k, err, none.Count())
	}
}
