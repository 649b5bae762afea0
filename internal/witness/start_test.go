package witness

import (
	"bytes"
	"crypto"
	"crypto/ed25519"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/aegisrelay/aegis/internal/journaltest"
	"github.com/aegisrelay/aegis/journal/tlog"
)

// elsewhere is a key held out of process, as an ssh-agent's is.
type elsewhere struct{ k ed25519.PrivateKey }

func (e elsewhere) Public() crypto.PublicKey { return e.k.Public() }
func (e elsewhere) Sign(r io.Reader, msg []byte, o crypto.SignerOpts) ([]byte, error) {
	return e.k.Sign(r, msg, o)
}

// TestStartCheckpoint: what wrap --witness shows the witnesses at start:
// the checkpoint file's, or one of the log as it is signed now; nothing
// for a new log or a checkpoint file that does not open; and
// ErrKeyElsewhere when only a key out of process could sign one.
func TestStartCheckpoint(t *testing.T) {
	key := journaltest.FuzzKey
	dir := t.TempDir()
	log := filepath.Join(dir, "audit.jsonl")
	if err := os.WriteFile(log, journaltest.Genuine(t), 0o600); err != nil {
		t.Fatal(err)
	}
	tree, err := ReadTree(log)
	if err != nil || tree.Size == 0 {
		t.Fatalf("ReadTree(genuine) = %+v, %v", tree, err)
	}
	s, err := tlog.Signer(tree.Origin, key)
	if err != nil {
		t.Fatal(err)
	}
	note, err := tlog.Sign(tree, s)
	if err != nil {
		t.Fatal(err)
	}
	cpFile := filepath.Join(dir, "audit.checkpoint")
	if err := os.WriteFile(cpFile, note, 0o644); err != nil {
		t.Fatal(err)
	}
	other := journaltest.Key(t)
	tests := []struct {
		name      string
		log, file string
		key       crypto.Signer
		wantNote  bool // a note of tree
		wantErr   error
	}{
		{"checkpoint file", log, cpFile, key, true, nil},
		{"checkpoint file of another key", log, cpFile, other, false, nil},
		{"no checkpoint file: the log's tree, signed now", log, filepath.Join(dir, "none"), key, true, nil},
		{"no checkpoint file, key elsewhere", log, filepath.Join(dir, "none"), elsewhere{key}, false, ErrKeyElsewhere},
		{"new log", filepath.Join(dir, "new.jsonl"), filepath.Join(dir, "none"), key, false, nil},
	}
	for _, tt := range tests {
		got, c, err := StartCheckpoint(tt.log, tt.file, tt.key)
		if !errors.Is(err, tt.wantErr) {
			t.Errorf("%s: StartCheckpoint error = %v; want %v", tt.name, err, tt.wantErr)
		}
		if !tt.wantNote {
			if got != nil {
				t.Errorf("%s: StartCheckpoint = %q; want no note", tt.name, got)
			}
			continue
		}
		if opened, err := tlog.Open(got, key.Public().(ed25519.PublicKey)); err != nil || opened != tree || c != tree {
			t.Errorf("%s: StartCheckpoint = %+v (note opens to %+v, %v); want %+v", tt.name, c, opened, err, tree)
		}
		if tt.file == cpFile && !bytes.Equal(got, note) {
			t.Errorf("%s: StartCheckpoint note = %q; want the file's", tt.name, got)
		}
	}
}
