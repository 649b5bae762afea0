package journal

import (
	"crypto"
	"crypto/ed25519"
	"fmt"
	"io"

	"golang.org/x/mod/sumdb/note"

	"github.com/aegisrelay/aegis/journal/record"
	"github.com/aegisrelay/aegis/journal/tlog"
)

// signer makes the journal's Ed25519 signatures: RFC 8032's, by
// crypto/ed25519, whose nonce is r = SHA-512(prefix ‖ M) for the key's
// secret prefix and the message M.
//
// The nonce is derived from the message it signs, and from nothing drawn
// earlier, on purpose. An Ed25519 signature (R, S) of M has S = r + k·s
// with k = SHA-512(R ‖ A ‖ M); two signatures made with one r over two
// messages give two equations in the secret scalar s, and reveal it. Any
// r fixed before M is known (a pool of random nonces with R = r·B
// precomputed) is a value in memory that a copy of that memory holds
// too: a virtual machine snapshot restored twice, a forked process, a
// checkpointed container, each continuing to sign its own records, would
// spend the same r on different messages. With r = H(prefix ‖ M) a
// restored copy signs different messages with different nonces and the
// same message with the same signature, which reveals nothing.
//
// The cost is the fixed-base multiplication r·B on the path of the group
// a signature ends (BenchmarkSign, BenchmarkAppend). The key expansion
// (SHA-512 of the seed) is redone by crypto/ed25519 on every call; it is a
// small part of a signature and involves no nonce.
//
// A signer holds no state but the key; Sign may be called concurrently.
type signer struct {
	key ed25519.PrivateKey
}

func newSigner(key ed25519.PrivateKey) *signer { return &signer{key: key} }

// Sign returns the Ed25519 signature of msg (RFC 8032, deterministic).
func (g *signer) Sign(msg []byte) (sig [ed25519.SignatureSize]byte) {
	copy(sig[:], ed25519.Sign(g.key, msg))
	return sig
}

// newSessionKey makes the key that signs one session's records: Ed25519,
// from 32 bytes of rand. It lives in the Journal's memory only, never in
// a file, the head or the log (which holds its public half and the root
// key's certificate of it: doc.go, "Session keys"); the process that
// holds it is the session.
func newSessionKey(rand io.Reader) (ed25519.PrivateKey, error) {
	var seed [ed25519.SeedSize]byte
	if _, err := io.ReadFull(rand, seed[:]); err != nil {
		return nil, fmt.Errorf("session key: %w", err)
	}
	return ed25519.NewKeyFromSeed(seed[:]), nil
}

// rootPublicKey returns the public half of a root key, checking that it
// is an Ed25519 signer: a nil or cut ed25519.PrivateKey (whose Public
// would panic) and a signer of any other algorithm are refused.
func rootPublicKey(key crypto.Signer) (ed25519.PublicKey, error) {
	if k, ok := key.(ed25519.PrivateKey); key == nil || ok && len(k) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("%w: signing key is missing or not Ed25519", record.ErrKey)
	}
	pub, ok := key.Public().(ed25519.PublicKey)
	if !ok || len(pub) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("%w: signing key is %T, not Ed25519", record.ErrKey, key.Public())
	}
	return pub, nil
}

// newRootNoteSigner returns the signer of checkpoints of origin (package
// tlog's signed notes) with the root key, any crypto.Signer of Ed25519
// (tlog.Signer). Each Sign is one signature by the root: through an
// ssh-agent, one round trip, made on the checkpointer's goroutine, off
// the records' path.
func newRootNoteSigner(origin string, key crypto.Signer) (note.Signer, error) {
	return tlog.Signer(origin, key)
}

// sessionKey is the public half of a journal's session key and the root
// key's certificate of it, which every session_start it appends carries.
type sessionKey struct {
	pub  ed25519.PublicKey
	cert *record.SessionCert
}

// newSession makes a journal's session key (newSessionKey, from
// opts.Rand) and has the root key (opts.Key) certify it for the sessions
// whose first record is seq, after the line whose hash is prev: the one
// signature by the root a journal's records need (through an ssh-agent,
// one round trip), made at Open, before any record is on its way. It
// returns the signer of the records.
func newSession(opts Options, seq uint64, prev record.Digest) (*signer, sessionKey, error) {
	k, err := newSessionKey(opts.Rand)
	if err != nil {
		return nil, sessionKey{}, err
	}
	pub := k.Public().(ed25519.PublicKey)
	cert, err := record.Certify(opts.Key, pub, opts.SID, seq, prev, opts.Now())
	if err != nil {
		return nil, sessionKey{}, err
	}
	return newSigner(k), sessionKey{pub: pub, cert: cert}, nil
}
