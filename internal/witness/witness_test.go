package witness

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"

	"github.com/aegisrelay/aegis/journal/tlog"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// Fixed keys of the golden files: the log's from a seed of zeros, the
// witness's from a seed of ones.
func goldenKeys(t *testing.T) (logKey, witKey ed25519.PrivateKey, cp tlog.Checkpoint) {
	t.Helper()
	logKey = ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	witKey = ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, ed25519.SeedSize))
	cp = tlog.Checkpoint{Origin: "aegis.log/0123456789abcdef", Size: 42, Root: tlog.LeafHash([]byte("root"))}
	return
}

func golden(t *testing.T, name string, got []byte) []byte {
	t.Helper()
	path := "testdata/" + name
	if *update && got != nil {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return want
}

// TestParseKey: a witness's note verifier key is read in its published
// form (cosignature/v1, or plain Ed25519); anything else is ErrKey.
func TestParseKey(t *testing.T) {
	_, witKey, _ := goldenKeys(t)
	pub := witKey.Public().(ed25519.PublicKey)
	cosig, err := CosignatureKey("example.com/w", pub)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := note.NewEd25519VerifierKey("example.com/w", pub)
	if err != nil {
		t.Fatal(err)
	}
	b64 := strings.SplitN(cosig, "+", 3)[2]
	tests := []struct {
		name, vkey string
		want       bool
	}{
		{"cosignature/v1", cosig, true},
		{"plain Ed25519", plain, true},
		{"no hash", "example.com/w+" + b64, false},
		{"another key hash", "example.com/w+00000000+" + b64, false},
		{"short key", "example.com/w+01020304+BAEC", false},
		{"unknown algorithm", "example.com/w+01020304+" + strings.Repeat("A", 44), false},
		{"empty", "", false},
	}
	for _, tt := range tests {
		v, err := ParseKey(tt.vkey)
		if got := err == nil; got != tt.want {
			t.Errorf("%s: ParseKey(%q) = %v; want ok %v", tt.name, tt.vkey, err, tt.want)
			continue
		}
		if err != nil && !errors.Is(err, ErrKey) {
			t.Errorf("%s: ParseKey error %v; want ErrKey", tt.name, err)
		}
		if err == nil && v.Name() != "example.com/w" {
			t.Errorf("%s: ParseKey name = %q; want example.com/w", tt.name, v.Name())
		}
	}
}

// TestWitnessedGolden: testdata/witnessed.golden, a checkpoint signed by
// the log's key and cosigned (cosignature/v1, by torchwood's signer),
// opens with the log's key (tlog.Open) and its cosigner is found
// (Cosigners); with one byte of the cosignature changed it is an error,
// not a missing cosignature.
func TestWitnessedGolden(t *testing.T) {
	logKey, witKey, cp := goldenKeys(t)
	var made []byte
	if *update {
		ls, err := tlog.Signer(cp.Origin, logKey)
		if err != nil {
			t.Fatal(err)
		}
		ws, err := torchwood.NewCosignatureSigner("example.com/w", witKey)
		if err != nil {
			t.Fatal(err)
		}
		if made, err = note.Sign(&note.Note{Text: cp.Body()}, ls, ws); err != nil {
			t.Fatal(err)
		}
	}
	data := golden(t, "witnessed.golden", made)
	vkey, err := CosignatureKey("example.com/w", witKey.Public().(ed25519.PublicKey))
	check(t, err)
	w, err := New("http://127.0.0.1:1", vkey)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := tlog.Open(data, logKey.Public().(ed25519.PublicKey)); err != nil || c != cp {
		t.Errorf("tlog.Open(golden) = %+v, %v; want %+v", c, err, cp)
	}
	if idx, err := Cosigners(data, []Witness{w}); err != nil || len(idx) != 1 {
		t.Errorf("Cosigners(golden) = %v, %v; want [0]", idx, err)
	}
	lines := strings.Split(string(data), "\n")
	sig := lines[len(lines)-2]
	i := strings.LastIndexByte(sig, ' ') + 30
	changed := []byte(sig)
	changed[i] ^= 'A' ^ 'B'
	tampered := strings.Replace(string(data), sig, string(changed), 1)
	if idx, err := Cosigners([]byte(tampered), []Witness{w}); !errors.Is(err, ErrCosignature) {
		t.Errorf("Cosigners(tampered) = %v, %v; want ErrCosignature", idx, err)
	}
	_, other, err := ed25519.GenerateKey(nil)
	check(t, err)
	ovkey, err := CosignatureKey("example.com/other", other.Public().(ed25519.PublicKey))
	check(t, err)
	ow, err := New("http://127.0.0.1:1", ovkey)
	check(t, err)
	if idx, err := Cosigners(data, []Witness{ow}); err != nil || len(idx) != 0 {
		t.Errorf("Cosigners(golden, another witness) = %v, %v; want none, no error", idx, err)
	}
}

// TestStateGolden pins the state file's format (doc.go, "Files").
func TestStateGolden(t *testing.T) {
	logKey, witKey, cp := goldenKeys(t)
	vkey, err := CosignatureKey("example.com/w", witKey.Public().(ed25519.PublicKey))
	check(t, err)
	w1, err := New("http://127.0.0.1:7380", vkey)
	check(t, err)
	w2, err := New("http://127.0.0.1:7381", vkey)
	check(t, err)
	s, err := NewSubmitter(Options{Witnesses: []Witness{w1, w2}, Quorum: 1, File: t.TempDir() + "/cp", Key: logKey.Public().(ed25519.PublicKey)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Abort()
	s.ws[0].state, s.ws[0].start, s.ws[0].cosigned, s.ws[0].attempts = StateOK, StateOK, 42, 3
	s.ws[1].state, s.ws[1].start, s.ws[1].attempts, s.ws[1].failures = StateUnreachable, StateUnreachable, 2, 2
	s.ws[1].detail = `witness: unreachable: dial tcp 127.0.0.1:7381: connect: connection refused`
	got, lines := s.state(&offer{cp: cp})
	if want := golden(t, "state.golden", got); !bytes.Equal(got, want) {
		t.Errorf("state file =\n%s\nwant\n%s", got, want)
	}
	if len(lines) != 3 || !strings.Contains(lines[2], "witnessed by 1 of 2, quorum 1") {
		t.Errorf("state lines = %q; want one per witness and the quorum met", lines)
	}
	if !strings.HasPrefix(string(got), cp.Body()+"\n") {
		t.Errorf("the state file does not begin with the checkpoint's body")
	}
}

// TestAddCheckpointAnswers: each answer of the protocol that the tests
// with litewitness (cmd/aegis) do not draw is classified as the package
// says: 404, a 409 with a smaller and a larger size, 422, 500, a 409
// whose body is no size, a 200 whose lines are not the witness's, an
// answer over 64 KiB, and every redirect, which is an answer never
// followed, even with a client that follows them.
func TestAddCheckpointAnswers(t *testing.T) {
	logKey, witKey, cp := goldenKeys(t)
	ls, err := tlog.Signer(cp.Origin, logKey)
	check(t, err)
	signed, err := tlog.Sign(cp, ls)
	check(t, err)
	vkey, err := CosignatureKey("example.com/w", witKey.Public().(ed25519.PublicKey))
	check(t, err)
	tests := []struct {
		name   string
		status int
		body   string
		want   error
	}{
		{"unknown log", 404, "unknown log\n", ErrUnknownLog},
		{"bad signature", 403, "invalid signature\n", ErrUnknownLog},
		{"behind", 409, "40\n", &ConflictError{}},
		{"ahead", 409, "50\n", ErrAhead},
		{"bad proof", 422, "bad consistency proof\n", ErrProof},
		{"server error", 500, "oops\n", ErrAnswer},
		{"conflict without a size", 409, "forty\n", ErrAnswer},
		{"200 with another's line", 200, "— example.com/x AAAA\n", ErrCosignature},
		{"200 with nothing", 200, "", ErrAnswer},
		{"200 over 64 KiB", 200, strings.Repeat("— example.com/w AAAA\n", 4000), ErrAnswer},
		{"409 over 64 KiB", 409, strings.Repeat("9", 70<<10) + "\n", ErrAnswer},
		{"301 to another server", 301, "", ErrAnswer},
		{"302 to another server", 302, "", ErrAnswer},
		{"303 to another server", 303, "", ErrAnswer},
		{"307 to another server", 307, "", ErrAnswer},
		{"308 to another server", 308, "", ErrAnswer},
	}
	// Where the redirects point: an honest witness would have cosigned
	// there, so any request it receives is a redirect followed.
	var followed atomic.Int32
	elsewhere := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		followed.Add(1)
		rw.WriteHeader(http.StatusOK)
	}))
	defer elsewhere.Close()
	var gotBody []byte
	for _, tt := range tests {
		srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			gotBody = make([]byte, r.ContentLength)
			io.ReadFull(r.Body, gotBody)
			if r.URL.Path != AddCheckpointPath || r.Method != http.MethodPost {
				rw.WriteHeader(400)
				return
			}
			if tt.status/100 == 3 {
				rw.Header().Set("Location", elsewhere.URL+AddCheckpointPath)
			}
			rw.WriteHeader(tt.status)
			rw.Write([]byte(tt.body))
		}))
		w, err := New(srv.URL, vkey)
		if err != nil {
			t.Fatal(err)
		}
		// srv.Client() follows redirects: AddCheckpoint does not,
		// whatever the client it is given.
		_, err = w.AddCheckpoint(context.Background(), srv.Client(), 40, []tlog.Hash{tlog.EmptyRoot}, signed, cp.Size)
		srv.Close()
		if n := followed.Swap(0); n != 0 {
			t.Errorf("%s: AddCheckpoint followed the redirect (%d requests to its target); want none", tt.name, n)
		}
		var ce *ConflictError
		switch want := tt.want.(type) {
		case *ConflictError:
			if !errors.As(err, &ce) || ce.Size != 40 || errors.Is(err, ErrAhead) {
				t.Errorf("%s: AddCheckpoint = %v; want a ConflictError at 40, not ahead", tt.name, err)
			}
		default:
			if !errors.Is(err, want) {
				t.Errorf("%s: AddCheckpoint = %v; want %v", tt.name, err, want)
			}
		}
	}
	want := "old 40\n" + tlog.EmptyRoot.String() + "\n\n" + string(signed)
	if string(gotBody) != want {
		t.Errorf("request body = %q; want %q", gotBody, want)
	}
}
