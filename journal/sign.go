package journal

import (
	"crypto/ed25519"
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
