package witness

import (
	"crypto/ed25519"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"

	"github.com/aegisrelay/aegis/journal/tlog"
)

// quorumFixture is a checkpoint signed by the log's key and cosigned by
// witness a (golden keys), witness b that cosigns nothing, and the notes.
func quorumFixture(t *testing.T) (pub ed25519.PublicKey, cp tlog.Checkpoint, a, b Witness, cosigned, plain []byte) {
	t.Helper()
	logKey, witKey, cp := goldenKeys(t)
	ls, err := tlog.Signer(cp.Origin, logKey)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := torchwood.NewCosignatureSigner("example.com/a", witKey)
	if err != nil {
		t.Fatal(err)
	}
	if cosigned, err = note.Sign(&note.Note{Text: cp.Body()}, ls, ws); err != nil {
		t.Fatal(err)
	}
	if plain, err = note.Sign(&note.Note{Text: cp.Body()}, ls); err != nil {
		t.Fatal(err)
	}
	akey, err := CosignatureKey("example.com/a", witKey.Public().(ed25519.PublicKey))
	check(t, err)
	_, other, err := ed25519.GenerateKey(nil)
	check(t, err)
	bkey, err := CosignatureKey("example.com/b", other.Public().(ed25519.PublicKey))
	check(t, err)
	wsList, err := ParseKeys([]string{akey, bkey})
	if err != nil {
		t.Fatal(err)
	}
	return logKey.Public().(ed25519.PublicKey), cp, wsList[0], wsList[1], cosigned, plain
}

// TestQuorumCosigners: a note meets the quorum with enough cosigners, and
// falls short (ErrCosignature) naming those that did cosign.
func TestQuorumCosigners(t *testing.T) {
	_, _, a, b, cosigned, plain := quorumFixture(t)
	tests := []struct {
		name      string
		q         Quorum
		note      []byte
		wantNames string
		wantErr   string // "" for none
	}{
		{"one of one", Quorum{[]Witness{a}, 1}, cosigned, "example.com/a", ""},
		{"one of two, one needed", Quorum{[]Witness{a, b}, 1}, cosigned, "example.com/a", ""},
		{"one of two, two needed", Quorum{[]Witness{a, b}, 2}, cosigned, "example.com/a", "cosigned by example.com/a only, 1 of the 2 needed"},
		{"none", Quorum{[]Witness{a, b}, 1}, plain, "", "no cosignature by the witnesses given (1 needed)"},
	}
	for _, tt := range tests {
		names, err := tt.q.Cosigners(tt.note)
		if got := strings.Join(names, ","); got != tt.wantNames {
			t.Errorf("%s: Cosigners names = %q; want %q", tt.name, got, tt.wantNames)
		}
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%s: Cosigners = %v; want no error", tt.name, err)
		case tt.wantErr != "" && (!errors.Is(err, ErrCosignature) || !strings.HasSuffix(err.Error(), tt.wantErr)):
			t.Errorf("%s: Cosigners = %v; want ErrCosignature ending %q", tt.name, err, tt.wantErr)
		}
	}
}

// TestQuorumCheckFiles: every checkpoint of every file is checked; a file
// that cannot be read and a checkpoint short of the quorum are each one
// error, the second a *CheckpointError naming the file, the place and
// the size.
func TestQuorumCheckFiles(t *testing.T) {
	pub, cp, a, b, cosigned, plain := quorumFixture(t)
	dir := t.TempDir()
	write := func(name string, data ...[]byte) string {
		p := filepath.Join(dir, name)
		var all []byte
		for _, d := range data {
			all = append(all, d...)
		}
		if err := os.WriteFile(p, all, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good", cosigned)
	history := write("history", cosigned, plain)
	missing := filepath.Join(dir, "missing")
	tests := []struct {
		name  string
		q     Quorum
		files []string
		wantN int
		want  []string // each error's text, in order
	}{
		{"all cosigned", Quorum{[]Witness{a}, 1}, []string{good, good}, 2, nil},
		{"second of a history not", Quorum{[]Witness{a}, 1}, []string{history}, 1,
			[]string{history + ", checkpoint 2 (42 records): cosignature missing or invalid: no cosignature by the witnesses given (1 needed)"}},
		{"quorum of two", Quorum{[]Witness{a, b}, 2}, []string{good}, 0,
			[]string{good + ", checkpoint 1 (42 records): cosignature missing or invalid: cosigned by example.com/a only, 1 of the 2 needed"}},
		{"unreadable", Quorum{[]Witness{a}, 1}, []string{missing, good}, 1, []string{"missing"}},
	}
	for _, tt := range tests {
		n, errs := tt.q.CheckFiles(tt.files, pub)
		if n != tt.wantN || len(errs) != len(tt.want) {
			t.Errorf("%s: CheckFiles = %d, %v; want %d, %d errors", tt.name, n, errs, tt.wantN, len(tt.want))
			continue
		}
		for i, err := range errs {
			var ce *CheckpointError
			if errors.As(err, &ce) != errors.Is(err, ErrCosignature) || !strings.Contains(err.Error(), tt.want[i]) {
				t.Errorf("%s: CheckFiles error %d = %v; want %q in it, a *CheckpointError iff ErrCosignature", tt.name, i, err, tt.want[i])
			}
		}
	}
	if names, err := (Quorum{[]Witness{a}, 1}).CheckNote(append(append([]byte{}, plain...), cosigned...), pub, cp); err != nil || len(names) != 1 {
		t.Errorf("CheckNote(history, cosigned last) = %v, %v; want [example.com/a]", names, err)
	}
	other := cp
	other.Size++
	if _, err := (Quorum{[]Witness{a}, 1}).CheckNote(cosigned, pub, other); err == nil || err.Error() != "no checkpoint of 43 records in it" {
		t.Errorf("CheckNote(another checkpoint) = %v; want no checkpoint of 43 records", err)
	}
}

// TestParseList: wrap's URL,KEY arguments.
func TestParseList(t *testing.T) {
	_, witKey, _ := goldenKeys(t)
	key, err := CosignatureKey("example.com/w", witKey.Public().(ed25519.PublicKey))
	check(t, err)
	tests := []struct {
		name, arg, wantErr string
	}{
		{"url and key", "https://w.example," + key, ""},
		{"no comma", "https://w.example", `"https://w.example": want URL,KEY`},
		{"bad key", "https://w.example,nokey", `"https://w.example,nokey": `},
	}
	for _, tt := range tests {
		ws, err := ParseList([]string{tt.arg})
		if tt.wantErr == "" {
			if err != nil || len(ws) != 1 || ws[0].Name() != "example.com/w" {
				t.Errorf("%s: ParseList = %v, %v; want one witness example.com/w", tt.name, ws, err)
			}
			continue
		}
		if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
			t.Errorf("%s: ParseList = %v; want an error beginning %q", tt.name, err, tt.wantErr)
		}
	}
}
