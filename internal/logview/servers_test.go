package logview

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/internal/userfiles"
)

// TestSummarize: a server's line counts the files of its logs, sealed
// segments included, their bytes without a live file's pre-zeroed space,
// and the latest mtime; a log whose files cannot be listed is an error.
func TestSummarize(t *testing.T) {
	dir := t.TempDir()
	live := filepath.Join(dir, "a.jsonl")
	files := map[string][]byte{
		live:                            append([]byte("{}\n{}\n"), make([]byte, 4096)...),
		live + ".0-5.jsonl":             []byte("{}\n"),
		filepath.Join(dir, "a-2.jsonl"): []byte("{}\n{}\n{}\n"),
	}
	latest := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for p, data := range files {
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		mod := latest.Add(-time.Hour)
		if p == live+".0-5.jsonl" {
			mod = latest
		}
		if err := os.Chtimes(p, mod, mod); err != nil {
			t.Fatal(err)
		}
	}
	s := userfiles.Server{Name: "a", Logs: []string{live, filepath.Join(dir, "a-2.jsonl")}}
	r, err := Summarize(s)
	if err != nil || r.Name != "a" || len(r.Logs) != 2 || r.Files != 3 || r.Bytes != 6+3+9 || !r.Modified.Equal(latest) {
		t.Errorf("Summarize = %+v, %v; want 2 logs, 3 files, 18 bytes, modified %v", r, err, latest)
	}
	if err := os.Remove(live); err != nil {
		t.Fatal(err)
	}
	if r, err := Summarize(s); err == nil {
		t.Errorf("Summarize with a log gone = %+v; want an error", r)
	}
}

// TestFormatSize: bytes below a KiB, then the largest unit under 1024
// with one decimal.
func TestFormatSize(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 5 << 20: "5.0 MiB",
		3 << 30: "3.0 GiB", 2 << 40: "2.0 TiB", 2048 << 40: "2048.0 TiB",
	} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q; want %q", n, got, want)
		}
	}
}
