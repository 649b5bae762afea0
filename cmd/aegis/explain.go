package main

import (
	"fmt"
	"os"

	"github.com/aegisrelay/aegis/internal/supervise"
)

// explainEnd prints on stderr, prefixed aegis:, the one sentence that
// says why a session ended abnormally and what to do next
// (supervise.Ending.Sentence); a normal end prints nothing. runWrap calls
// it once the journal is closed, so that the sentence is about the whole
// session, the journal's last write included.
func explainEnd(e supervise.Ending) {
	e.ClientGone = supervise.ClientGone(os.Stdout)
	if s := e.Sentence(); s != "" {
		fmt.Fprintln(os.Stderr, "aegis: "+s)
	}
}
