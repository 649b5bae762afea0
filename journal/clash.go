package journal

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// ErrClash means a head file or checkpoint file of Options names the log
// itself, one of its segments, or (the checkpoint file and its history)
// the head file: writing one would overwrite the other. Open refuses
// such options before it opens anything.
var ErrClash = errors.New("journal: a head or checkpoint file names the log or the head file")

// Overlaps reports whether file names the log at path or a name of its
// segments (path.…), both made absolute.
func Overlaps(path, file string) bool {
	a, _ := filepath.Abs(path)
	f, _ := filepath.Abs(file)
	return a == f || strings.HasPrefix(f, a+".")
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
	case o.HeadFile != "" && Overlaps(path, o.HeadFile):
		return fmt.Errorf("%w: head file %s", ErrClash, o.HeadFile)
	case cp != "" && Overlaps(path, cp):
		return fmt.Errorf("%w: checkpoint file %s", ErrClash, cp)
	case cp != "" && o.HeadFile != "" && HeadClash(o.HeadFile, cp):
		return fmt.Errorf("%w: checkpoint file %s, head file %s", ErrClash, cp, o.HeadFile)
	}
	return nil
}
