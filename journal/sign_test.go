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
	defer g.Close()
	seen := map[[32]byte]bool{}
	for round := range 40 {
		waitFull(g) // half a pool's use asks for a refill
		for i := range nonces / 2 {
			msg := fmt.Appendf(nil, `{"v":2,"seq":%d,"kind":"intent"}`, round*nonces+i)
			sig := g.Sign(msg)
			if !ed25519.Verify(pub, msg, sig[:]) {
				t.Fatalf("Sign(%q) = %x; ed25519.Verify rejects it", msg, sig)
			}
			if bytes.Equal(sig[:], ed25519.Sign(key, msg)) {
				t.Fatalf("Sign(%q) with the pool full is crypto/ed25519's; want a precomputed nonce", msg)
			}
			var R [32]byte
			copy(R[:], sig[:32])
			if seen[R] {
				t.Fatalf("signature %q reuses the nonce commitment %x", msg, R)
			}
			seen[R] = true
		}
	}
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
	left := poolLen(g)
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

// waitFull asks for a refill and waits until the pool holds every nonce it
// can. (Sign asks only once half the pool is used, so a pool left between
// half and full, as a goroutine descheduled mid-run can leave it, is
// never topped up on its own.)
func waitFull(g *signer) {
	select {
	case g.refill <- struct{}{}:
	default:
	}
	for poolLen(g) < nonces {
		runtime.Gosched()
	}
}

func poolLen(g *signer) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.pool)
}

// TestSignerTopUp: topUp adds nonces on the caller's goroutine, never past
// the pool's size, and does nothing for a signer without a pool.
func TestSignerTopUp(t *testing.T) {
	_, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	g := newSigner(key, true)
	defer g.Close()
	waitFull(g)
	for range nonces / 2 {
		g.Sign([]byte("x")) // down to half: asks the filler for more
	}
	g.topUp(nonces) // races the filler; neither may overfill
	if n := poolLen(g); n != nonces {
		t.Errorf("after topUp(%d) the pool holds %d; want %d", nonces, n, nonces)
	}
	std := newSigner(key, false)
	std.topUp(3)
	if n := poolLen(std); n != 0 {
		t.Errorf("topUp on a signer without a pool: %d nonces; want 0", n)
	}
}
