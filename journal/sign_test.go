package journal

import (
	"bytes"
	"crypto"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/journal/record"
	"github.com/aegisrelay/aegis/journal/tlog"
	"github.com/aegisrelay/aegis/journal/verify"
)

// TestSignerNonceFromMessage: every signature is RFC 8032's, byte for
// byte crypto/ed25519's, so its nonce commitment R is a function of the
// message: one message always gets one R, and different messages
// different ones.
func TestSignerNonceFromMessage(t *testing.T) {
	_, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	pub := key.Public().(ed25519.PublicKey)
	g := newSigner(key)
	seen := map[[32]byte]string{}
	for i := range 200 {
		msg := fmt.Appendf(nil, `{"v":2,"seq":%d,"kind":"intent"}`, i)
		sig := g.Sign(msg)
		if !ed25519.Verify(pub, msg, sig[:]) {
			t.Fatalf("Sign(%q) = %x; ed25519.Verify rejects it", msg, sig)
		}
		if want := ed25519.Sign(key, msg); !bytes.Equal(sig[:], want) {
			t.Fatalf("Sign(%q) = %x; want crypto/ed25519's %x", msg, sig, want)
		}
		if again := g.Sign(msg); again != sig {
			t.Fatalf("Sign(%q) twice = %x, %x; want one signature", msg, sig, again)
		}
		R := [32]byte(sig[:32])
		if prev, ok := seen[R]; ok {
			t.Fatalf("signatures of %q and %q share the nonce commitment %x", prev, msg, R)
		}
		seen[R] = string(msg)
	}
}

// TestSignerCopied is the attack the nonces are derived against: a
// signer's memory copied (a virtual machine snapshot restored twice, a
// fork) and each copy signing a different record. A copy holds whatever
// was prepared before the message was known; the two signatures must
// still not share a nonce commitment R, which with two messages would
// reveal the key. The same message signed by both copies gives one
// signature, which reveals nothing.
func TestSignerCopied(t *testing.T) {
	_, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	g := newSigner(key)
	g.Sign([]byte("warm up")) // whatever a signer prepares, it has prepared
	a, b := *g, *g
	m1, m2 := []byte(`{"tool":"read_file"}`), []byte(`{"tool":"delete_everything"}`)
	s1, s2 := a.Sign(m1), b.Sign(m2)
	if [32]byte(s1[:32]) == [32]byte(s2[:32]) {
		t.Fatalf("two copies of one signer signed %q and %q with one nonce commitment %x", m1, m2, s1[:32])
	}
	if s3 := b.Sign(m1); s3 != s1 {
		t.Fatalf("two copies of one signer signed %q as %x and %x; want one signature", m1, s1, s3)
	}
}

// heldKey is a root key the journal cannot see into, as a key an
// ssh-agent holds: a crypto.Signer that is not an ed25519.PrivateKey. It
// counts its signatures, and bad makes it return a wrong one.
type heldKey struct {
	key   ed25519.PrivateKey
	signs atomic.Int64
	bad   bool
	gone  atomic.Bool // an agent gone: Sign fails
}

func (h *heldKey) Public() crypto.PublicKey { return h.key.Public() }

func (h *heldKey) Sign(_ io.Reader, msg []byte, _ crypto.SignerOpts) ([]byte, error) {
	h.signs.Add(1)
	if h.gone.Load() {
		return nil, errors.New("agent gone")
	}
	if h.bad {
		return ed25519.Sign(h.key, append([]byte("not "), msg...)), nil
	}
	return ed25519.Sign(h.key, msg), nil
}

