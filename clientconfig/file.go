package clientconfig

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/aegisrelay/aegis/internal/regular"
)

// maxFile bounds what ReadFile reads: ~/.claude.json keeps every
// project's history and grows to megabytes, but no configuration is this
// large.
const maxFile = 64 << 20

// File is a configuration file as read: its real path (symlinks
// followed), its bytes and its permission bits.
type File struct {
	Path string
	Data []byte
	Mode fs.FileMode

	uid, gid int // the owner, when owned
	owned    bool
}

// ReadFile reads the configuration file at path, following symlinks. It
// refuses (ErrNotRegular) anything but a regular file.
func ReadFile(path string) (*File, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, err
	}
	if real, err = filepath.Abs(real); err != nil {
		return nil, err
	}
	// Checked before opening too: opening a FIFO waits for a writer.
	if st, err := os.Stat(real); err != nil {
		return nil, err
	} else if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is %s", ErrNotRegular, real, regular.Describe(st.Mode()))
	}
	f, err := os.Open(real)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is %s", ErrNotRegular, real, regular.Describe(st.Mode()))
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxFile {
		return nil, fmt.Errorf("%w: %s is over %d MiB", ErrShape, real, maxFile>>20)
	}
	file := &File{Path: real, Data: data, Mode: st.Mode().Perm()}
	file.uid, file.gid, file.owned = owner(st)
	return file, nil
}

// BackupName returns the name of the backup of path made at t:
// path.aegis-backup-20060102T150405Z.
func BackupName(path string, t time.Time) string {
	return path + ".aegis-backup-" + t.UTC().Format("20060102T150405Z")
}

// WriteFile replaces f's file with data: first a backup of f.Data beside
// it (BackupName at now, or with -2, -3, … appended when that name is
// taken), then the new bytes, atomically. Both get f.Mode and the
// original's owner. If the file no
// longer holds f.Data it is left alone (ErrChanged): a client rewrote it
// since it was read. It returns the backup's path.
//
// What is left on failure: before the rename, the original file as it
// was (and perhaps its backup); the rename itself is atomic.
func WriteFile(f *File, data []byte, now time.Time) (backup string, err error) {
	dir := filepath.Dir(f.Path)
	backup, err = writeBackup(f, now)
	if err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(f.Path)+".aegis-*")
	if err != nil {
		return backup, err
	}
	defer func() {
		if err != nil {
			os.Remove(tmp.Name())
		}
	}()
	if err := writeSync(tmp, data, f); err != nil {
		return backup, err
	}
	// The check narrows, not closes, the window in which a client's own
	// write would be lost: there is no compare-and-swap on a file name.
	cur, err := os.ReadFile(f.Path)
	if err != nil {
		return backup, err
	}
	if !bytes.Equal(cur, f.Data) {
		return backup, fmt.Errorf("%w: %s", ErrChanged, f.Path)
	}
	if err := os.Rename(tmp.Name(), f.Path); err != nil {
		return backup, err
	}
	return backup, regular.SyncDir(dir)
}

// writeBackup keeps f.Data beside f.Path, never over an existing file.
func writeBackup(f *File, now time.Time) (string, error) {
	base := BackupName(f.Path, now)
	for n := 1; ; n++ {
		name := base
		if n > 1 {
			name = fmt.Sprintf("%s-%d", base, n)
		}
		b, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, f.Mode)
		if errors.Is(err, fs.ErrExist) && n < 100 {
			continue
		}
		if err != nil {
			return "", err
		}
		if err := writeSync(b, f.Data, f); err != nil {
			os.Remove(name)
			return "", err
		}
		return name, nil
	}
}

// writeSync writes data to w, sets the mode (the umask narrowed the one
// it was created with) and the owner of f's file, syncs and closes it.
func writeSync(w *os.File, data []byte, f *File) error {
	_, err := w.Write(data)
	if err == nil {
		err = keepOwner(w, f)
	}
	if err == nil {
		err = w.Chmod(f.Mode)
	}
	if err == nil {
		err = w.Sync()
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	return err
}
