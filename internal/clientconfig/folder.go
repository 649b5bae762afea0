package clientconfig

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// folder is the folder of a configuration file, opened once by a walk
// that follows no symbolic link. Every later operation (reading the
// file, creating its backup; the temporary file, the rename and the sync
// through atomicfile.DirAt) is relative to that descriptor, so a folder
// on the path swapped for a symlink after the walk cannot send a write
// elsewhere: under sudo, a user who owns a folder on the path could
// otherwise have root write a file of theirs into a folder of root's. A
// folder is not safe for concurrent use.
type folder struct {
	fd       int
	path     string // absolute, without symlinks, as walked
	dev, ino uint64
	uid, gid int
	mode     uint32 // permission bits
}

// openFolder walks the absolute path dir from the root one component at
// a time, refusing a symbolic link anywhere (ErrMoved): the caller
// resolved the links there were, so one found now was put there since.
func openFolder(dir string) (*folder, error) {
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("clientconfig: %s is not an absolute path", dir)
	}
	fd, err := unix.Open("/", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: "/", Err: err}
	}
	walked := "/"
	for _, name := range strings.Split(filepath.Clean(dir), "/") {
		if name == "" {
			continue
		}
		walked = filepath.Join(walked, name)
		// Only the last folder needs reading (fsync); the others are
		// passed through, which needs search permission alone.
		flags := walkFlags
		if walked == filepath.Clean(dir) {
			flags = unix.O_RDONLY
		}
		next, err := unix.Openat(fd, name, flags|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) && isSymlink(walked) {
				return nil, fmt.Errorf("%w: %s is now a symbolic link", ErrMoved, walked)
			}
			return nil, &os.PathError{Op: "open", Path: walked, Err: err}
		}
		fd = next
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "stat", Path: dir, Err: err}
	}
	return &folder{fd: fd, path: filepath.Clean(dir), dev: uint64(st.Dev), ino: uint64(st.Ino), uid: int(st.Uid), gid: int(st.Gid), mode: uint32(st.Mode) & 0o7777}, nil
}

func isSymlink(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode()&os.ModeSymlink != 0
}

// same returns ErrMoved unless d.path still names d: walked again, it
// reaches the folder opened.
func (d *folder) same() error {
	again, err := openFolder(d.path)
	if err != nil {
		if errors.Is(err, ErrMoved) {
			return err
		}
		return fmt.Errorf("%w: %s: %v", ErrMoved, d.path, err)
	}
	defer again.close()
	if again.dev != d.dev || again.ino != d.ino {
		return fmt.Errorf("%w: %s is another folder than the one read", ErrMoved, d.path)
	}
	return nil
}

// open opens name in d for reading, following no symlink; a FIFO opens
// without waiting for a writer (the caller refuses it on fstat).
func (d *folder) open(name string) (*os.File, error) {
	fd, err := unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, fmt.Errorf("%w: %s is now a symbolic link", ErrMoved, d.join(name))
		}
		return nil, &os.PathError{Op: "open", Path: d.join(name), Err: err}
	}
	return os.NewFile(uintptr(fd), d.join(name)), nil
}

// create makes name in d, never over an existing file or through a
// symlink.
func (d *folder) create(name string, mode os.FileMode) (*os.File, error) {
	fd, err := unix.Openat(d.fd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(mode.Perm()))
	if err != nil {
		return nil, &os.PathError{Op: "create", Path: d.join(name), Err: err}
	}
	return os.NewFile(uintptr(fd), d.join(name)), nil
}

// lstat returns the identity of name in d, a symlink not followed.
func (d *folder) lstat(name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if err != nil {
		return st, &os.PathError{Op: "stat", Path: d.join(name), Err: err}
	}
	return st, nil
}

func (d *folder) remove(name string) { unix.Unlinkat(d.fd, name, 0) }

func (d *folder) close() error { return unix.Close(d.fd) }

func (d *folder) join(name string) string { return filepath.Join(d.path, name) }

// writableBy reports whether the owner of a file (uid, gid) could have
// made files in d itself: d is its own (its owner may always chmod it),
// or d's group is the file's and may write it, or anyone may. A file
// given to uid in a folder it cannot write is one it could not have made
// there, so WriteFile gives none.
func (d *folder) writableBy(uid, gid int) bool {
	return d.uid == uid || d.gid == gid && d.mode&0o020 != 0 || d.mode&0o002 != 0
}
