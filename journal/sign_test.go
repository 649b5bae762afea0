package journal

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"testing"
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
