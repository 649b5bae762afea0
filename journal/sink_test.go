package journal

import (
	"bytes"
	"crypto/ed25519"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/aegisrelay/aegis/journal/tlog"
)

// sink keeps what the journal hands a CheckpointSink.
type sink struct {
	mu    sync.Mutex
	notes [][]byte
	cps   []tlog.Checkpoint
}

func (s *sink) Offer(note []byte, c tlog.Checkpoint) {
	s.mu.Lock()
	s.notes = append(s.notes, note)
	s.cps = append(s.cps, c)
	s.mu.Unlock()
}

// TestCheckpointSink: every checkpoint written is handed to the sink,
// once in the file: the sink's notes are the history's, one for one, the
// last is the checkpoint file's, and each checkpoint handed beside its
// note is what the note says.
func TestCheckpointSink(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	cpf := filepath.Join(dir, "audit.checkpoint")
	key := testKey(t)
	s := &sink{}
	j, err := Open(path, Options{Durability: mustDurability(t, "strict"), Key: key,
		Checkpoint: CheckpointOptions{File: cpf, Every: 1, Interval: -1, Sink: s}})
	if err != nil {
		t.Fatal(err)
	}
	writeCalls(t, j, 3)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	hist, err := os.ReadFile(cpf + HistoryExt)
	if err != nil {
		t.Fatal(err)
	}
	file, err := os.ReadFile(cpf)
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if got := bytes.Join(s.notes, nil); !bytes.Equal(got, hist) {
		t.Errorf("the sink's notes =\n%s\nwant the history's\n%s", got, hist)
	}
	if len(s.notes) == 0 || !bytes.Equal(s.notes[len(s.notes)-1], file) {
		t.Fatalf("the sink's last note is not the checkpoint file's (%d notes)", len(s.notes))
	}
	for i, n := range s.notes {
		c, err := tlog.Open(n, key.Public().(ed25519.PublicKey))
		if err != nil || c != s.cps[i] {
			t.Errorf("note %d says %+v, %v; handed with %+v", i, c, err, s.cps[i])
		}
	}
	if last := s.cps[len(s.cps)-1]; last.Size != uint64(len(logLines(t, path))) {
		t.Errorf("the last checkpoint handed names %d records; want the log's %d", last.Size, len(logLines(t, path)))
	}
}
