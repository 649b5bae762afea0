package serve

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aegisrelay/aegis/internal/userfiles"
	"github.com/aegisrelay/aegis/journal"
	"github.com/aegisrelay/aegis/journal/record"
)

// TestLogOptions: wrap's log flags. A size of 0 never rotates and one
// below 4KiB is refused; the head file may not be the audit file or one
// of its segments; the checkpoint file defaults to beside the head file,
// may not be the audit file, one of its segments or the head file, and
// --checkpoint-every needs a file.
func TestLogOptions(t *testing.T) {
	dir := t.TempDir()
	audit := filepath.Join(dir, "audit.jsonl")
	head := filepath.Join(dir, "audit.head")
	def := Log{MaxSize: DefaultMaxSize, CheckpointInterval: journal.DefaultCheckpointInterval}
	with := func(change func(*Log)) Log { l := def; change(&l); return l }
	tests := []struct {
		name     string
		l        Log
		maxSize  int64
		headFile string
		want     journal.CheckpointOptions
		wantErr  string
	}{
		{"defaults", def, 64 << 20, "", journal.CheckpointOptions{}, ""},
		{"never rotate", with(func(l *Log) { l.MaxSize = " 0 " }), 0, "", journal.CheckpointOptions{}, ""},
		{"4KiB", with(func(l *Log) { l.MaxSize = "4KiB" }), 4096, "", journal.CheckpointOptions{}, ""},
		{"below 4KiB", with(func(l *Log) { l.MaxSize = "4095" }), 0, "", journal.CheckpointOptions{}, "--audit-max-size 4095: below 4KiB"},
		{"not a size", with(func(l *Log) { l.MaxSize = "big" }), 0, "", journal.CheckpointOptions{}, "--audit-max-size: "},
		{"head file the audit file", with(func(l *Log) { l.HeadFile = audit }), 0, "", journal.CheckpointOptions{}, "--head-file " + audit + ": not the audit file"},
		{"beside the head file", with(func(l *Log) { l.HeadFile = head }), 64 << 20, head, journal.CheckpointOptions{File: head + CheckpointExt, Interval: journal.DefaultCheckpointInterval}, ""},
		{"named, every 100, no interval", with(func(l *Log) {
			l.CheckpointFile, l.CheckpointEvery, l.CheckpointInterval = filepath.Join(dir, "cp"), 100, 0
		}), 64 << 20, "", journal.CheckpointOptions{File: filepath.Join(dir, "cp"), Every: 100, Interval: -1}, ""},
		{"the audit file", with(func(l *Log) { l.CheckpointFile = audit }), 0, "", journal.CheckpointOptions{}, "not the audit file"},
		{"a segment's name", with(func(l *Log) { l.CheckpointFile = audit + ".0-9.jsonl" }), 0, "", journal.CheckpointOptions{}, "not the audit file"},
		{"the head file", with(func(l *Log) { l.HeadFile, l.CheckpointFile = head, head }), 0, "", journal.CheckpointOptions{}, "not the head file"},
		{"every without a file", with(func(l *Log) { l.CheckpointEvery = 5 }), 0, "", journal.CheckpointOptions{}, "no checkpoint file"},
		{"every below 0", with(func(l *Log) { l.CheckpointFile, l.CheckpointEvery = filepath.Join(dir, "cp"), -1 }), 0, "", journal.CheckpointOptions{}, "--checkpoint-every -1"},
	}
	for _, tt := range tests {
		o, err := tt.l.Options(audit, journal.Options{})
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: Options = %v; want an error with %q", tt.name, err, tt.wantErr)
			}
			continue
		}
		if err != nil || o.MaxSize != tt.maxSize || o.HeadFile != tt.headFile || o.Checkpoint != tt.want {
			t.Errorf("%s: Options = size %d, head %q, %+v, %v; want %d, %q, %+v", tt.name, o.MaxSize, o.HeadFile, o.Checkpoint, err, tt.maxSize, tt.headFile, tt.want)
		}
	}
}

// TestOpenLog: a server's default log in use opens NAME-2.jsonl, then
// NAME-3.jsonl, saying so; a log named by the caller (no name) in use is
// ErrLocked, as is the default one once MaxLogsInUse are.
func TestOpenLog(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	key, err := record.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	dur, err := journal.ParseDurability("none")
	if err != nil {
		t.Fatal(err)
	}
	o := journal.Options{Key: key, Durability: dur}
	first, err := userfiles.LogPath("srv")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := userfiles.MkdirParents(first); err != nil {
		t.Fatal(err)
	}
	var said []string
	logf := func(format string, args ...any) { said = append(said, format) }
	for n := 1; n <= MaxLogsInUse; n++ {
		want := first
		if n > 1 {
			if want, err = userfiles.InUseLogPath("srv", n); err != nil {
				t.Fatal(err)
			}
		}
		said = nil
		j, path, err := OpenLog(first, "srv", o, logf)
		if err != nil || path != want || len(said) != n-1 {
			t.Fatalf("OpenLog #%d = %s, %v, saying %d lines; want %s, saying %d", n, path, err, len(said), want, n-1)
		}
		t.Cleanup(func() {
			if err := j.Close(); err != nil {
				t.Error(err)
			}
		})
	}
	if _, _, err := OpenLog(first, "srv", o, logf); !errors.Is(err, journal.ErrLocked) {
		t.Errorf("OpenLog with all %d in use = %v; want ErrLocked", MaxLogsInUse, err)
	}
	if _, path, err := OpenLog(first, "", o, logf); !errors.Is(err, journal.ErrLocked) || path != first {
		t.Errorf("OpenLog of a named log in use = %s, %v; want ErrLocked for it", path, err)
	}
}
