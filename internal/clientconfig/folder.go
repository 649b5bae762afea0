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
				return nil, refuse(ErrMoved, "%s is now a symbolic link", walked)
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

// makeFolder opens the folder rel (slash-separated) under base, making
// what is missing (mode 0700). base is made as os.MkdirAll does and its
// symlinks resolved: it is the caller's own. Below it, each folder is
// made and entered with mkdirat and openat, following no symlink.
func makeFolder(base, rel string) (*folder, error) {
	if err := os.MkdirAll(base, 0o700); err != nil {
		return nil, err
	}
	real, err := filepath.EvalSymlinks(base)
	if err == nil {
		real, err = filepath.Abs(real)
	}
	if err != nil {
		return nil, err
	}
	d, err := openFolder(real)
	if err != nil {
		return nil, err
	}
	for _, name := range strings.Split(rel, "/") {
		if name == "" {
			continue
		}
		if err := unix.Mkdirat(d.fd, name, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
			d.close()
			return nil, &os.PathError{Op: "mkdir", Path: d.join(name), Err: err}
		}
		fd, err := unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		d.close()
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: d.join(name), Err: err}
		}
		d = &folder{fd: fd, path: d.join(name)}
	}
	return d, nil
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
		return refuse(ErrMoved, "%s: %v", d.path, err)
	}
	defer again.close()
	if again.dev != d.dev || again.ino != d.ino {
		return refuse(ErrMoved, "%s is another folder than the one read", d.path)
	}
	return nil
}

// open opens name in d for reading, following no symlink; a FIFO opens
// without waiting for a writer (the caller refuses it on fstat).
func (d *folder) open(name string) (*os.File, error) {
	fd, err := unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, refuse(ErrMoved, "%s is now a symbolic link", d.join(name))
		}
		return nil, &os.PathError{Op: "open", Path: d.join(name), Err: err}
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
