package clientconfig

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// fsImmutableFL is FS_IMMUTABLE_FL of linux/fs.h, which x/sys/unix does not
// name: a file or folder that no one, root included, may change.
const fsImmutableFL = 0x10

// makeUnwritable makes dir refuse new entries to this process, root
// included: mode 0500 for anyone else, and for root (whom modes do not
// stop) the immutable attribute, which needs CAP_LINUX_IMMUTABLE and a
// filesystem that keeps it. The cleanup undoes it so the folder can be
// removed.
func makeUnwritable(t *testing.T, dir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		if err := os.Chmod(dir, 0o500); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(dir, 0o700) })
		return
	}
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	flags, err := unix.IoctlGetUint32(int(f.Fd()), unix.FS_IOC_GETFLAGS)
	if err == nil {
		err = unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, int(flags|fsImmutableFL))
	}
	if err != nil {
		t.Fatalf("root, and %s cannot be made immutable (FS_IOC_SETFLAGS): %v", dir, err)
	}
	t.Cleanup(func() {
		f, err := os.Open(dir)
		if err != nil {
			t.Error(err)
			return
		}
		defer f.Close()
		if err := unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, int(flags)); err != nil {
			t.Errorf("clearing the immutable attribute of %s: %v", dir, err)
		}
	})
}
