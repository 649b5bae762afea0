package verify

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/aegisrelay/aegis/journal/segment"
)

// WriteText writes the report as aegis verify prints it for the log
// name: the verdict and how the log was pinned (pinning), the counts,
// the files of a set, the head, then one line per finding and note.
func (r *Report) WriteText(w io.Writer, name, pinning string) {
	fmt.Fprintf(w, "%s: %s (%s)\n", name, strings.ToUpper(r.Status.String()), pinning)
	var intents, outcomes uint64
	for _, s := range r.Sessions {
		intents += s.Intents
		outcomes += s.Outcomes
	}
	fmt.Fprintf(w, "  %s, %s, %s, %s\n", plural(r.Records, "record"), plural(uint64(len(r.Sessions)), "session"),
		plural(intents, "intent"), plural(outcomes, "outcome"))
	if len(r.Files) > 1 {
		var zst uint64
		for _, f := range r.Files {
			if strings.HasSuffix(f.Path, segment.CompressedExt) {
				zst++
			}
		}
		fmt.Fprintf(w, "  %s (%d compressed)\n", plural(uint64(len(r.Files)), "file"), zst)
	}
	if r.HasHead {
		fmt.Fprintf(w, "  head %s\n", r.Head)
	}
	for _, p := range r.Problems {
		fmt.Fprintf(w, "  invalid: %s\n", p)
	}
	for _, p := range r.Gaps {
		fmt.Fprintf(w, "  incomplete: %s\n", p)
	}
	if r.Dropped > 0 {
		fmt.Fprintf(w, "  … and %d more\n", r.Dropped)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
}

// plural is n what, with an s unless n is 1.
func plural(n uint64, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.FormatUint(n, 10) + " " + what + "s"
}
