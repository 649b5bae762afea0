//go:build unix

package clientconfig

import (
	"io/fs"
	"os"
	"syscall"
)

// owner returns the owner of the file st describes.
func owner(st fs.FileInfo) (uid, gid int, ok bool) {
	s, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return int(s.Uid), int(s.Gid), true
}

// keepOwner gives w the owner f had, when it differs: a file rewritten
// with sudo must stay its user's, or the client can no longer save it.
func keepOwner(w *os.File, f *File) error {
	if !f.owned {
		return nil
	}
	st, err := w.Stat()
	if err != nil {
		return err
	}
	if uid, gid, ok := owner(st); ok && (uid != f.uid || gid != f.gid) {
		return w.Chown(f.uid, f.gid)
	}
	return nil
}
