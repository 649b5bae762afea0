package journal

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/aegisrelay/aegis/journal/segment"
)

// ErrClash means a head file or checkpoint file of Options names the log
// itself, one of its segments or its spare, or (the checkpoint file and
// its history) the head file: writing one would overwrite the other. Open refuses
// such options before it opens anything.
var ErrClash = errors.New("journal: a head or checkpoint file names the log or the head file")

// Overlaps reports whether file names the log at path or a name that
// begins as the log's does and a dot (path.…: its segments, its spare,
// any name the journal may use beside it), both made absolute: wrap
// refuses those for its head and checkpoint files. Open refuses fewer:
// the files it writes (the log, its segments, their temporary copies and
// the spare).
func Overlaps(path, file string) bool {
	a, _ := filepath.Abs(path)
	f, _ := filepath.Abs(file)
	return a == f || strings.HasPrefix(f, a+".")
}

// writes reports whether file is one the journal writes for the log at
// path: the log, a segment or its temporary compressed copy, the spare.
func writes(path, file string) bool {
	a, _ := filepath.Abs(path)
	f, _ := filepath.Abs(file)
	if f == a || f == a+segment.SpareExt {
		return true
	}
	info, ok := segment.ParseName(strings.TrimSuffix(f, segment.TmpExt))
	return ok && info.Base == a
}

// HeadClash reports whether the checkpoint file cp, or its history,
// is the head file head.
func HeadClash(head, cp string) bool {
	h, _ := filepath.Abs(head)
	c, _ := filepath.Abs(cp)
	return h == c || h == c+HistoryExt
}

// checkFiles is Open's refusal of options whose files clash with the log
// at path or with each other (ErrClash).
func checkFiles(path string, o Options) error {
	cp := o.Checkpoint.File
	switch {
	case o.HeadFile != "" && writes(path, o.HeadFile):
		return fmt.Errorf("%w: head file %s", ErrClash, o.HeadFile)
	case cp != "" && writes(path, cp):
		return fmt.Errorf("%w: checkpoint file %s", ErrClash, cp)
	case cp != "" && o.HeadFile != "" && HeadClash(o.HeadFile, cp):
		return fmt.Errorf("%w: checkpoint file %s, head file %s", ErrClash, cp, o.HeadFile)
	}
	return nil
}
