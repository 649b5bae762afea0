package verify

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha512"
	"hash"
	mrand "math/rand/v2"
	"sync"

	"filippo.io/edwards25519"
)

// Signature checking. Every signature of a log is independent of the
// others: the verifier's goroutine, which knows each record's session
// and so its key, queues them in batches, and workers on every core
// check each batch at once (batchOK) and, if the batch fails, each of its
// signatures alone with crypto/ed25519, so that every bad one is named.
// What a worker finds is put back in file order (findings).
//
// Memory: a batch holds at most maxBatch signatures and, past
// maxBatchBytes, no further signed bytes; at most 2×workers batches wait
// for a worker.

const (
	// maxBatch bounds the signatures of a batch: enough that the two
	// full-size scalar multiplications of a batch (the base point, the
	// key) cost little per signature, few enough that a log with few
	// signatures still spreads them over every core.
	maxBatch = 64
	// maxBatchBytes ends a batch once its signed bytes reach it.
	maxBatchBytes = 1 << 20
)

// sigJob is one signature to check: where its line is, and the end of
// its signed bytes in its batch's msgs.
type sigJob struct {
	pub  ed25519.PublicKey
	sig  [ed25519.SignatureSize]byte
	end  int
	at   place
	file string
	line uint64
	seq  uint64
	what string // the problem if it does not verify; "" for a record's signature
}

// sigBatch is signatures queued together, their signed bytes copied one
// after another into msgs (the lines they are in are recycled before the
// batch is checked). Batches are recycled (batches).
type sigBatch struct {
	msgs []byte
	jobs []sigJob
}

// msg returns the signed bytes of job i, valid until b is recycled.
func (b *sigBatch) msg(i int) []byte {
	start := 0
	if i > 0 {
		start = b.jobs[i-1].end
	}
	return b.msgs[start:b.jobs[i].end]
}

var batches = sync.Pool{New: func() any { return &sigBatch{} }}

// sigChecker queues signatures (add, by the verifier's goroutine) and
// checks them on workers; close waits for them and returns what failed.
// Of the signatures that fail it keeps the first maxProblems in file
// order, and at most maxKept at any time, and counts the rest.
//
// The workers start with the first full batch: a log of fewer than
// maxBatch signatures (a short log, a fuzzer's input) has its one batch
// checked by close on the verifier's goroutine, which costs no goroutine
// and no handoff, and the other cores have nothing to take from it.
type sigChecker struct {
	cur     *sigBatch // being filled
	workers int
	jobs    chan *sigBatch // nil until the workers start
	wg      sync.WaitGroup
	mu      sync.Mutex // guards bad and dropped
	bad     []placed
	dropped int
}

// newSigChecker returns a checker that checks full batches on workers
// goroutines; close stops them.
func newSigChecker(workers int) *sigChecker {
	return &sigChecker{workers: workers}
}

// add queues the signature sig of msg by pub, found at file and line,
// in place at. msg is copied: it may be reused once add returns.
func (c *sigChecker) add(pub ed25519.PublicKey, msg, sig []byte, at place, file string, line, seq uint64) {
	c.addWhat(pub, msg, sig, at, file, line, seq, "")
}

// addWhat is add for a signature other than a record's (a session key's
// certificate): what is the problem reported if it does not verify.
func (c *sigChecker) addWhat(pub ed25519.PublicKey, msg, sig []byte, at place, file string, line, seq uint64, what string) {
	b := c.cur
	if b == nil {
		b = batches.Get().(*sigBatch)
		b.msgs, b.jobs = b.msgs[:0], b.jobs[:0]
		c.cur = b
	}
	b.msgs = append(b.msgs, msg...)
	j := sigJob{pub: pub, end: len(b.msgs), at: at, file: file, line: line, seq: seq, what: what}
	copy(j.sig[:], sig)
	b.jobs = append(b.jobs, j)
	if len(b.jobs) >= maxBatch || len(b.msgs) >= maxBatchBytes {
		c.flush()
	}
}

