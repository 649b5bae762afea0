package clientconfig

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/aegisrelay/aegis/internal/atomicfile"
	"github.com/aegisrelay/aegis/internal/regular"
	"golang.org/x/sys/unix"
)

// MaxFile bounds the configuration files ReadFile reads: ~/.claude.json
// keeps every project's history and grows to megabytes, but no
// configuration is this large, and a larger file is refused before a
// byte of it is read.
const MaxFile = 16 << 20

// File is a configuration file as read: its real path (symlinks
// followed once, when it was opened), its bytes and its permission bits.
// It holds its folder open: Close it when done. A File is not safe for
// concurrent use.
type File struct {
	Path string
	Data []byte
	Mode fs.FileMode

	dir      *folder
	name     string // in dir
	dev, ino uint64 // the file read
	uid, gid int    // its owner
}

// ReadFile reads the configuration file at path. Symbolic links in path
// are resolved once; the folder so named is then opened by a walk that
// follows none (a link found there now was put there since: ErrMoved),
// and the file is read relative to it, not followed if it is a link. It
// refuses anything but a regular file (ErrNotRegular; a FIFO is not
// waited on), a file with other names (ErrShape: hard links, which the
// rewrite would leave behind), and a file over MaxFile bytes
// (ErrTooLarge).
func ReadFile(path string) (*File, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, err
	}
	if real, err = filepath.Abs(real); err != nil {
		return nil, err
	}
	dir, err := openFolder(filepath.Dir(real))
	if err != nil {
		return nil, err
	}
	f, err := readIn(dir, filepath.Base(real))
	if err != nil {
		dir.close()
		return nil, err
	}
	return f, nil
}

