package logview

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/term"
)

// ProgressMin is the input size from which aegis verify and log show a
// progress bar (on a terminal): below it they finish before a bar would
// help.
const ProgressMin = 32 << 20

// Progress is a bar over the bytes of a log's files, drawn only on a
// terminal and for files of at least a minimum size; otherwise, and for
// the zero Progress, every method does nothing. Not goroutine-safe: one
// reader calls Add.
//
// It is drawn here rather than by a progress-bar library: such a library
// and its colour and Unicode tables are initialized in every aegis start,
// wrap's included, for a line that only verify and log draw.
type Progress struct {
	bar *bar
}

// bar is one line redrawn in place: the description, a 30-cell bar, the
// share done and the bytes, at most every 100 ms; Done clears it.
type bar struct {
	w          *os.File
	desc       string
	total, cur int64
	drawn      time.Time
}

// NewProgress returns the bar described by desc over the regular files
// among paths, on w if it is a terminal and the files hold at least min
// bytes (ProgressMin, for a command).
func NewProgress(w *os.File, desc string, paths []string, min int64) *Progress {
	if !term.IsTerminal(int(w.Fd())) {
		return &Progress{}
	}
	var total int64
	for _, p := range paths {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			total += st.Size()
		}
	}
	if total < min || total == 0 {
		return &Progress{}
	}
	b := &bar{w: w, desc: desc, total: total}
	b.draw()
	return &Progress{bar: b}
}

func (b *bar) draw() {
	const width = 30
	cells := int(min(b.cur, b.total) * width / b.total)
	fmt.Fprintf(b.w, "\r%s %3d%% [%s%s] %s/%s", b.desc, min(b.cur, b.total)*100/b.total,
		strings.Repeat("=", cells), strings.Repeat(" ", width-cells), mib(b.cur), mib(b.total))
	b.drawn = time.Now()
}

// mib formats a byte count in MiB with one decimal.
func mib(n int64) string {
	return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
}

// Add counts n more bytes read (segment.Open's progress).
func (p *Progress) Add(n int) {
	if p.bar != nil {
		p.bar.cur += int64(n)
		if time.Since(p.bar.drawn) >= 100*time.Millisecond {
			p.bar.draw()
		}
	}
}

// Done clears the bar.
func (p *Progress) Done() {
	if p.bar != nil {
		fmt.Fprint(p.bar.w, "\r\x1b[K")
	}
}
