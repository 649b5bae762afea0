//go:build !linux

package clientconfig

import (
	"os"
	"testing"
)

// makeUnwritable makes dir refuse new entries to this process: mode
// 0500, which does not stop root.
func makeUnwritable(t *testing.T, dir string) {
	t.Helper()
	if os.Geteuid() == 0 {
		t.Skip("root writes in a read-only folder, and only Linux's immutable attribute is used here")
	}
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o700) })
}