func readIn(dir *folder, name string) (*File, error) {
	r, err := dir.open(name)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(r.Fd()), &st); err != nil {
		return nil, &os.PathError{Op: "stat", Path: r.Name(), Err: err}
	}
	fi, err := r.Stat()
	if err != nil {
		return nil, err
	}
	switch {
	case !fi.Mode().IsRegular():
		return nil, refuse(ErrNotRegular, "%s is %s", r.Name(), regular.Describe(fi.Mode()))
	case st.Nlink != 1:
		return nil, refuse(ErrShape, "%s has %d names (hard links); rewritten, the others would keep the old bytes", r.Name(), st.Nlink)
	case fi.Size() > MaxFile:
		return nil, refuse(ErrTooLarge, "%s is %d bytes, over %d MiB", r.Name(), fi.Size(), MaxFile>>20)
	}
	data, err := io.ReadAll(io.LimitReader(r, MaxFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFile { // it grew while read
		return nil, refuse(ErrTooLarge, "%s is over %d MiB", r.Name(), MaxFile>>20)
	}
	return &File{
		Path: r.Name(), Data: data, Mode: fi.Mode().Perm(),
		dir: dir, name: name, dev: uint64(st.Dev), ino: uint64(st.Ino), uid: int(st.Uid), gid: int(st.Gid),
	}, nil
}

// Close releases the folder f holds open.
func (f *File) Close() error {
	if f.dir == nil {
		return nil
	}
	err := f.dir.close()
	f.dir = nil
	return err
}

// OwnerNote says, when WriteFile gives the new file and its backup
// another owner than the original's, why: the original's owner could
// not have made files in its folder (say, a user's file in a folder of
// root's, rewritten with sudo), and is not given any there. It is ""
// when the owner is kept.
func (f *File) OwnerNote() string {
	if f.keepOwner() || f.uid == os.Geteuid() {
		return ""
	}
	return fmt.Sprintf("uid %d owns %s but cannot write %s: the new file and the backup are not given to it", f.uid, filepath.Base(f.Path), f.dir.path)
}

// keepOwner reports whether new files get the original's owner: only
// when that owner could have made them there itself.
func (f *File) keepOwner() bool { return f.dir.writableBy(f.uid, f.gid) }

// BackupPath returns where WriteFile keeps the bytes of the file at path
// (an absolute path without symlinks: File.Path) before it rewrites it:
// the same path under the folder dir. There is one backup per file, and
// none inside a project's folder, where it would be committed with it.
func BackupPath(dir, path string) string {
	return filepath.Join(dir, filepath.Clean("/"+path))
}

// WriteFile replaces f's file with data: first, unless backups is "",
// f.Data is kept in BackupPath(backups, f.Path) (mode 0600, the
// writer's, replacing the backup of an earlier rewrite), then the new
// bytes are written, atomically, with f.Mode and, when its owner could
// write the folder (OwnerNote), the original's owner. Every step on the
// file is relative to the folder ReadFile opened; if f.Path no longer
// names that folder and file (a folder on the path moved or swapped for
// a symlink, ErrMoved) nothing is written, and if the file no longer
// holds f.Data it is left alone (ErrChanged): a client rewrote it since
// it was read. It returns the backup's path ("" without one).
//
// What is left on failure: before the rename, the original file as it
// was (and perhaps its backup); the rename itself is atomic.
func WriteFile(f *File, data []byte, backups string) (backup string, err error) {
	if f.dir == nil {
		return "", fmt.Errorf("clientconfig: WriteFile of a closed File")
	}
	if err := f.dir.same(); err != nil {
		return "", err
	}
	if err := f.unchanged(); err != nil {
		return "", err
	}
	if backups != "" {
		if backup, err = f.writeBackup(backups); err != nil {
			return "", fmt.Errorf("keeping a backup of %s: %w", f.Path, err)
		}
	}
	// The temporary file is made, renamed and synced relative to the
	// folder's descriptor, as every other step is. The check before the
	// rename narrows, not closes, the window in which a client's own
	// write would be lost: there is no compare-and-swap on a file name.
	err = atomicfile.Replace(atomicfile.DirAt(f.dir.fd, f.dir.path), f.name, data, atomicfile.Options{
		Perm:         f.Mode,
		Prepare:      func(w atomicfile.File) error { return f.prepare(w.(*os.File)) },
		BeforeRename: f.unchanged,
	})
	var ae *atomicfile.Error
	if errors.As(err, &ae) && ae.Op == atomicfile.OpCheck {
		err = ae.Err // ErrChanged or the error reading the file, as is
	}
	return backup, err
}

// unchanged returns ErrChanged unless f's name in its folder is still
// the file read, with the bytes read.
func (f *File) unchanged() error {
	st, err := f.dir.lstat(f.name)
	if err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || uint64(st.Dev) != f.dev || uint64(st.Ino) != f.ino {
		return refuse(ErrChanged, "%s is another file than the one read", f.Path)
	}
	r, err := f.dir.open(f.name)
	if err != nil {
		return err
	}
	defer r.Close()
	cur, err := io.ReadAll(io.LimitReader(r, MaxFile+1))
	if err != nil {
		return err
	}
	if !bytes.Equal(cur, f.Data) {
		return refuse(ErrChanged, "%s", f.Path)
	}
	return nil
}

// writeBackup keeps f.Data in BackupPath(backups, f.Path), replacing it
// atomically. The folders are made (mode 0700) and opened one at a time
// without following a symlink: the backups folder may be another user's
// under sudo, and a link planted there must not send root's write
// elsewhere.
func (f *File) writeBackup(backups string) (string, error) {
	path := BackupPath(backups, f.Path)
	dir, err := makeFolder(backups, filepath.Dir(filepath.Clean("/"+f.Path)))
	if err != nil {
		return "", err
	}
	defer dir.close()
	err = atomicfile.Replace(atomicfile.DirAt(dir.fd, dir.path), filepath.Base(path), f.Data, atomicfile.Options{Perm: 0o600})
	return path, err
}

// prepare sets w's mode (the umask narrowed the one it was created
// with) and, by descriptor, the owner of f's file when it is kept.
func (f *File) prepare(w *os.File) error {
	if f.keepOwner() {
		if err := chownIfOther(w, f.uid, f.gid); err != nil {
			return err
		}
	}
	return w.Chmod(f.Mode)
}

// chownIfOther gives w the owner uid:gid when it has another: a file
// rewritten with sudo must stay its user's, or the client can no longer
// save it.
func chownIfOther(w *os.File, uid, gid int) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(w.Fd()), &st); err != nil {
		return err
	}
	if int(st.Uid) != uid || int(st.Gid) != gid {
		return w.Chown(uid, gid)
	}
	return nil
}
