package clientconfig

import (
	"errors"
	"io/fs"
	"path/filepath"
)

// Action is what Apply does to a file.
type Action int

const (
	// List reads the file and lists its entries; it writes nothing.
	List Action = iota
	// DoWrap wraps the file's stdio entries (Wrap).
	DoWrap
	// DoUnwrap unwraps its wrapped entries (Unwrap).
	DoUnwrap
)

// Applied is what Apply did to one file.
type Applied struct {
	// Path is the file's real path (symlinks followed).
	Path string
	// Result is the rewrite: the entries, and the new bytes.
	Result *Result
	// Written reports whether the file was replaced; Backup is then where
	// the bytes before are kept ("" for none), and OwnerNote is
	// File.OwnerNote.
	Written   bool
	Backup    string
	OwnerNote string
}

// Apply reads the file at path (ReadFile), rewrites it as act says, and
// unless act is List, dryRun is set or nothing changed, writes it back,
// keeping a backup under the folder backups unless it is "" (WriteFile). A file that cannot be read or
// is refused returns a nil Applied and the error; a failed write returns
// the Applied (the rewrite that was not written) with the error
// (ErrMoved, ErrChanged, or the I/O error), the file as it was.
func Apply(path string, act Action, o Options, dryRun bool, backups string) (*Applied, error) {
	f, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rewrite := Scan
	switch act {
	case DoWrap:
		rewrite = Wrap
	case DoUnwrap:
		rewrite = Unwrap
	}
	r, err := rewrite(f.Data, o)
	if err != nil {
		return nil, &RefusedError{Path: f.Path, Err: err}
	}
	a := &Applied{Path: f.Path, Result: r}
	if act == List || dryRun || !r.Changed() {
		return a, nil
	}
	if a.Backup, err = WriteFile(f, r.Out, backups); err != nil {
		return a, err
	}
	a.Written, a.OwnerNote = true, f.OwnerNote()
	return a, nil
}

// RefusedError is a file read but refused by the rewrite (ErrSyntax,
// ErrShape): Path is the file's real path.
type RefusedError struct {
	Path string
	Err  error
}

func (e *RefusedError) Error() string { return e.Path + ": " + e.Err.Error() }

func (e *RefusedError) Unwrap() error { return e.Err }

// Existing returns the well-known files of Locations(e) that exist, each
// file once however many of its paths are listed (a symlink to another),
// and every path looked at. A path that cannot be resolved for another
// reason than its absence is kept: reading it says why.
func Existing(e Env) (found []Location, looked []string) {
	seen := map[string]bool{}
	for _, l := range Locations(e) {
		looked = append(looked, l.Path)
		real, err := filepath.EvalSymlinks(l.Path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			real = l.Path
		}
		if !seen[real] {
			seen[real] = true
			found = append(found, l)
		}
	}
	return found, looked
}
