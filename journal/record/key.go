package record

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"strings"

	"filippo.io/edwards25519"
	"golang.org/x/crypto/ssh"

	"github.com/aegisrelay/aegis/internal/regular"
)

// GenerateKey returns a new Ed25519 private key.
func GenerateKey() (ed25519.PrivateKey, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	return priv, err
}

// MarshalPrivateKey encodes k as a PKCS#8 PEM block ("PRIVATE KEY"), the
// form `openssl pkey` reads.
func MarshalPrivateKey(k ed25519.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// ParsePrivateKey decodes a PKCS#8 PEM Ed25519 private key.
func ParsePrivateKey(data []byte) (ed25519.PrivateKey, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("%w: no PEM block", ErrKey)
	}
	if block.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("%w: PEM block is %q, want PKCS#8 \"PRIVATE KEY\"", ErrKey, block.Type)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrKey, err)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%w: %T is not an Ed25519 key", ErrKey, k)
	}
	return priv, nil
}

// Limits of the files ReadPrivateKeyFile and ReadPublicKeyFile read whole.
// An Ed25519 key is 119 bytes as PKCS#8 PEM and 53 as a .pub file; the
// limits leave room for PEM headers and comments, and keep a wrong path
// (/dev/zero, a log, a sparse file) from being read without end.
const (
	MaxPrivateKeyFile = 16 << 10
	MaxPublicKeyFile  = 4 << 10
)

// ReadPrivateKeyFile reads a PKCS#8 PEM Ed25519 private key from the
// regular file at path (ErrNotRegular, ErrTooLarge: see readWhole). Unless
// allowOpen, a file that its group or others can read or write, by any
// permission bit (mode&0o077, as ssh judges private keys), is refused with
// ErrKeyMode: whoever can read the key can sign records that verify as
// this log's, and whoever can write it can swap in a key of their own.
func ReadPrivateKeyFile(path string, allowOpen bool) (ed25519.PrivateKey, error) {
	data, st, err := regular.ReadFile(path, "a private key file", MaxPrivateKeyFile)
	if err != nil {
		return nil, err
	}
	// Parsed first: a file that is no key at all (a .pub given by
	// mistake) is better told so than told its mode.
	k, err := ParsePrivateKey(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 && !allowOpen {
		return nil, fmt.Errorf("%w: permissions %04o for '%s' are too open: anyone who can read the key can sign records as this log's, and anyone who can write it can replace it; it must be readable by its owner only (chmod 600 %s)",
			ErrKeyMode, perm, path, path)
	}
	return k, nil
}

// ReadPublicKeyFile reads a public key in either form ParsePublicKey
// reads (a .pub file from aegis keygen or from ssh-keygen -t ed25519)
// from the regular file at path.
func ReadPublicKeyFile(path string) (ed25519.PublicKey, error) {
	data, _, err := regular.ReadFile(path, "a public key file", MaxPublicKeyFile)
	if err != nil {
		return nil, err
	}
	k, err := ParsePublicKey(string(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}

// FormatPublicKey returns "ed25519:<base64 of the 32 raw bytes>".
func FormatPublicKey(pub ed25519.PublicKey) string {
	return keyPrefix + base64.StdEncoding.EncodeToString(pub)
}

// ParsePublicKey parses a public key in the form FormatPublicKey writes,
// or in OpenSSH's ("ssh-ed25519 AAAA… [comment]", a line of an
// ssh-keygen .pub file or of ssh-add -L), so that the root key an
// ssh-agent holds can be pinned as its owner has it. Surrounding white
// space is ignored, so the contents of a .pub file can be passed as they
// are.
func ParsePublicKey(s string) (ed25519.PublicKey, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, ssh.KeyAlgoED25519+" ") {
		return parseSSHPublicKey(s)
	}
	b64, ok := strings.CutPrefix(s, keyPrefix)
	if !ok {
		return nil, fmt.Errorf("%w: public key %q does not start with %q or %q", ErrKey, clip(s), keyPrefix, ssh.KeyAlgoED25519+" ")
	}
	raw, err := base64.StdEncoding.Strict().DecodeString(b64)
	if err != nil || len(raw) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("%w: public key %q is not 32 bytes of base64", ErrKey, clip(s))
	}
	if err := checkPublicKey(raw); err != nil {
		return nil, err
	}
	return ed25519.PublicKey(raw), nil
}

// parseSSHPublicKey parses an OpenSSH authorized_keys line of an Ed25519
// key (golang.org/x/crypto/ssh).
func parseSSHPublicKey(s string) (ed25519.PublicKey, error) {
	pk, _, _, rest, err := ssh.ParseAuthorizedKey([]byte(s))
	if err != nil {
		return nil, fmt.Errorf("%w: public key %q: %v", ErrKey, clip(s), err)
	}
	if len(bytes.TrimSpace(rest)) > 0 {
		return nil, fmt.Errorf("%w: public key %q: more than one key", ErrKey, clip(s))
	}
	ck, ok := pk.(ssh.CryptoPublicKey)
	if !ok {
		return nil, fmt.Errorf("%w: public key %q is not Ed25519", ErrKey, clip(s))
	}
	raw, ok := ck.CryptoPublicKey().(ed25519.PublicKey)
	if !ok || pk.Type() != ssh.KeyAlgoED25519 {
		return nil, fmt.Errorf("%w: public key %q is %s, not Ed25519", ErrKey, clip(s), pk.Type())
	}
	if err := checkPublicKey(raw); err != nil {
		return nil, err
	}
	return raw, nil
}

// checkPublicKey rejects what is not a usable Ed25519 public key: bytes
// that do not decode to a curve point, and points of small order (the
// identity among them), for which crypto/ed25519 accepts a signature that
// anyone can make without a private key, over any message.
func checkPublicKey(raw []byte) error {
	p, err := new(edwards25519.Point).SetBytes(raw)
	if err != nil {
		return fmt.Errorf("%w: public key is not a point on Ed25519", ErrKey)
	}
	if new(edwards25519.Point).MultByCofactor(p).Equal(edwards25519.NewIdentityPoint()) == 1 {
		return fmt.Errorf("%w: public key is a point of small order: any signature made with it is forgeable", ErrKey)
	}
	return nil
}

func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}