// TestHeldRootKey: with a root key held elsewhere, the journal asks it
// for one signature per Open (the session key's certificate), whatever
// the number of records, and one per head file and checkpoint; each of
// those verifies against the root alone, and every record's signature
// is the session key's.
func TestHeldRootKey(t *testing.T) {
	root := &heldKey{key: testKey(t)}
	rootPub := root.key.Public().(ed25519.PublicKey)
	dir := t.TempDir()
	path, head, cpf := filepath.Join(dir, "audit.jsonl"), filepath.Join(dir, "audit.head"), filepath.Join(dir, "audit.checkpoint")
	const records = 500
	for _, opts := range []Options{
		{Durability: mustDurability(t, "reply"), Key: root},
		{Durability: mustDurability(t, "reply"), Key: root, HeadFile: head, HeadEvery: time.Hour, Checkpoint: CheckpointOptions{File: cpf, Interval: -1}},
	} {
		root.signs.Store(0)
		j, err := Open(path, opts)
		if err != nil {
			t.Fatal(err)
		}
		start := &record.SessionStart{Aegis: "test", Argv: []string{"server"}, Durability: "reply", PolicySet: record.PassThroughSet}
		seq, err := j.Append(start)
		for i := 0; err == nil && i < records; i++ {
			if seq, err = j.Append(&record.PolicyReload{Set: "sha256:ab", Status: "applied"}); err == nil && i%10 == 0 {
				err = j.Wait(seq, BeforeResponse)
			}
		}
		if err == nil {
			_, err = j.Append(&record.SessionEnd{Reason: record.EndClientEOF})
		}
		if err == nil {
			err = j.Close()
		}
		if err != nil {
			t.Fatal(err)
		}
		want := int64(1)
		if opts.HeadFile != "" {
			want += 2 // the head at Close, and the checkpoint after it
		}
		if n := root.signs.Load(); n != want {
			t.Errorf("root signatures for %d records (head file %v) = %d; want %d", records, opts.HeadFile != "", n, want)
		}
		if start.Key.Equal(rootPub) || start.Cert == nil || !start.Cert.Root.Equal(rootPub) || !start.Cert.Verify(start.Key) {
			t.Errorf("session_start key %s, cert %+v; want a session key the root certified", record.FormatPublicKey(start.Key), start.Cert)
		}
	}
	if rep := verifyFile(t, path, verify.Options{Key: rootPub}); rep.Status != verify.Valid || len(rep.Sessions) != 2 {
		t.Errorf("verify pinned to the root = %v %v, %d sessions; want valid, 2", rep.Status, rep.Problems, len(rep.Sessions))
	}
	if sh, err := record.ReadHead(head); err != nil || !sh.Key.Equal(rootPub) {
		t.Errorf("head file: %v, key %v; want one signed by the root", err, sh.Key)
	}
	if _, err := tlog.ReadCheckpoint(cpf, rootPub); err != nil {
		t.Errorf("checkpoint: %v; want one signed by the root", err)
	}
}

// TestHeldRootKeyBadSignature: a root key whose signatures do not verify
// (an agent that misbehaves) is refused at Open, before anything is
// written, not found out by whoever verifies the log later.
func TestHeldRootKeyBadSignature(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	_, err := Open(path, Options{Durability: mustDurability(t, "strict"), Key: &heldKey{key: testKey(t), bad: true}})
	if !errors.Is(err, record.ErrKey) {
		t.Fatalf("Open with a root key that signs wrongly = %v; want ErrKey", err)
	}
	if data, _ := os.ReadFile(path); len(data) != 0 {
		t.Errorf("Open refused the key but wrote %q", data)
	}
}

// TestHeldRootKeyGone: a root key that stops signing mid-session (an
// agent gone) fails the journal closed at the next head file or
// checkpoint, with an error matching ErrIO, as a failed write does: the
// relay ends the session (exit 74) rather than record without them.
func TestHeldRootKeyGone(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts func(dir string) Options
	}{
		{"head file", func(dir string) Options {
			return Options{HeadFile: filepath.Join(dir, "audit.head"), HeadEvery: time.Hour}
		}},
		{"checkpoint", func(dir string) Options {
			return Options{Checkpoint: CheckpointOptions{File: filepath.Join(dir, "audit.checkpoint"), Every: 1, Interval: -1}}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			root := &heldKey{key: testKey(t)}
			opts := tt.opts(dir)
			opts.Durability, opts.Key = mustDurability(t, "strict"), root
			j, err := Open(filepath.Join(dir, "audit.jsonl"), opts)
			if err != nil {
				t.Fatal(err)
			}
			root.gone.Store(true)
			seq, err := j.Append(&record.SessionStart{Aegis: "test", Argv: []string{"server"}, Durability: "strict", PolicySet: record.PassThroughSet})
			if err == nil {
				err = j.Wait(seq, BeforeRequest)
			}
			if err != nil {
				t.Fatalf("the first record, before any root signature is due: %v", err)
			}
			err = j.Close()
			if !errors.Is(err, ErrIO) || !strings.Contains(err.Error(), "agent gone") {
				t.Errorf("Close with the root gone = %v; want an ErrIO naming the agent", err)
			}
		})
	}
}
