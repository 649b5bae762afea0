package tlog

import (
	"crypto/ed25519"
	"strings"
	"testing"
)

// TestFindCheckpoint: the checkpoint of a size (or the last) is found in
// a file or a history, signed or read unverified; a torn last note is
// passed over and its length returned; a bad note is an error only when
// it is the one asked for.
func TestFindCheckpoint(t *testing.T) {
	pub := fixedKey.Public().(ed25519.PublicKey)
	_, other, _ := ed25519.GenerateKey(nil)
	sign := func(size uint64, key ed25519.PrivateKey) []byte {
		t.Helper()
		c := Checkpoint{Origin: OriginPrefix + "0123456789abcdef", Size: size, Root: LeafHash([]byte{byte(size)})}
		s, err := Signer(c.Origin, key)
		if err != nil {
			t.Fatal(err)
		}
		n, err := Sign(c, s)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	cat := func(notes ...[]byte) []byte {
		var b []byte
		for _, n := range notes {
			b = append(b, n...)
		}
		return b
	}
	c3, c5, bad7 := sign(3, fixedKey), sign(5, fixedKey), sign(7, other)
	torn := c5[:len(c5)-10]
	tests := []struct {
		name     string
		data     []byte
		pub      ed25519.PublicKey
		size     uint64
		wantSize uint64
		wantTorn int
		wantErr  string // "" for none
	}{
		{"one, last", c3, pub, 0, 3, 0, ""},
		{"history, last", cat(c3, c5), pub, 0, 5, 0, ""},
		{"history, by size", cat(c3, c5), pub, 3, 3, 0, ""},
		{"history, size absent", cat(c3, c5), pub, 4, 0, 0, "no checkpoint of tree size 4 in it"},
		{"torn last passed over", cat(c3, torn), pub, 0, 3, len(torn), ""},
		{"unverified", bad7, nil, 0, 7, 0, ""},
		{"another key, the one asked for", cat(c3, bad7), pub, 0, 0, 0, "checkpoint"},
		{"another key, not the one asked for", cat(c3, bad7), pub, 3, 3, 0, ""},
		{"one, another key", bad7, pub, 7, 0, 0, "checkpoint"},
		{"empty", nil, pub, 0, 0, 0, "no checkpoint of tree size 0 in it"},
	}
	for _, tt := range tests {
		c, tornLen, err := FindCheckpoint(tt.data, tt.pub, tt.size)
		if tornLen != tt.wantTorn {
			t.Errorf("%s: FindCheckpoint torn = %d; want %d", tt.name, tornLen, tt.wantTorn)
		}
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: FindCheckpoint = %+v, %v; want an error with %q", tt.name, c, err, tt.wantErr)
			}
			continue
		}
		if err != nil || c.Size != tt.wantSize {
			t.Errorf("%s: FindCheckpoint = size %d, %v; want size %d", tt.name, c.Size, err, tt.wantSize)
		}
	}
}

// TestDecodeProof: a proof's type is read first, then the proof strictly.
func TestDecodeProof(t *testing.T) {
	tests := []struct {
		name, data, wantType, wantErr string
	}{
		{"inclusion", `{"type":"` + TypeInclusion + `","leaf_index":1}`, TypeInclusion, ""},
		{"unknown field", `{"type":"` + TypeInclusion + `","extra":1}`, TypeInclusion, "unknown field"},
		{"two values", `{"type":"` + TypeInclusion + `"} {}`, "", "not a proof"},
		{"not JSON", `nope`, "", "not a proof"},
	}
	for _, tt := range tests {
		typ, err := ProofType([]byte(tt.data))
		if err == nil {
			var p Inclusion
			err = DecodeProof([]byte(tt.data), &p)
		}
		if tt.wantType != "" && typ != tt.wantType {
			t.Errorf("%s: ProofType = %q; want %q", tt.name, typ, tt.wantType)
		}
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%s: decoding = %v; want no error", tt.name, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%s: decoding = %v; want an error with %q", tt.name, err, tt.wantErr)
		}
	}
	var p Inclusion
	if err := DecodeProof([]byte(`{"type":"`+TypeInclusion+`"} {}`), &p); err == nil || err.Error() != "more than one JSON value" {
		t.Errorf("DecodeProof(two values) = %v; want more than one JSON value", err)
	}
}
