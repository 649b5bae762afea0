package atomicfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
)

// File is a temporary file as a Dir creates it: written, synced and
// closed by Replace.
type File interface {
	io.Writer
	Sync() error
	Close() error
}

// Dir is the folder a file is replaced in. Names are relative to it and
// never contain a slash. A Dir need not be safe for concurrent use.
type Dir interface {
	// Create creates name with the permission bits perm (the umask
	// applies) for writing, never through a symbolic link. If exclusive,
	// it fails with an error matching fs.ErrExist when name exists;
	// otherwise it truncates an existing file.
	Create(name string, perm fs.FileMode, exclusive bool) (File, error)
	// Rename renames from to to, replacing to atomically.
	Rename(from, to string) error
	// Remove removes name.
	Remove(name string) error
	// Sync makes the folder's entries durable (fsync of the folder).
	Sync() error
}

// The steps of a replacement, as an Error's Op names them.
const (
	OpCreate = "create"      // creating the temporary file
	OpWrite  = "write"       // writing, preparing, syncing or closing it
	OpRename = "rename"      // renaming it over the file
	OpSync   = "sync folder" // syncing the folder after the rename
	OpCheck  = "check"       // Options.BeforeRename refused
)

// Error is a replacement that failed at step Op; Name is the file the
// step acted on (the temporary file, or the file replaced for OpRename
// and the folder for OpSync, given as ".").
type Error struct {
	Op, Name string
	Err      error
}

func (e *Error) Error() string {
	return fmt.Sprintf("atomicfile: %s %s: %v", e.Op, e.Name, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Options say how Replace makes and checks the temporary file. The zero
// value makes a new file with a random name, mode 0600.
type Options struct {
	// Perm is the temporary file's permission bits, and so the file's;
	// 0 means 0600. The umask applies; Prepare may set them exactly.
	Perm fs.FileMode
	// Temp is the temporary file's name. Empty: a new name, "." and the
	// file's name and random hex digits, created exclusively. Set, the
	// name is truncated if present: a caller that leaves its temporary
	// file under one known name after a crash, and overwrites it next
	// time rather than litter the folder.
	Temp string
	// Prepare, if set, runs on the temporary file once data is written
	// and before it is synced (to set its mode or owner).
	Prepare func(File) error
	// BeforeRename, if set, runs after the temporary file is synced and
	// closed, just before the rename; an error from it stops the
	// replacement (OpCheck) and leaves the file as it was.
	BeforeRename func() error
}

// Replace replaces name in d with data: a temporary file is created in d,
// written, synced and closed, renamed over name, and d is synced. On a
// failure before the rename the temporary file is removed (best effort)
// and name is untouched.
func Replace(d Dir, name string, data []byte, o Options) (err error) {
	if o.Perm == 0 {
		o.Perm = 0o600
	}
	tmp, f, err := create(d, name, o)
	if err != nil {
		return &Error{Op: OpCreate, Name: tmp, Err: err}
	}
	renamed := false
	defer func() {
		if !renamed {
			d.Remove(tmp)
		}
	}()
	_, err = f.Write(data)
	if err == nil && o.Prepare != nil {
		err = o.Prepare(f)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return &Error{Op: OpWrite, Name: tmp, Err: err}
	}
	if o.BeforeRename != nil {
		if err := o.BeforeRename(); err != nil {
			return &Error{Op: OpCheck, Name: name, Err: err}
		}
	}
	if err := d.Rename(tmp, name); err != nil {
		return &Error{Op: OpRename, Name: name, Err: err}
	}
	renamed = true
	if err := d.Sync(); err != nil {
		return &Error{Op: OpSync, Name: ".", Err: err}
	}
	return nil
}

// create makes the temporary file: o.Temp, or a fresh random name.
func create(d Dir, name string, o Options) (string, File, error) {
	if o.Temp != "" {
		f, err := d.Create(o.Temp, o.Perm, false)
		return o.Temp, f, err
	}
	var tmp string
	for range 100 {
		var b [8]byte
		rand.Read(b[:])
		tmp = "." + name + "." + hex.EncodeToString(b[:]) + ".tmp"
		f, err := d.Create(tmp, o.Perm, true)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return tmp, f, err
	}
	return tmp, nil, fmt.Errorf("no free temporary name beside %s", name)
}

// WriteFile replaces the file at path with data, mode perm (0 means
// 0600): OpenDir on its folder, then Replace.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	d, err := OpenDir(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return Replace(d, filepath.Base(path), data, Options{Perm: perm})
}
