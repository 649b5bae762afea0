package witness

import (
	"crypto/ed25519"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/journal/tlog"
)

// TestBegin: a witness that says it holds a larger tree of the log than
// its checkpoint file's makes Begin refuse the log under Strict, with
// the checkpoint's size and the witness's answer; without Strict, Begin
// returns the started Submitter.
func TestBegin(t *testing.T) {
	logKey, witKey, cp := goldenKeys(t)
	vkey, err := CosignatureKey("example.com/w", witKey.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	ls, err := tlog.Signer(cp.Origin, logKey)
	if err != nil {
		t.Fatal(err)
	}
	cpNote, err := tlog.Sign(cp, ls)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.WriteHeader(http.StatusConflict)
		io.WriteString(rw, "18446744073709551615\n")
	}))
	defer srv.Close()
	w, err := New(srv.URL, vkey)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		strict bool
		want   bool // refused
	}{
		{"strict", true, true},
		{"not strict", false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "audit.checkpoint")
			if err := os.WriteFile(file, cpNote, 0o600); err != nil {
				t.Fatal(err)
			}
			s, err := Begin(Options{Witnesses: []Witness{w}, Log: filepath.Join(dir, "audit.jsonl"), File: file,
				Key: logKey.Public().(ed25519.PublicKey), Timeout: 5 * time.Second, Strict: tt.strict}, logKey)
			var re *RefusedError
			if !tt.want {
				if err != nil || s == nil {
					t.Fatalf("Begin = %v, %v; want a Submitter", s, err)
				}
				s.Abort()
				return
			}
			if !errors.As(err, &re) || re.Size != cp.Size || len(re.Answers) != 1 || !errors.Is(err, ErrAhead) || s != nil {
				t.Fatalf("Begin = %v, %v; want a *RefusedError at size %d with one ErrAhead answer", s, err, cp.Size)
			}
		})
	}
}