// flush hands the batch being filled to the workers, starting them if
// they are not yet.
func (c *sigChecker) flush() {
	if c.cur == nil {
		return
	}
	if c.jobs == nil {
		c.jobs = make(chan *sigBatch, 2*c.workers)
		for range c.workers {
			c.wg.Add(1)
			go func() {
				defer c.wg.Done()
				var bv batchVerifier
				for b := range c.jobs {
					c.check(&bv, b)
				}
			}()
		}
	}
	c.jobs <- c.cur
	c.cur = nil
}

// close checks what is queued, stops the workers and returns the
// signatures that do not verify, in no particular order, and the count
// of those dropped past maxProblems.
func (c *sigChecker) close() ([]placed, int) {
	if c.jobs == nil {
		if c.cur != nil {
			var bv batchVerifier
			c.check(&bv, c.cur)
			c.cur = nil
		}
		return c.bad, c.dropped
	}
	c.flush()
	close(c.jobs)
	c.wg.Wait()
	return c.bad, c.dropped
}

// minBatch is the fewest signatures checked as a batch: below it the
// batch's setup (its lookup tables, two full-size multiplications) costs
// more than checking each with crypto/ed25519.
const minBatch = 4

// check checks batch b at once (batchVerifier) and, if it fails or holds
// fewer than minBatch signatures, signature by signature with
// crypto/ed25519, keeping those that do not verify; then recycles b.
func (c *sigChecker) check(bv *batchVerifier, b *sigBatch) {
	if len(b.jobs) < minBatch || !bv.ok(b) {
		for i := range b.jobs {
			j := &b.jobs[i]
			if !ed25519.Verify(j.pub, b.msg(i), j.sig[:]) {
				what := j.what
				if what == "" {
					what = "signature does not verify"
				}
				c.mu.Lock()
				c.bad = append(c.bad, placed{at: j.at, Problem: Problem{File: j.file, Line: j.line, Seq: j.seq, HasSeq: true, Msg: what}})
				if len(c.bad) > maxKept {
					c.bad, c.dropped = keepFirst(c.bad, c.dropped)
				}
				c.mu.Unlock()
			}
		}
	}
	batches.Put(b)
}

// batchVerifier checks a batch of Ed25519 signatures at once, composing
// filippo.io/edwards25519's calls: each signature (R, S) of message M by
// key A holds when [S]B = R + [k]A, k = SHA-512(R ‖ A ‖ M) mod ℓ. With a
// random 128-bit z_i for each signature of the batch, they all hold (but
// with probability 2⁻¹²⁸) when
//
//	[8]( Σ z_i·R_i + Σ_A (Σ_{i by A} z_i·k_i)·A − (Σ z_i·S_i)·B ) = 0
//
// one multi-scalar multiplication of a point per signature, by a short
// scalar, and one per key, instead of two full ones per signature. The
// factor 8 (the cofactor) makes this the cofactored equation that RFC
// 8032 allows; crypto/ed25519 checks the cofactorless one, which
// implies it. They differ only for a signature or key with a small-order
// component added, which only the key's holder can make (a forger
// without the key cannot, for either equation). So a batch also checks
// what crypto/ed25519 checks of the encodings (S below ℓ, R and A
// decoding) and leaves a signature whose R is not canonically encoded to
// crypto/ed25519 (it rejects it), and a batch that fails is checked
// again signature by signature with crypto/ed25519.
//
// A batchVerifier keeps its scratch space between batches; it is used by
// one goroutine.
type batchVerifier struct {
	rng     *mrand.ChaCha8
	scalars []edwards25519.Scalar
	points  []edwards25519.Point
	sp      []*edwards25519.Scalar
	pp      []*edwards25519.Point
	keys    []ed25519.PublicKey
	d       hash.Hash // SHA-512
	h       [64]byte
}

