package witness

import (
	"crypto"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"
)

// Key algorithms of a note verifier key (C2SP signed-note): part of the
// format of a witness key.
const (
	algEd25519     = 0x01 // a plain Ed25519 note signature
	algCosignature = 0x04 // C2SP tlog-cosignature cosignature/v1
)

// ParseKey reads a witness's note verifier key, name+hash+base64 as a
// witness publishes it (litewitness logs it as vkey at start): of a
// timestamped cosignature/v1 key (algorithm 0x04, C2SP
// tlog-cosignature), the form tlog-witness witnesses sign with, or of a
// plain Ed25519 note key (0x01). The verifier it returns checks the
// witness's signature line on a checkpoint note (note.Open); the
// cosignature/v1 checks are torchwood's.
func ParseKey(vkey string) (note.Verifier, error) {
	// The name has no '+' and the hash is hex; the base64 may hold '+'.
	name, rest, ok1 := strings.Cut(vkey, "+")
	hash16, key64, ok2 := strings.Cut(rest, "+")
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("%w: %q: want name+hash+base64", ErrKey, vkey)
	}
	hash, err := strconv.ParseUint(hash16, 16, 32)
	if err != nil || len(hash16) != 8 {
		return nil, fmt.Errorf("%w: %q: the key hash is not 8 hex digits", ErrKey, vkey)
	}
	key, err := base64.StdEncoding.DecodeString(key64)
	if err != nil || len(key) != 1+ed25519.PublicKeySize {
		return nil, fmt.Errorf("%w: %q: the key is not an algorithm byte and 32 bytes of base64", ErrKey, vkey)
	}
	switch key[0] {
	case algEd25519:
		v, err := note.NewVerifier(vkey)
		if err != nil {
			return nil, fmt.Errorf("%w: %q: %v", ErrKey, vkey, err)
		}
		return v, nil
	case algCosignature:
		// torchwood v0.6.1 builds a CosignatureVerifier only beside its
		// signer; a signer that holds the public key alone and cannot
		// sign gives the verifier without any key material to misuse.
		s, err := torchwood.NewCosignatureSigner(name, publicOnly(key[1:]))
		if err != nil {
			return nil, fmt.Errorf("%w: %q: %v", ErrKey, vkey, err)
		}
		v := s.Verifier()
		if v.KeyHash() != uint32(hash) {
			return nil, fmt.Errorf("%w: %q: the key hash is not the key's", ErrKey, vkey)
		}
		return v, nil
	}
	return nil, fmt.Errorf("%w: %q: algorithm %#x is neither Ed25519 (0x01) nor cosignature/v1 (0x04)", ErrKey, vkey, key[0])
}

// publicOnly is a crypto.Signer that holds only an Ed25519 public key.
type publicOnly ed25519.PublicKey

func (p publicOnly) Public() crypto.PublicKey { return ed25519.PublicKey(p) }

func (publicOnly) Sign(io.Reader, []byte, crypto.SignerOpts) ([]byte, error) {
	return nil, errors.New("witness: a verifier key cannot sign")
}

// CosignatureKey returns the note verifier key of the cosignature/v1
// witness named name whose Ed25519 public key is pub: the form ParseKey
// reads and witnesses publish.
func CosignatureKey(name string, pub ed25519.PublicKey) (string, error) {
	s, err := torchwood.NewCosignatureSigner(name, publicOnly(pub))
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrKey, err)
	}
	return s.Verifier().String(), nil
}
