package userfiles

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestDefaultKey: signing.key in $XDG_CONFIG_HOME/aegis, ErrNoKey while
// nothing is there, and no error once something is, a dangling symlink
// included (reading it says why).
func TestDefaultKey(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	want := filepath.Join(dir, "aegis", "signing.key")
	if p, err := DefaultKey(); p != want || !errors.Is(err, ErrNoKey) {
		t.Errorf("DefaultKey with no key = %q, %v; want %q, ErrNoKey", p, err, want)
	}
	if err := os.MkdirAll(filepath.Dir(want), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("nowhere", want); err != nil {
		t.Fatal(err)
	}
	if p, err := DefaultKey(); p != want || err != nil {
		t.Errorf("DefaultKey with a dangling symlink = %q, %v; want %q, nil", p, err, want)
	}
	t.Setenv("XDG_CONFIG_HOME", "relative")
	t.Setenv("HOME", "")
	if _, err := DefaultKey(); err == nil || errors.Is(err, ErrNoKey) {
		t.Errorf("DefaultKey with no folder = %v; want why there is none", err)
	}
}
