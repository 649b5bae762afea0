package atomicfile

import (
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// OSDir is a folder held open by descriptor: every operation is
// relative to it (openat, renameat, unlinkat), so a folder on its path
// renamed or swapped for a symbolic link after OpenDir does not move
// the files Replace makes. An OSDir is safe for concurrent use; Close
// it when done.
type OSDir struct {
	fd   int
	path string // as given to OpenDir, for error messages
}

// OpenDir opens the folder path.
func OpenDir(path string) (*OSDir, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return &OSDir{fd: fd, path: path}, nil
}

// DirAt returns the folder open on fd, which path names in error
// messages. fd stays the caller's: Close on the OSDir returned does not
// close it.
func DirAt(fd int, path string) *OSDir { return &OSDir{fd: fd, path: path} }

// Close closes the folder OpenDir opened.
func (d *OSDir) Close() error {
	if d.fd < 0 {
		return nil
	}
	err := unix.Close(d.fd)
	d.fd = -1
	return err
}

func (d *OSDir) join(name string) string { return filepath.Join(d.path, name) }

// Create implements Dir with openat(2) and O_NOFOLLOW.
func (d *OSDir) Create(name string, perm fs.FileMode, exclusive bool) (File, error) {
	flags := unix.O_WRONLY | unix.O_CREAT | unix.O_NOFOLLOW | unix.O_CLOEXEC
	if exclusive {
		flags |= unix.O_EXCL
	} else {
		flags |= unix.O_TRUNC
	}
	fd, err := unix.Openat(d.fd, name, flags, uint32(perm.Perm()))
	if err != nil {
		return nil, &os.PathError{Op: "create", Path: d.join(name), Err: err}
	}
	return os.NewFile(uintptr(fd), d.join(name)), nil
}

// Rename implements Dir with renameat(2).
func (d *OSDir) Rename(from, to string) error {
	if err := unix.Renameat(d.fd, from, d.fd, to); err != nil {
		return &os.LinkError{Op: "rename", Old: d.join(from), New: d.join(to), Err: err}
	}
	return nil
}

// Remove implements Dir with unlinkat(2).
func (d *OSDir) Remove(name string) error {
	if err := unix.Unlinkat(d.fd, name, 0); err != nil {
		return &os.PathError{Op: "remove", Path: d.join(name), Err: err}
	}
	return nil
}

// Sync implements Dir with fsync(2) of the folder.
func (d *OSDir) Sync() error {
	if err := unix.Fsync(d.fd); err != nil {
		return &os.PathError{Op: "fsync", Path: d.path, Err: err}
	}
	return nil
}
