package journal

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"runtime"
	"testing"
)

func TestSignerVerifies(t *testing.T) {
	_, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	pub := key.Public().(ed25519.PublicKey)
	g := newSigner(key, true)
	seen := map[[32]byte]bool{}
	pooled := 0
	for i := range 2000 {
		waitFull(g)
		msg := fmt.Appendf(nil, `{"v":2,"seq":%d,"kind":"intent"}`, i)
		sig := g.Sign(msg)
		if !ed25519.Verify(pub, msg, sig[:]) {
			t.Fatalf("Sign(%q) = %x; ed25519.Verify rejects it", msg, sig)
		}
		if !bytes.Equal(sig[:], ed25519.Sign(key, msg)) {
			pooled++ // a precomputed nonce, not crypto/ed25519's
		}
		var R [32]byte
		copy(R[:], sig[:32])
		if seen[R] {
			t.Fatalf("signature %d reuses the nonce commitment %x", i, R)
		}
		seen[R] = true
	}
	if pooled != 2000 {
		t.Errorf("%d of 2000 signatures used a precomputed nonce with the pool full; want all", pooled)
	}
	g.Close()
}

// After Close nothing refills the pool: the nonces left in it are used,
// each once, then Sign falls back to crypto/ed25519, byte for byte.
func TestSignerFallback(t *testing.T) {
	_, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	pub := key.Public().(ed25519.PublicKey)
	g := newSigner(key, true)
	waitFull(g)
	g.Close()
	left := len(g.ready)
	for i := range nonces + 4 {
		msg := fmt.Appendf(nil, "record %d", i)
		sig := g.Sign(msg)
		if !ed25519.Verify(pub, msg, sig[:]) {
			t.Fatalf("Sign(%q) = %x; ed25519.Verify rejects it", msg, sig)
		}
		std := bytes.Equal(sig[:], ed25519.Sign(key, msg))
		if want := i >= left; std != want {
			t.Errorf("signature %d (pool had %d) is crypto/ed25519's = %v; want %v", i, left, std, want)
		}
	}
}

// waitFull waits until the pool holds every nonce it can.
func waitFull(g *signer) {
	for len(g.ready) < cap(g.ready) {
		runtime.Gosched()
	}
}
