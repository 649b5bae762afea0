package tlog

import (
	"bytes"
	"crypto"
	"crypto/ed25519"
	"errors"
	"io"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"

	"github.com/aegisrelay/aegis/journal/record"
)

// TestParseBody: a checkpoint's text is a C2SP tlog-checkpoint or
// ErrCheckpoint, extension lines and size bound included.
func TestParseBody(t *testing.T) {
	root := Hash{1, 2, 3}.String()
	const origin = OriginPrefix + "0123456789abcdef"
	body := origin + "\n42\n" + root + "\n"
	tests := []struct {
		name string
		text string
		ok   bool
	}{
		{"checkpoint", body, true},
		{"extension lines", body + "ext one\next two\n", true},
		{"empty extension line", body + "\n", false},
		{"extension line after an empty one", body + "\next\n", false},
		{"extension line not ended", body + "ext", false},
		{"larger than 1 MB", body + strings.Repeat("e", 1<<20) + "\n", false},
		{"not ended", strings.TrimSuffix(body, "\n"), false},
		{"two lines", origin + "\n42\n", false},
		{"empty origin", "\n42\n" + root + "\n", false},
		{"size with a leading zero", origin + "\n042\n" + root + "\n", false},
		{"negative size", origin + "\n-1\n" + root + "\n", false},
		{"size with a sign", origin + "\n+42\n" + root + "\n", false},
		{"size past int64", origin + "\n9223372036854775808\n" + root + "\n", false},
		{"root of 31 bytes", origin + "\n42\n" + Hash{}.String()[:40] + "=\n", false},
		{"root not base64", origin + "\n42\n" + strings.Repeat("!", 44) + "\n", false},
	}
	for _, tt := range tests {
		c, err := ParseBody(tt.text)
		if tt.ok {
			if err != nil || c.Origin != origin || c.Size != 42 || c.Root != (Hash{1, 2, 3}) {
				t.Errorf("%s: ParseBody(%.60q) = %+v, %v; want %s 42 %s, nil", tt.name, tt.text, c, err, origin, root)
			}
			continue
		}
		if !errors.Is(err, ErrCheckpoint) {
			t.Errorf("%s: ParseBody(%.60q) = %+v, %v; want ErrCheckpoint", tt.name, tt.text, c, err)
		}
	}
}

// agentKey is an Ed25519 crypto.Signer that is not an
// ed25519.PrivateKey, as a key an ssh-agent holds is; lie makes it
// return a signature of another message.
type agentKey struct {
	key ed25519.PrivateKey
	lie bool
}

func (a agentKey) Public() crypto.PublicKey { return a.key.Public() }

func (a agentKey) Sign(r io.Reader, msg []byte, o crypto.SignerOpts) ([]byte, error) {
	if a.lie {
		msg = append([]byte("not "), msg...)
	}
	return a.key.Sign(r, msg, o)
}

// TestSigner: a checkpoint signed through any crypto.Signer of Ed25519
// is the same note, byte for byte, as one signed with the private key,
// and opens with Verifier; a signer whose signature does not verify, or
// a key that is not Ed25519, is refused with record.ErrKey.
func TestSigner(t *testing.T) {
	c := checkpointAt(leavesOf(t, readGenuine(t)), 5)
	want := signed(t, c)
	s, err := Signer(c.Origin, agentKey{key: fixedKey})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Sign(c, s)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("Sign with an agent key = %q, %v; want %q", got, err, want)
	}
	if o, err := Open(got, fixedPub); err != nil || o != c {
		t.Errorf("Open(Sign with an agent key) = %+v, %v; want %+v", o, err, c)
	}
	vk, err := VerifierKey(c.Origin, fixedPub)
	if err != nil {
		t.Fatal(err)
	}
	v, err := note.NewVerifier(vk)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name() != v.Name() || s.KeyHash() != v.KeyHash() {
		t.Errorf("Signer = %s+%08x; want the verifier key's %s+%08x", s.Name(), s.KeyHash(), v.Name(), v.KeyHash())
	}

	liar, err := Signer(c.Origin, agentKey{key: fixedKey, lie: true})
	if err != nil {
		t.Fatal(err)
	}
	if msg, err := Sign(c, liar); !errors.Is(err, record.ErrKey) {
		t.Errorf("Sign with a signer that lies = %q, %v; want record.ErrKey", msg, err)
	}
	if _, err := Signer(c.Origin, notEd25519{}); !errors.Is(err, record.ErrKey) {
		t.Errorf("Signer(a key that is not Ed25519) = %v; want record.ErrKey", err)
	}
}

type notEd25519 struct{}

func (notEd25519) Public() crypto.PublicKey { return []byte("key") }

func (notEd25519) Sign(io.Reader, []byte, crypto.SignerOpts) ([]byte, error) {
	return nil, errors.New("no")
}
