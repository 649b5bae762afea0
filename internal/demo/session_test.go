package demo

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestKey: the first call makes the key and its .pub, mode 0600; a later
// one reuses it; a file that is no key is refused, not replaced.
func TestKey(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "signing.key")
	pub, err := Key(path)
	if err != nil {
		t.Fatalf("Key(%s) = %v; want a new key", path, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("Key(%s): stat = %v, %v; want mode 0600", path, fi, err)
	}
	if _, err := os.Stat(path + ".pub"); err != nil {
		t.Errorf("Key(%s): no .pub beside it: %v", path, err)
	}
	again, err := Key(path)
	if err != nil || !bytes.Equal(again, pub) {
		t.Errorf("Key(%s) again = %x, %v; want the same key %x", path, again, err, pub)
	}
	junk := filepath.Join(dir, "junk.key")
	if err := os.WriteFile(junk, []byte("not a key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Key(junk); err == nil {
		t.Errorf("Key(a file that is no key) = nil error; want it refused")
	}
	if b, _ := os.ReadFile(junk); string(b) != "not a key\n" {
		t.Errorf("Key(a file that is no key) left %q; want it kept", b)
	}
}

// TestRecordNoBinary: an aegis that cannot be started is an error, with
// nothing written to out.
func TestRecordNoBinary(t *testing.T) {
	var out bytes.Buffer
	dir := t.TempDir()
	err := Record(filepath.Join(dir, "missing"), filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "k"), &out)
	if err == nil || out.Len() != 0 {
		t.Errorf("Record(missing binary) = %v, wrote %q; want an error and nothing written", err, out.String())
	}
}
