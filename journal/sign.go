package journal

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha512"
	"sync"

	"filippo.io/edwards25519"
)

// nonces is how many precomputed nonces a signer keeps ready. A commit
// group takes one. The pool is refilled in bursts, once half of it is
// used: waking the refilling goroutine for every signature costs the
// path more than the signature it saves (a goroutine woken on another CPU
// during each fdatasync delays the records the sync releases; see
// BenchmarkAppend and BENCHMARKS.md). A burst of more groups than the pool holds signs the
// rest the slow way, which is still correct.
const nonces = 64

// signer makes Ed25519 signatures with the costly half of the work done
// ahead of time, off the path of the record that needs the signature.
//
// An Ed25519 signature of M is (R, S) with R = r·B and S = r + k·s mod ℓ,
// where k = SHA-512(R ‖ A ‖ M). crypto/ed25519 derives r from M
// (r = SHA-512(prefix ‖ M)), so the fixed-base multiplication r·B, about
// 90% of a signature's cost, cannot start before M is known. Verification
// does not depend on how r was chosen, only that it is secret, uniform and
// never used twice; so the signer draws r = SHA-512(prefix ‖ 64 bytes from
// crypto/rand) mod ℓ — the key's secret prefix hedges against a predictable
// random source — computes R = r·B ahead of time, on a goroutine with
// time to spare (topUp, Journal.Spare) or else in a background goroutine,
// and leaves two hashes and one multiply-add per signature on the path. Each nonce is popped from the pool under its lock exactly
// once, so none is ever used twice; when the pool is empty, Sign falls
// back to crypto/ed25519's deterministic signature. Either way the result
// verifies with ed25519.Verify; verify cannot tell them apart.
//
// Sign must not be called concurrently (the journal's leader is its only
// caller); topUp may be, with Sign and with itself. Close stops the
// goroutine that fills the pool.
type signer struct {
	key    ed25519.PrivateKey
	s      edwards25519.Scalar // the secret scalar
	prefix [32]byte            // the second half of SHA-512(seed)
	buf    []byte              // R ‖ A ‖ M, reused by Sign

	mu     sync.Mutex
	pool   []nonce       // ready, each to be used once
	refill chan struct{} // asks fill for more (buffered 1)
	stop   chan struct{}
	done   chan struct{}
}

type nonce struct {
	r edwards25519.Scalar
	R [32]byte // r·B, encoded
}

// newSigner returns a signer for key and, if precompute, starts filling its
// nonce pool; without it every signature is crypto/ed25519's.
func newSigner(key ed25519.PrivateKey, precompute bool) *signer {
	g := &signer{
		key:  key,
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	if !precompute {
		close(g.done)
		return g
	}
	g.pool = make([]nonce, 0, nonces)
	g.refill = make(chan struct{}, 1)
	h := sha512.Sum512(key.Seed())
	if _, err := g.s.SetBytesWithClamping(h[:32]); err != nil {
		panic("journal: SetBytesWithClamping of 32 bytes failed: " + err.Error()) // impossible: the length is fixed
	}
	copy(g.prefix[:], h[32:])
	go g.fill()
	return g
}

// fill fills the pool, then waits to be asked again, until Close.
func (g *signer) fill() {
	defer close(g.done)
	for {
		for !g.addOne() {
			select {
			case <-g.stop:
				return
			default:
			}
		}
		select {
		case <-g.refill:
		case <-g.stop:
			return
		}
	}
}

func (g *signer) newNonce() nonce {
	var in [32 + 64]byte
	copy(in[:32], g.prefix[:])
	rand.Read(in[32:]) // never fails (crypto/rand: it crashes the program instead)
	h := sha512.Sum512(in[:])
	var n nonce
	if _, err := n.r.SetUniformBytes(h[:]); err != nil {
		panic("journal: SetUniformBytes of 64 bytes failed: " + err.Error()) // impossible: the length is fixed
	}
	copy(n.R[:], new(edwards25519.Point).ScalarBaseMult(&n.r).Bytes())
	return n
}

// topUp adds up to n nonces to the pool, on the caller's goroutine, and
// stops early once the pool is full.
func (g *signer) topUp(n int) {
	if g.refill == nil {
		return
	}
	for range n {
		if g.addOne() {
			return
		}
	}
}

// addOne adds a nonce to the pool and reports whether the pool was full
// already (then it adds none). The nonce is made without the lock held,
// so fill and topUp may race: the later one finds the pool full and
// drops its nonce, which was never used.
func (g *signer) addOne() (full bool) {
	g.mu.Lock()
	full = len(g.pool) == cap(g.pool)
	g.mu.Unlock()
	if full {
		return true
	}
	n := g.newNonce()
	g.mu.Lock()
	if len(g.pool) < cap(g.pool) {
		g.pool = append(g.pool, n)
	}
	g.mu.Unlock()
	return false
}

// take pops a nonce, asking for a refill once half the pool is used.
func (g *signer) take() (n nonce, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.pool) == 0 {
		return n, false
	}
	n = g.pool[len(g.pool)-1]
	g.pool[len(g.pool)-1] = nonce{} // the secret leaves the pool
	g.pool = g.pool[:len(g.pool)-1]
	if len(g.pool) <= cap(g.pool)/2 {
		select {
		case g.refill <- struct{}{}:
		default:
		}
	}
	return n, true
}

// Sign returns the Ed25519 signature of msg.
func (g *signer) Sign(msg []byte) (sig [ed25519.SignatureSize]byte) {
	n, ok := g.take()
	if !ok {
		copy(sig[:], ed25519.Sign(g.key, msg))
		return sig
	}
	g.buf = append(append(append(g.buf[:0], n.R[:]...), g.key[32:]...), msg...) // R ‖ A ‖ M
	k64 := sha512.Sum512(g.buf)
	var k edwards25519.Scalar
	if _, err := k.SetUniformBytes(k64[:]); err != nil {
		panic("journal: SetUniformBytes of 64 bytes failed: " + err.Error()) // impossible: the length is fixed
	}
	var S edwards25519.Scalar
	S.MultiplyAdd(&k, &g.s, &n.r)
	copy(sig[:32], n.R[:])
	copy(sig[32:], S.Bytes())
	return sig
}

// Close stops the goroutine that fills the pool and waits for it.
func (g *signer) Close() {
	close(g.stop)
	<-g.done
}
