package policy

import (
	"math"
	"slices"
)

// index finds the first rule that matches a tool name by lookups instead of
// a scan of every rule, so that the cost of a decision does not grow with
// the number of rules (BenchmarkPolicyCost in cmd/aegis compares a call
// under 1,000 rules with a call under none):
//
//   - exact names: one map lookup gives the exact rules for the name;
//   - globs with a literal prefix ("fs_*", "db_?_read"): a map from prefix
//     to the globs that have it, looked up once per distinct prefix length;
//   - globs that start with a wildcard but end with a literal ("*_admin"):
//     the same by suffix;
//   - the rest ("*", "*x*", "?"): scanned, in rule order.
//
// Candidates are tried in rule order, and only while their index is below
// the best match found so far: first match wins, as in the file. Lists hold
// rule indexes in ascending order.
type index struct {
	exact      map[string][]int32
	prefix     map[string][]int32
	prefixLens []int
	suffix     map[string][]int32
	suffixLens []int
	scan       []int32
}

func newIndex(rules []Rule) index {
	x := index{exact: map[string][]int32{}, prefix: map[string][]int32{}, suffix: map[string][]int32{}}
	for i := range rules {
		g := &rules[i].glob
		switch {
		case g.exact:
			x.exact[g.lit] = append(x.exact[g.lit], int32(i))
		case g.prefix != "":
			x.prefix[g.prefix] = append(x.prefix[g.prefix], int32(i))
			if !slices.Contains(x.prefixLens, len(g.prefix)) {
				x.prefixLens = append(x.prefixLens, len(g.prefix))
			}
		case g.suffix != "":
			x.suffix[g.suffix] = append(x.suffix[g.suffix], int32(i))
			if !slices.Contains(x.suffixLens, len(g.suffix)) {
				x.suffixLens = append(x.suffixLens, len(g.suffix))
			}
		default:
			x.scan = append(x.scan, int32(i))
		}
	}
	slices.Sort(x.prefixLens)
	slices.Sort(x.suffixLens)
	return x
}

// lookup returns the index of the first rule matching name, or -1. It
// allocates nothing: map lookups by string(name[…]) do not copy.
func (x *index) lookup(rules []Rule, name []byte) int {
	return x.lookupFrom(rules, name, 0)
}

// lookupFrom returns the index of the first rule at or after from that
// matches name, or -1: the next candidate once a rule's condition did not
// hold.
func (x *index) lookupFrom(rules []Rule, name []byte, from int) int {
	best := int32(math.MaxInt32)
	lo := int32(from)
	for _, i := range x.exact[string(name)] {
		if i >= lo {
			best = i
			break
		}
	}
	for _, n := range x.prefixLens {
		if n > len(name) {
			break
		}
		best = first(rules, x.prefix[string(name[:n])], lo, best, name)
	}
	for _, n := range x.suffixLens {
		if n > len(name) {
			break
		}
		best = first(rules, x.suffix[string(name[len(name)-n:])], lo, best, name)
	}
	best = first(rules, x.scan, lo, best, name)
	if best == math.MaxInt32 {
		return -1
	}
	return int(best)
}

// first returns the first rule of list from lo and below best that
// matches name, or best.
func first(rules []Rule, list []int32, lo, best int32, name []byte) int32 {
	if lo > 0 {
		k, _ := slices.BinarySearch(list, lo)
		list = list[k:]
	}
	for _, i := range list {
		if i >= best {
			break
		}
		if rules[i].glob.match(name) {
			return i
		}
	}
	return best
}
