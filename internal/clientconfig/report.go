package clientconfig

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/aegisrelay/aegis/internal/exitcode"
)

// Report writes on w what aegis config op ("wrap" or "unwrap") did to one
// file, given Do's answer a and its error: the file, each entry, the
// diff, and whether the file was written (with --dry-run it is not; with
// --list only the entries are listed). It returns whether the file was
// written; when the command must also say why a file was left as it was,
// the sentence (after "config: ") and the exit status for it: a refusal
// is a usage error, a failure to write an I/O one.
func Report(w io.Writer, op string, a *Applied, err error, dryRun, list bool) (wrote bool, code int, why error) {
	var refused *RefusedError
	switch {
	case errors.As(err, &refused):
		return false, exitcode.Usage, fmt.Errorf("%s: refused, left as it was: %s", refused.Path, Reason(refused.Err))
	case a == nil:
		return false, exitcode.Usage, fmt.Errorf("%s; left as it was", Reason(err))
	case errors.Is(err, ErrNoClient):
		return false, exitcode.Usage, fmt.Errorf("%s: %v; name it with --client ID (claude-desktop, claude-code, cursor, vscode, or another name, which aegis log shows); left as it was", a.Path, err)
	}
	r := a.Result
	fmt.Fprintf(w, "\n%s:\n", a.Path)
	if len(r.Entries) == 0 {
		fmt.Fprintln(w, "  no MCP servers")
	}
	for _, e := range r.Entries {
		what := e.Kind.String()
		if e.Changed {
			what = op + "s"
		}
		fmt.Fprintf(w, "  %-8s %s: %s", what, strings.Join(e.Path, "."), strings.Join(e.Argv, " "))
		if e.Note != "" {
			fmt.Fprintf(w, " (%s)", e.Note)
		}
		fmt.Fprintln(w)
	}
	if list {
		return false, exitcode.OK, nil
	}
	if !r.Changed() {
		fmt.Fprintln(w, "  nothing to change")
		return false, exitcode.OK, nil
	}
	fmt.Fprint(w, r.Diff(a.Path, a.Path+" ("+op+"ped)"))
	switch {
	case dryRun:
		fmt.Fprintln(w, "  --dry-run: not written")
		return false, exitcode.OK, nil
	case errors.Is(err, ErrMoved):
		return false, exitcode.Usage, fmt.Errorf("%s: refused, left as it was: %s (moved while it was read? name the file where it is now)", a.Path, Reason(err))
	case errors.Is(err, ErrChanged):
		return false, exitcode.AuditIO, fmt.Errorf("%s changed while it was rewritten (its client wrote it?); it is left as the client wrote it; run again", a.Path)
	case err != nil:
		return false, exitcode.AuditIO, fmt.Errorf("writing %s: %v; it is left as it was", a.Path, err)
	}
	if a.Backup != "" {
		fmt.Fprintf(w, "  written; the bytes before are kept in %s\n", a.Backup)
	} else {
		fmt.Fprintln(w, "  written; no backup kept (--no-backup)")
	}
	if a.OwnerNote != "" {
		fmt.Fprintf(w, "  owner: %s\n", a.OwnerNote)
	}
	return true, exitcode.OK, nil
}
