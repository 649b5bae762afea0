package verify

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"slices"
	"testing"

	"filippo.io/edwards25519"
)

// TestSigCheckerAgreesWithEd25519: the checker names exactly the
// signatures crypto/ed25519 rejects, batch by batch, with one key or
// several in a batch, whatever is wrong with a signature: a changed
// message, R or S, an S not below ℓ, a non-canonical R, the wrong key.
func TestSigCheckerAgreesWithEd25519(t *testing.T) {
	keys := []ed25519.PrivateKey{testKey(t), testKey(t), testKey(t)}
	type sig struct {
		pub      ed25519.PublicKey
		msg, sig []byte
	}
	corrupt := map[string]func(s *sig){
		"message": func(s *sig) { s.msg[3] ^= 1 },
		"R":       func(s *sig) { s.sig[5] ^= 1 },
		"S":       func(s *sig) { s.sig[40] ^= 1 },
		"S+ℓ": func(s *sig) {
			// S + ℓ encodes the same scalar, not canonically.
			var carry int
			order := [32]byte{ // ℓ, little-endian
				0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14, 31: 0x10}
			for i := range 32 {
				v := int(s.sig[32+i]) + int(order[i]) + carry
				s.sig[32+i], carry = byte(v), v>>8
			}
		},
		"R not canonical": func(s *sig) {
			// y = p + 1 encodes y = 1; the sig is then judged by crypto/ed25519.
			copy(s.sig[:32], []byte{0xee, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
				0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f})
		},
		"other key": func(s *sig) {
			s.pub = keys[(slices.IndexFunc(keys, func(k ed25519.PrivateKey) bool { return k.Public().(ed25519.PublicKey).Equal(s.pub) })+1)%len(keys)].Public().(ed25519.PublicKey)
		},
	}
	// Each message's signature by each key, made once: ed25519 signatures
	// are deterministic, and every case corrupts copies of them.
	const most = 200
	signed := make([][]sig, len(keys))
	for ki, k := range keys {
		for i := range most {
			msg := fmt.Appendf(nil, "record %d of the log", i)
			signed[ki] = append(signed[ki], sig{pub: k.Public().(ed25519.PublicKey), msg: msg, sig: ed25519.Sign(k, msg)})
		}
	}
	for name, bad := range corrupt {
		for _, n := range []int{1, 2, 63, 64, 65, most} {
			for _, nkeys := range []int{1, 3} {
				t.Run(fmt.Sprintf("%s/%d sigs/%d keys", name, n, nkeys), func(t *testing.T) {
					c := newSigChecker(2)
					var want []uint64
					for i := range n {
						s := signed[i%nkeys][i]
						s.msg, s.sig = bytes.Clone(s.msg), bytes.Clone(s.sig)
						if i%7 == 1 || n == 1 {
							bad(&s)
						}
						if !ed25519.Verify(s.pub, s.msg, s.sig) {
							want = append(want, uint64(i))
						}
						var f findings
						c.add(s.pub, s.msg, s.sig, f.here(), "f", uint64(i), uint64(i))
					}
					var got []uint64
					bad, _ := c.close()
					for _, p := range bad {
						got = append(got, p.Line)
					}
					slices.Sort(got)
					if !slices.Equal(got, want) || len(want) == 0 {
						t.Errorf("bad signatures = %v; want %v (crypto/ed25519's, at least one)", got, want)
					}
				})
			}
		}
	}
}

// TestCanonicalR: the encodings edwards25519 accepts and crypto/ed25519
// rejects as an R are told apart by their bytes.
func TestCanonicalR(t *testing.T) {
	ff := func(first, last byte) []byte {
		b := make([]byte, 32)
		for i := range b {
			b[i] = 0xff
		}
		b[0], b[31] = first, last
		return b
	}
	one := func(last byte) []byte {
		b := make([]byte, 32)
		b[0], b[31] = 1, last
		return b
	}
	tests := []struct {
		name string
		r    []byte
		want bool
	}{
		{"y = p", ff(0xed, 0x7f), false},
		{"y = 2^255 - 1", ff(0xff, 0x7f), false},
		{"y = p - 1 (x = 0), sign set", ff(0xec, 0xff), false},
		{"y = 1, sign clear (the identity)", one(0x00), true},
		{"y = 1, sign set", one(0x80), false},
		{"the base point", edwards25519.NewGeneratorPoint().Bytes(), true},
	}
	for _, tt := range tests {
		if got := canonicalR(tt.r); got != tt.want {
			t.Errorf("canonicalR(%s) = %v; want %v", tt.name, got, tt.want)
		}
	}
}
