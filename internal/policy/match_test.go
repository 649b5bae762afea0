package policy

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestGlobMatch(t *testing.T) {
	tests := []struct {
		pat, name string
		want      bool
	}{
		{"read_file", "read_file", true},
		{"read_file", "read_files", false},
		{"read_file", "Read_file", false},
		{"fs_*", "fs_", true},
		{"fs_*", "fs_read", true},
		{"fs_*", "fs_a/b.c", true}, // '*' crosses '/' and '.': names are not paths
		{"fs_*", "fs", false},
		{"fs_*", "xfs_read", false},
		{"*_admin", "db_admin", true},
		{"*_admin", "_admin", true},
		{"*_admin", "db_admin_", false},
		{"*x*", "x", true},
		{"*x*", "abxcd", true},
		{"*x*", "abcd", false},
		{"a*b*c", "abc", true},
		{"a*b*c", "aXbYbZc", true},
		{"a*b*c", "aXbYc", true},
		{"a*b*c", "aXcYb", false},
		{"a*ab", "aaab", true},
		{"?", "é", true}, // one code point, two bytes
		{"?", "ab", false},
		{"??", "é", false},
		{"t?ol", "tool", true},
		{"t?ol", "tol", false},
		{"*", "", true},
		{"*", "anything/at.all", true},
		{`a\*`, "a*", true},
		{`a\*`, "ab", false},
		{`a\?b`, "a?b", true},
		{`a\?b`, "axb", false},
		{"outil_é*", "outil_été", true},
		{"de*ll", "delete_all", true},
	}
	for _, tt := range tests {
		g, err := compileGlob(tt.pat)
		if err != nil {
			t.Errorf("compileGlob(%q) = %v", tt.pat, err)
			continue
		}
		if got := g.match([]byte(tt.name)); got != tt.want {
			t.Errorf("glob %q match %q = %v; want %v", tt.pat, tt.name, got, tt.want)
		}
	}
}

func TestCovers(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"*", "anything*", true},
		{"fs_*", "fs_read", true},
		{"fs_*", "fs_?_x*", true},
		{"fs_*", "fs*", false},
		{"fs_*", "db_*", false},
		{"*_admin", "db_*_admin", true},
		{"*_admin", "*_admin_x", false},
		{"?", "?", true},
		{"?", "*", false},
		{"a?c", "abc", true},
		{"a?c", "a?c", true},
		{"abc", "a?c", false},
		{"a*", "a**", true},
		{"*a*", "?*", false},
		{"??*", "?*?", false}, // true, but covers is only sound: a missed diagnostic
	}
	for _, tt := range tests {
		a, err1 := compileGlob(tt.a)
		b, err2 := compileGlob(tt.b)
		if err1 != nil || err2 != nil {
			t.Fatalf("compileGlob: %v %v", err1, err2)
		}
		if got := covers(&a, &b); got != tt.want {
			t.Errorf("covers(%q, %q) = %v; want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

// randomPolicy builds a policy of n rules of every shape the index treats
// differently, over a small alphabet so that names collide with them.
func randomPolicy(r *rand.Rand, n int) string {
	var b strings.Builder
	b.WriteString("version: 1\ndefault: deny\nrules:\n")
	word := func() string {
		var w []byte
		for range 1 + r.IntN(4) {
			w = append(w, "ab_/é"[r.IntN(5)])
		}
		return string(w)
	}
	for range n {
		var pat string
		switch r.IntN(6) {
		case 0:
			pat = word()
		case 1:
			pat = word() + "*"
		case 2:
			pat = "*" + word()
		case 3:
			pat = word() + "?" + word()
		case 4:
			pat = "*" + word() + "*"
		default:
			pat = word() + "*" + word()
		}
		fmt.Fprintf(&b, "  - tool: %q\n    action: %s\n", pat, []string{"allow", "deny", "approve"}[r.IntN(3)])
	}
	return b.String()
}

// parseLenient parses src, dropping the rules reported as never matching,
// so that random rule lists make valid policies.
func parseLenient(t testing.TB, src string) *Policy {
	for {
		p, err := Parse("rand.yaml", []byte(src))
		if err == nil {
			return p
		}
		perr := err.(*Error)
		lines := strings.Split(src, "\n")
		drop := map[int]bool{}
		for _, d := range perr.Diags {
			if !strings.Contains(d.Msg, "can never match") {
				t.Fatalf("random policy: %v\n%s", err, src)
			}
			drop[d.Line-1], drop[d.Line] = true, true
		}
		var kept []string
		for i, l := range lines {
			if !drop[i] {
				kept = append(kept, l)
			}
		}
		src = strings.Join(kept, "\n")
	}
}

// TestMatchAgreesWithScan: the index decides every name as a scan of the
// rules in order would (first match wins).
func TestMatchAgreesWithScan(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		p := parseLenient(t, randomPolicy(r, 1+r.IntN(40)))
		for range 200 {
			var name []byte
			for range r.IntN(8) {
				name = append(name, "ab_/é"[r.IntN(5)])
			}
			if got, want := p.Match(name), p.matchLinear(name); got != want {
				t.Fatalf("round %d: Match(%q) = %d; want %d (scan)\nrules: %v", round, name, got, want, p.Rules())
			}
			// Twice: the second answer may come from the cache.
			if got, want := p.Match(name), p.matchLinear(name); got != want {
				t.Fatalf("round %d: cached Match(%q) = %d; want %d", round, name, got, want)
			}
		}
	}
}

// FuzzMatch checks the index against the scan for any rule list and name.
func FuzzMatch(f *testing.F) {
	f.Add("read_file\nfs_*\n*_admin\n*x*\nt?ol", "fs_read")
	f.Add("a*b*c\n?", "aXbYc")
	f.Fuzz(func(t *testing.T, pats, name string) {
		var b strings.Builder
		b.WriteString("version: 1\ndefault: allow\nrules:\n")
		for _, pat := range strings.Split(pats, "\n") {
			fmt.Fprintf(&b, "  - tool: %q\n    action: deny\n", pat)
		}
		p, err := Parse("fuzz.yaml", []byte(b.String()))
		if err != nil {
			return
		}
		if got, want := p.Match([]byte(name)), p.matchLinear([]byte(name)); got != want {
			t.Fatalf("Match(%q) = %d; want %d (scan) under %q", name, got, want, pats)
		}
	})
}

func TestExplain(t *testing.T) {
	p, err := Parse("p.yaml", []byte(exampleFile+"  - tool: \"read_*\"\n    action: deny\n"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		tool   string
		label  string
		action Action
		exact  bool
		also   int
		bad    bool
	}{
		{"read_file", "rules[0] read_file", Allow, true, 1, false},
		{"read_dir", "rules[4] read_*", Deny, false, 0, false},
		{"delete_all", "rules[1] delete_*", Deny, false, 0, false},
		{"write_file", "rules[2] write_file", Approve, true, 0, false},
		{"Delete_all", "default", Allow, false, 0, false},
		{"delete_all\x00", "rules[1] delete_*", Deny, false, 0, true},
	}
	for _, tt := range tests {
		e := p.Explain(tt.tool)
		if e.Label != tt.label || e.Action != tt.action || e.Exact != tt.exact || len(e.Also) != tt.also || (e.Malformed != "") != tt.bad {
			t.Errorf("Explain(%q) = %+v; want %s %v exact=%v also=%d malformed=%v", tt.tool, e, tt.label, tt.action, tt.exact, tt.also, tt.bad)
		}
	}
}
