package record

import (
	"crypto"
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"strconv"
	"time"
)

// CertContext is the first line of every session key certificate's
// signed message: part of the format. It keeps a root key's signature of
// a certificate from passing for any other signature the root makes (a
// record line and a head file line begin with '{', a checkpoint with its
// origin aegis.log/…) and, through an ssh-agent, for any SSH signature
// (a user authentication blob begins with a 4-byte length, an SSHSIG
// with "SSHSIG").
const CertContext = "aegis session key v1"

// SessionCert is a root key's certificate of a session key, carried in
// session_start as "cert" (doc.go, "Session keys"):
//
//	"cert":{"root":"ed25519:<base64>","seq":N,"prev":"sha256:<hex>","ts":"<TimeLayout>","sig":"ed25519:<base64>"}
//
// Root signs CertMessage: the session key (the session_start's "key"),
// where the key's first session begins in its log (Seq and Prev: the seq
// and prev of that session's first record, its session_start or the
// recovery before it) and when the certificate was made (TS). A later
// session of the same journal (sessions sharing one log) carries the same
// key and the same certificate. Sig is shared by copies of a SessionCert.
type SessionCert struct {
	Root ed25519.PublicKey
	Seq  uint64
	Prev Digest
	TS   time.Time
	Sig  []byte // ed25519.SignatureSize bytes
}

// CertMessage appends to dst the message a root key signs to certify key
// for the sessions begun at seq, after the line whose hash is prev, at
// ts. Each line ends with '\n':
//
//	aegis session key v1
//	root ed25519:<base64 of the root key>
//	key ed25519:<base64 of the session key>
//	seq <decimal>
//	prev sha256:<64 hex digits>
//	ts <TimeLayout, UTC>
func CertMessage(dst []byte, root, key ed25519.PublicKey, seq uint64, prev Digest, ts time.Time) []byte {
	dst = append(dst, CertContext+"\nroot "...)
	dst = append(dst, FormatPublicKey(root)...)
	dst = append(dst, "\nkey "...)
	dst = append(dst, FormatPublicKey(key)...)
	dst = append(dst, "\nseq "...)
	dst = strconv.AppendUint(dst, seq, 10)
	dst = append(dst, "\nprev "...)
	dst = prev.Append(dst)
	dst = append(dst, "\nts "...)
	dst = AppendTime(dst, ts)
	return append(dst, '\n')
}

// Certify makes root's certificate of key for the sessions begun at seq,
// after the line whose hash is prev, at ts. root is any crypto.Signer of
// Ed25519 (an ed25519.PrivateKey, an ssh-agent's key): Certify makes one
// signature with it (through an agent, one round trip) and checks it, so
// that a signer that returns anything but a valid Ed25519 signature of
// the message is refused here rather than leaving a log no one can
// verify.
func Certify(root crypto.Signer, key ed25519.PublicKey, seq uint64, prev Digest, ts time.Time) (*SessionCert, error) {
	rootPub, ok := root.Public().(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("%w: root key is %T, not Ed25519", ErrKey, root.Public())
	}
	c := &SessionCert{Root: rootPub, Seq: seq, Prev: prev, TS: ts.UTC()}
	msg := CertMessage(nil, rootPub, key, seq, prev, c.TS)
	sig, err := root.Sign(nil, msg, crypto.Hash(0))
	if err != nil {
		return nil, fmt.Errorf("certifying the session key: %w", err)
	}
	if !ed25519.Verify(rootPub, msg, sig) {
		return nil, fmt.Errorf("%w: the root key's signature of the session key certificate does not verify", ErrKey)
	}
	c.Sig = sig
	return c, nil
}

// Verify reports whether c is Root's certificate of key, as it states
// (Seq, Prev and TS are taken as c states them: whether the key's first
// session begins there is the verifier's to check).
func (c *SessionCert) Verify(key ed25519.PublicKey) bool {
	if checkPublicKey(c.Root) != nil || len(c.Sig) != ed25519.SignatureSize {
		return false
	}
	return ed25519.Verify(c.Root, CertMessage(nil, c.Root, key, c.Seq, c.Prev, c.TS), c.Sig)
}

// appendCert appends `,"cert":{…}`.
func appendCert(dst []byte, c *SessionCert) []byte {
	dst = append(appendKey(dst, "cert"), '{')
	dst = appendStringField(dst, "root", FormatPublicKey(c.Root))
	dst = appendUintField(dst, "seq", c.Seq)
	dst = AppendDigestField(dst, "prev", c.Prev)
	dst = append(appendKey(dst, "ts"), '"')
	dst = append(AppendTime(dst, c.TS), '"')
	dst = appendStringField(dst, "sig", FormatSignature(c.Sig))
	return append(dst, '}')
}

// decodeCert reads a "cert" object as appendCert writes it.
func decodeCert(g *getter) *SessionCert {
	o := g.obj("cert")
	c := &SessionCert{}
	c.Root = o.key("root", ed25519.PublicKeySize)
	if o.err == nil {
		if err := checkPublicKey(c.Root); err != nil {
			o.fail("cert root: %v", err)
		}
	}
	c.Seq = o.uint("seq")
	c.Prev = o.digest("prev")
	if ts := o.str("ts"); o.err == nil {
		t, err := time.Parse(TimeLayout, string(ts))
		if err != nil {
			o.fail("cert ts %q is not RFC 3339 UTC with nanoseconds", ts)
		}
		c.TS = t
	}
	c.Sig = o.key("sig", ed25519.SignatureSize)
	g.merge(o)
	return c
}

// FormatSignature returns "ed25519:<base64>" of an Ed25519 signature, the
// form of a certificate's "sig".
func FormatSignature(sig []byte) string {
	return keyPrefix + base64.StdEncoding.EncodeToString(sig)
}
