package verify

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/aegisrelay/aegis/journal/record"
)

// maxProblems bounds Report.Problems and Report.Gaps each.
const maxProblems = 100

// maxKept bounds the problems findings keeps before it drops those last
// in file order down to maxProblems: a signature failure still to come
// may sort before any of them, so more than maxProblems are kept until
// the end, and the sort that drops them runs once per maxKept −
// maxProblems problems.
const maxKept = 2 * maxProblems

// findings collects what a verification finds, in file order: a problem
// found while reading is reported where the reader is (file, line), and a
// signature that does not verify — found later, by a signature worker —
// is put back where its line was read, so that Report.Problems lists
// every problem in the order of the lines it is about, whichever goroutine
// found it. It is used by the verifier's goroutine only; signature
// failures reach it through sigChecker.
type findings struct {
	rep      *Report
	file     string // the file being read ("" for the set as a whole)
	line     uint64 // the line being judged, 1-based; 0 for the file as a whole
	ord      uint64 // problems reported in order so far: the place of the next one
	queued   uint64 // signatures queued so far (here)
	problems []placed
	dropped  int // problems past maxProblems, already counted out of problems
}

// placed is a problem and its place in file order.
type placed struct {
	at place
	Problem
}

// place orders problems. A problem reported in order takes the next ord;
// a signature queued for checking takes the ord the next problem will
// take, so that it sorts after every problem reported before its line was
// judged and before every one after, and among signatures queued between
// the same two problems in the order they were queued (n), which is
// line order.
type place struct {
	ord  uint64
	late bool   // reported in order (after the signatures queued at ord)
	n    uint64 // for a signature: signatures queued before it
}

func (a place) compare(b place) int {
	if c := cmp.Compare(a.ord, b.ord); c != 0 {
		return c
	}
	if a.late != b.late {
		if a.late {
			return 1
		}
		return -1
	}
	return cmp.Compare(a.n, b.n)
}

// here is the place of a signature queued now: after every problem
// reported so far, and every signature queued so far.
func (f *findings) here() place {
	f.queued++
	return place{ord: f.ord, n: f.queued}
}

// invalid reports a problem (Invalid) at the line being judged; r, if
// not nil, is its record, whose seq locates it too.
func (f *findings) invalid(r *record.Record, format string, args ...any) {
	p := Problem{File: f.file, Line: f.line, Msg: fmt.Sprintf(format, args...)}
	if r != nil {
		p.Seq, p.HasSeq = r.Seq, true
	}
	f.add(placed{at: place{ord: f.ord, late: true}, Problem: p})
	f.ord++
}

// invalidSeq reports a problem (Invalid) about seq, at the line being
// judged.
func (f *findings) invalidSeq(seq uint64, format string, args ...any) {
	f.add(placed{at: place{ord: f.ord, late: true}, Problem: Problem{File: f.file, Line: f.line, Seq: seq, HasSeq: true, Msg: fmt.Sprintf(format, args...)}})
	f.ord++
}

// add keeps p among the problems. Past maxKept, those last in file order
// are dropped (counted), down to maxProblems.
func (f *findings) add(p placed) {
	f.problems = append(f.problems, p)
	if len(f.problems) > maxKept {
		f.trim()
	}
}

// trim sorts the problems kept into file order and drops (counts) those
// past maxProblems.
func (f *findings) trim() {
	f.problems, f.dropped = keepFirst(f.problems, f.dropped)
}

// keepFirst sorts ps into file order and keeps the first maxProblems,
// adding the count of the rest to dropped.
func keepFirst(ps []placed, dropped int) ([]placed, int) {
	slices.SortStableFunc(ps, func(a, b placed) int { return a.at.compare(b.at) })
	if len(ps) > maxProblems {
		dropped += len(ps) - maxProblems
		ps = ps[:maxProblems]
	}
	return ps, dropped
}

// incomplete reports a gap (Incomplete) at the line being judged: what a
// crash or an unfinished session leaves. Gaps are only ever found in
// order.
func (f *findings) incomplete(seq uint64, hasSeq bool, format string, args ...any) {
	if len(f.rep.Gaps) >= maxProblems {
		f.rep.Dropped++
		return
	}
	f.rep.Gaps = append(f.rep.Gaps, Problem{File: f.file, Line: f.line, Seq: seq, HasSeq: hasSeq, Msg: fmt.Sprintf(format, args...)})
}

// done puts the problems kept, in file order, in the report, and counts
// those dropped.
func (f *findings) done() {
	f.trim()
	f.rep.Problems = f.rep.Problems[:0]
	for _, p := range f.problems {
		f.rep.Problems = append(f.rep.Problems, p.Problem)
	}
	f.rep.Dropped += f.dropped
	f.problems, f.dropped = f.problems[:0], 0
}
