package record

import (
	"crypto"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"
)

// CertContext and CertContextV1 are the first line of a session key
// certificate's signed message: part of the format. The first line keeps
// a root key's signature of a certificate from passing for any other
// signature the root makes (a record line and a head file line begin with
// '{', a checkpoint with its origin aegis.log/…) and, through an
// ssh-agent, for any SSH signature (a user authentication blob begins with
// a 4-byte length, an SSHSIG with "SSHSIG"). Certify writes CertContext
// (v2, which names the session); a v1 certificate, written before, is
// still read and checked as it was.
const (
	CertContext   = "aegis session key v2"
	CertContextV1 = "aegis session key v1"
)

// SessionCert is a root key's certificate of a session key, carried in
// session_start as "cert" (doc.go, "Session keys"):
//
//	"cert":{"root":"ed25519:<base64>","sid":"<32 hex>","seq":N,"prev":"sha256:<hex>","ts":"<TimeLayout>","sig":"ed25519:<base64>"}
//
// Root signs the certificate's message (AppendMessage): the session key
// (the session_start's "key"), the session it is made for (SID: the sid
// of the first session_start that carries it), where that session begins
// in its log (Seq and Prev: the seq and prev of its first record, its
// session_start or the recovery before it) and when the certificate was
// made (TS, no later than that session_start's ts). A later session of the
// same journal (sessions sharing one log) carries the same key and the
// same certificate. Sig is shared by copies of a SessionCert.
//
// A v1 certificate (V1 true) has no "sid" and its message does not name
// the session: it is read so that logs written before v2 verify as they
// did, and Certify never makes one.
type SessionCert struct {
	Root ed25519.PublicKey
	V1   bool
	SID  [16]byte // zero in a v1 certificate
	Seq  uint64
	Prev Digest
	TS   time.Time
	Sig  []byte // ed25519.SignatureSize bytes
}

// AppendMessage appends to dst the message c's root signs to certify key.
// Each line ends with '\n'; a v2 certificate's is
//
//	aegis session key v2
//	root ed25519:<base64 of the root key>
//	key ed25519:<base64 of the session key>
//	sid <32 hex digits>
//	seq <decimal>
//	prev sha256:<64 hex digits>
//	ts <TimeLayout, UTC>
//
// and a v1 certificate's has CertContextV1 for its first line and no sid
// line.
func (c *SessionCert) AppendMessage(dst []byte, key ed25519.PublicKey) []byte {
	if c.V1 {
		dst = append(dst, CertContextV1+"\nroot "...)
	} else {
		dst = append(dst, CertContext+"\nroot "...)
	}
	dst = append(dst, FormatPublicKey(c.Root)...)
	dst = append(dst, "\nkey "...)
	dst = append(dst, FormatPublicKey(key)...)
	if !c.V1 {
		dst = append(dst, "\nsid "...)
		dst = hex.AppendEncode(dst, c.SID[:])
	}
	dst = append(dst, "\nseq "...)
	dst = strconv.AppendUint(dst, c.Seq, 10)
	dst = append(dst, "\nprev "...)
	dst = c.Prev.Append(dst)
	dst = append(dst, "\nts "...)
	dst = AppendTime(dst, c.TS)
	return append(dst, '\n')
}

// Certify makes root's certificate of key for the session sid, whose
// first record is seq, after the line whose hash is prev, at ts. root is
// any crypto.Signer of Ed25519 (an ed25519.PrivateKey, an ssh-agent's
// key): Certify makes one signature with it (through an agent, one round
// trip) and checks it, so that a signer that returns anything but a valid
// Ed25519 signature of the message is refused here rather than leaving a
// log no one can verify.
func Certify(root crypto.Signer, key ed25519.PublicKey, sid [16]byte, seq uint64, prev Digest, ts time.Time) (*SessionCert, error) {
	rootPub, ok := root.Public().(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("%w: root key is %T, not Ed25519", ErrKey, root.Public())
	}
	c := &SessionCert{Root: rootPub, SID: sid, Seq: seq, Prev: prev, TS: ts.UTC()}
	msg := c.AppendMessage(nil, key)
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
// (SID, Seq, Prev and TS are taken as c states them: whether the key's
// first session is that one and begins there is the verifier's to check).
func (c *SessionCert) Verify(key ed25519.PublicKey) bool {
	if checkPublicKey(c.Root) != nil || len(c.Sig) != ed25519.SignatureSize {
		return false
	}
	return ed25519.Verify(c.Root, c.AppendMessage(nil, key), c.Sig)
}

// appendCert appends `,"cert":{…}`; "sid" only in a v2 certificate.
func appendCert(dst []byte, c *SessionCert) []byte {
	dst = append(appendKey(dst, "cert"), '{')
	dst = appendStringField(dst, "root", FormatPublicKey(c.Root))
	if !c.V1 {
		dst = append(appendKey(dst, "sid"), '"')
		dst = append(hex.AppendEncode(dst, c.SID[:]), '"')
	}
	dst = appendUintField(dst, "seq", c.Seq)
	dst = AppendDigestField(dst, "prev", c.Prev)
	dst = append(appendKey(dst, "ts"), '"')
	dst = append(AppendTime(dst, c.TS), '"')
	dst = appendStringField(dst, "sig", FormatSignature(c.Sig))
	return append(dst, '}')
}

// decodeCert reads a "cert" object as appendCert writes it: without
// "sid", a v1 certificate.
func decodeCert(g *getter) *SessionCert {
	o := g.obj("cert")
	c := &SessionCert{}
	c.Root = o.key("root", ed25519.PublicKeySize)
	if o.err == nil {
		if err := checkPublicKey(c.Root); err != nil {
			o.fail("cert root: %v", err)
		}
	}
	if o.has("sid") {
		// The length is checked first: hex.Decode writes past a short
		// destination. Upper case decodes but is not the canonical form,
		// which the decoder's re-encoding refuses.
		if s := o.str("sid"); o.err == nil {
			if len(s) != 2*len(c.SID) {
				o.fail("cert sid %q is not 32 hex digits", s)
			} else if _, err := hex.Decode(c.SID[:], s); err != nil {
				o.fail("cert sid %q is not 32 hex digits", s)
			}
		}
	} else {
		c.V1 = true
	}
	c.Seq = o.uint("seq")
	c.Prev = o.digest("prev")
	if ts := o.str("ts"); o.err == nil {
		t, err := parseTime(ts)
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
