package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVerifyTornHistory: verify --checkpoint with a history whose last
// checkpoint a crash cut short (anywhere in its signature line, or before
// it) reports it as torn and the check incomplete (exit 3), as a log's
// torn tail; a whole last checkpoint whose signature is changed is a
// forgery (exit 1), and the whole history passes (exit 0). prove reads
// the checkpoints before a torn one, and says it passed over it.
func TestVerifyTornHistory(t *testing.T) {
	f := newFixture(t)
	cp := filepath.Join(f.dir, "audit.checkpoint")
	f.drive(t, []string{"--durability", "strict", "--checkpoint-file", cp, "--checkpoint-every", "20"}, 60, 4)
	hist, err := os.ReadFile(cp + ".history")
	if err != nil {
		t.Fatal(err)
	}
	last, err := os.ReadFile(cp)
	if err != nil || !strings.HasSuffix(string(hist), string(last)) || len(hist) == len(last) {
		t.Fatalf("history of %d bytes does not end with the checkpoint file's %d (%v); want several checkpoints, the last the file's", len(hist), len(last), err)
	}
	records := len(strings.Split(strings.TrimSpace(string(readAudit(f.audit))), "\n"))
	sig := strings.LastIndex(string(hist), "\n— ") + 1
	forged := []byte(string(hist))
	forged[len(forged)-5] ^= 'A' ^ 'B'
	if forged[len(forged)-5] == hist[len(hist)-5] {
		t.Fatal("forgery changed nothing")
	}
	tests := []struct {
		name string
		data []byte
		want int
		out  string
	}{
		{"whole", hist, 0, "extends all"},
		{"cut within the signature", hist[:len(hist)-7], 3, "cut short"},
		{"cut within the signature line's dash", hist[:sig+1], 3, "cut short"},
		{"cut after the blank line", hist[:sig], 3, "cut short"},
		{"cut within the root", hist[:len(hist)-len(last)+30], 3, "cut short"},
		{"last signature changed", forged, 1, "not a valid checkpoint"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := writeProveFile(t, filepath.Join(t.TempDir(), "audit.checkpoint.history"), tt.data)
			code, out, errOut := aegisRun(t, "verify", "--key", "@"+f.key+".pub", "--checkpoint", h, f.audit)
			if code != tt.want || !strings.Contains(out, tt.out) {
				t.Errorf("verify --checkpoint (history %s) = exit %d\n%s%s\nwant exit %d and %q", tt.name, code, out, errOut, tt.want, tt.out)
			}
			if tt.want != 3 {
				return
			}
			code, proof, errOut := runAegis(t, "prove", "inclusion", "--checkpoint", h, "--seq", "1", "--key", "@"+f.key+".pub", f.audit)
			var p struct {
				Size int `json:"tree_size"`
			}
			json.Unmarshal(proof, &p)
			if code != 0 || !strings.Contains(errOut, "cut short") || p.Size == 0 || p.Size >= records {
				t.Errorf("prove inclusion --checkpoint (history %s) = exit %d, tree size %d, %q; want 0, a checkpoint before the last (%d records), and the torn one named", tt.name, code, p.Size, errOut, records)
			}
		})
	}
}
