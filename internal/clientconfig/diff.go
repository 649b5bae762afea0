package clientconfig

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
)

// diffContext is how many unchanged lines a hunk shows around a change.
const diffContext = 3

// Diff returns the change from Src to Out as a unified diff with the
// given file names, or "" when nothing changed. It is computed from the
// edits the rewrite made, not by comparing the texts, so it costs the
// size of the file once however large the file is (~/.claude.json holds
// every project's history).
func (r *Result) Diff(oldName, newName string) string {
	if len(r.edits) == 0 {
		return ""
	}
	oldLines, newLines := lineStarts(r.Src), lineStarts(r.Out)
	// Each edit replaces old lines [a, b) by new lines [c, d); the lines
	// around it are the same in both texts.
	type change struct{ a, b, c, d int }
	var changes []change
	delta := 0
	for _, e := range r.edits {
		e = toLineStart(r.Src, e)
		ns := e.start + delta
		ne := ns + len(e.text)
		delta += len(e.text) - (e.end - e.start)
		c := change{a: lineOf(oldLines, e.start), c: lineOf(newLines, ns)}
		if atLineStart(r.Src, e.start) && atLineStart(r.Src, e.end) && (e.text == "" || e.text[len(e.text)-1] == '\n') {
			c.b, c.d = lineAt(r.Src, oldLines, e.end), lineAt(r.Out, newLines, ne)
		} else {
			c.b, c.d = lineOf(oldLines, e.end)+1, lineOf(newLines, ne)+1
		}
		if n := len(changes); n > 0 && changes[n-1].b >= c.a {
			changes[n-1].b, changes[n-1].d = max(changes[n-1].b, c.b), max(changes[n-1].d, c.d)
			continue
		}
		changes = append(changes, c)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "--- %s\n+++ %s\n", oldName, newName)
	line := func(prefix byte, text []byte, starts []int, i int) {
		b.WriteByte(prefix)
		s := text[starts[i]:]
		if i+1 < len(starts) {
			s = text[starts[i]:starts[i+1]]
		}
		b.Write(s)
		if !bytes.HasSuffix(s, []byte("\n")) {
			b.WriteString("\n\\ No newline at end of file\n")
		}
	}
	for i := 0; i < len(changes); {
		// A hunk: changes whose context would touch or overlap.
		j := i + 1
		for j < len(changes) && changes[j].a-changes[j-1].b <= 2*diffContext {
			j++
		}
		first, last := changes[i], changes[j-1]
		oa, ob := max(0, first.a-diffContext), min(len(oldLines), last.b+diffContext)
		na, nb := first.c-(first.a-oa), last.d+(ob-last.b)
		fmt.Fprintf(&b, "@@ -%s +%s @@\n", hunkRange(oa, ob), hunkRange(na, nb))
		at := oa
		for _, c := range changes[i:j] {
			for ; at < c.a; at++ {
				line(' ', r.Src, oldLines, at)
			}
			for k := c.a; k < c.b; k++ {
				line('-', r.Src, oldLines, k)
			}
			for k := c.c; k < c.d; k++ {
				line('+', r.Out, newLines, k)
			}
			at = c.b
		}
		for ; at < ob; at++ {
			line(' ', r.Src, oldLines, at)
		}
		i = j
	}
	return b.String()
}

// atLineStart reports whether off is where a line starts (or the end).
func atLineStart(text []byte, off int) bool {
	return off == 0 || off == len(text) || text[off-1] == '\n'
}

// lineAt returns the line starting at off, which atLineStart accepts; the
// end of the text is one past the last line.
func lineAt(text []byte, starts []int, off int) int {
	if off == len(text) {
		return len(starts)
	}
	return lineOf(starts, off)
}

// toLineStart returns an edit making the same text as e that starts at
// the beginning of a line, if sliding e to the left gets there: inserting
// "x,\n  " after "\n  " is inserting "  x,\n" before it. A diff then shows
// whole added or removed lines, not changed ones.
func toLineStart(src []byte, e edit) edit {
	switch {
	case e.start == e.end && e.text != "":
		s, t := e.start, e.text
		for s > 0 && src[s-1] != '\n' && src[s-1] == t[len(t)-1] {
			s, t = s-1, string(src[s-1])+t[:len(t)-1]
		}
		if s == 0 || src[s-1] == '\n' {
			return edit{s, s, t}
		}
	case e.text == "" && e.end > e.start:
		s, end := e.start, e.end
		for s > 0 && src[s-1] != '\n' && src[s-1] == src[end-1] {
			s, end = s-1, end-1
		}
		if s == 0 || src[s-1] == '\n' {
			return edit{s, end, ""}
		}
	}
	return e
}

// hunkRange formats lines [a, b) (0-based) as a unified diff range; an
// empty range names the line before it.
func hunkRange(a, b int) string {
	switch n := b - a; n {
	case 0:
		return fmt.Sprintf("%d,0", a)
	case 1:
		return fmt.Sprint(a + 1)
	default:
		return fmt.Sprintf("%d,%d", a+1, n)
	}
}

// lineStarts returns the offset of each line's first byte; a final line
// break does not start a line.
func lineStarts(text []byte) []int {
	starts := []int{0}
	for i, c := range text {
		if c == '\n' && i+1 < len(text) {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// lineOf returns the line holding offset off.
func lineOf(starts []int, off int) int {
	return sort.Search(len(starts), func(i int) bool { return starts[i] > off }) - 1
}