// ok reports whether every signature of b verifies; false if any does
// not, or if the batch cannot tell (an encoding crypto/ed25519 must
// judge).
func (v *batchVerifier) ok(b *sigBatch) bool {
	if v.rng == nil {
		var seed [32]byte
		rand.Read(seed[:]) // never fails (crypto/rand: it crashes the program instead)
		v.rng = mrand.NewChaCha8(seed)
		v.d = sha512.New()
	}
	n := len(b.jobs)
	// Points: R_1…R_n, then B, then each distinct key; scalars alike.
	v.scalars = grow(v.scalars, n+1+n)
	v.points = grow(v.points, n+1+n)
	v.keys = v.keys[:0]
	sumS := &v.scalars[n]
	*sumS = edwards25519.Scalar{}
	var s, k, z edwards25519.Scalar
	for i := range b.jobs {
		j := &b.jobs[i]
		if len(j.pub) != ed25519.PublicKeySize || j.sig[63]&0xe0 != 0 || !canonicalR(j.sig[:32]) {
			return false
		}
		if _, err := s.SetCanonicalBytes(j.sig[32:]); err != nil {
			return false
		}
		if _, err := v.points[i].SetBytes(j.sig[:32]); err != nil {
			return false
		}
		// The key's point and the scalar summed for it.
		a := -1
		for ki, key := range v.keys {
			if bytes.Equal(key, j.pub) {
				a = ki
				break
			}
		}
		if a < 0 {
			a = len(v.keys)
			if _, err := v.points[n+1+a].SetBytes(j.pub); err != nil {
				return false
			}
			v.keys = append(v.keys, j.pub)
			v.scalars[n+1+a] = edwards25519.Scalar{}
		}
		d := v.d
		d.Reset()
		d.Write(j.sig[:32])
		d.Write(j.pub)
		d.Write(b.msg(i))
		if _, err := k.SetUniformBytes(d.Sum(v.h[:0])); err != nil {
			return false
		}
		var zb [32]byte
		for zb == ([32]byte{}) {
			v.rng.Read(zb[:16])
		}
		if _, err := z.SetCanonicalBytes(zb[:]); err != nil {
			return false
		}
		v.scalars[i] = z
		sumS.MultiplyAdd(&z, &s, sumS)
		v.scalars[n+1+a].MultiplyAdd(&z, &k, &v.scalars[n+1+a])
	}
	sumS.Negate(sumS)
	v.points[n].Set(edwards25519.NewGeneratorPoint())
	m := n + 1 + len(v.keys)
	v.sp, v.pp = v.sp[:0], v.pp[:0]
	for i := range m {
		v.sp = append(v.sp, &v.scalars[i])
		v.pp = append(v.pp, &v.points[i])
	}
	var sum edwards25519.Point
	sum.VarTimeMultiScalarMult(v.sp, v.pp)
	sum.MultByCofactor(&sum)
	return sum.Equal(edwards25519.NewIdentityPoint()) == 1
}

// grow returns s resliced to n, or a new slice if s holds fewer.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// canonicalR reports whether an encoded point is surely canonical, by its
// bytes alone: a non-canonical encoding has y ≥ p = 2²⁵⁵ − 19 (bytes 1 to
// 30 all 0xff) or x = 0 with its sign bit set (y = 1, or y = p − 1, again
// bytes 1 to 30 all 0xff). edwards25519's SetBytes accepts both, and
// crypto/ed25519 rejects an R so encoded (it compares R's bytes with the
// canonical encoding of the point it computes); what this does not clear
// is left to crypto/ed25519.
func canonicalR(r []byte) bool {
	allFF := true
	for _, c := range r[1:31] {
		allFF = allFF && c == 0xff
	}
	if allFF {
		return false
	}
	if r[31]&0x80 != 0 && r[0] == 1 && r[31]&0x7f == 0 {
		for _, c := range r[1:31] {
			if c != 0 {
				return true
			}
		}
		return false // y = 1, x = 0, sign bit set
	}
	return true
}
