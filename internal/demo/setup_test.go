package demo

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSetup: a folder named is made (mode 0700) with the key in it, and a
// second demo there keeps that key; none named is a new temporary folder.
func TestSetup(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d", "e")
	f, err := Setup(dir)
	if err != nil {
		t.Fatal(err)
	}
	if f.Dir != dir || f.Key != filepath.Join(dir, "signing.key") || f.Audit != filepath.Join(dir, "audit.jsonl") || len(f.Pub) == 0 {
		t.Errorf("Setup = %+v; want the key and audit log in %s", f, dir)
	}
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o700 {
		t.Errorf("%s has mode %v; want 0700", dir, st.Mode().Perm())
	}
	again, err := Setup(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Pub.Equal(f.Pub) {
		t.Error("a second Setup in the folder made another key")
	}
	tmp, err := Setup("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(tmp.Dir); err != nil {
			t.Error(err)
		}
	})
	if tmp.Dir == "" || filepath.Dir(tmp.Key) != tmp.Dir {
		t.Errorf("Setup(\"\") = %+v; want a new folder holding the key", tmp)
	}
}
