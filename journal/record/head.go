package record

import (
	"bytes"
	"crypto"
	"crypto/ed25519"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fastjson"

	"github.com/aegisrelay/aegis/internal/regular"
)

// Head names the last line of a log: its seq and the SHA-256 of its bytes.
type Head struct {
	Seq  uint64
	Hash Digest
}

func (h Head) String() string { return strconv.FormatUint(h.Seq, 10) + ":" + h.Hash.String() }

// ParseHeadString parses a head as String writes it, SEQ:sha256:<64 hex>
// (what wrap prints on exit, and verify --head takes).
func ParseHeadString(s string) (Head, error) {
	var h Head
	seq, hash, ok := strings.Cut(s, ":")
	n, err := strconv.ParseUint(seq, 10, 64)
	hexHash, ok2 := strings.CutPrefix(hash, "sha256:")
	raw, herr := hex.DecodeString(hexHash)
	if !ok || !ok2 || err != nil || herr != nil || len(raw) != len(h.Hash) {
		return h, fmt.Errorf("%q is not SEQ:sha256:<64 hex>", s)
	}
	h.Seq = n
	copy(h.Hash[:], raw)
	return h, nil
}

// SignedHead is the content of a head file: a head, when it was taken, and
// the key that signed it.
type SignedHead struct {
	Head
	TS  time.Time
	Key ed25519.PublicKey
}

// AppendHeadLine appends the head file's one line, signed by key:
//
//	{"v":2,"kind":"head","seq":N,"hash":"sha256:<hex>","ts":"<TimeLayout>","key":"ed25519:<base64>","sig":"ed25519:<base64>"}\n
//
// The signature covers the bytes before `,"sig":`, as in a record. The kind
// "head" is not a record kind, so the line can never pass for a record.
func AppendHeadLine(dst []byte, h Head, ts time.Time, key ed25519.PrivateKey) []byte {
	dst, _ = SignHeadLine(dst, h, ts, key) // an ed25519.PrivateKey's Sign never fails
	return dst
}

// SignHeadLine appends the head file's line as AppendHeadLine does,
// signed by key, any crypto.Signer of Ed25519: the log's root key, an
// ed25519.PrivateKey or one an ssh-agent holds (one round trip). On error
// dst is returned as it was.
func SignHeadLine(dst []byte, h Head, ts time.Time, key crypto.Signer) ([]byte, error) {
	pub, ok := key.Public().(ed25519.PublicKey)
	if !ok {
		return dst, fmt.Errorf("%w: head key is %T, not Ed25519", ErrKey, key.Public())
	}
	start := len(dst)
	dst = appendHeadSigned(dst, h, ts, pub)
	sig, err := key.Sign(nil, dst[start:], crypto.Hash(0))
	if err != nil {
		return dst[:start], fmt.Errorf("signing the head: %w", err)
	}
	if !ed25519.Verify(pub, dst[start:], sig) {
		return dst[:start], fmt.Errorf("%w: the key's signature of the head does not verify", ErrKey)
	}
	dst = AppendSig(dst, sig)
	return append(dst, '\n'), nil
}

// appendHeadSigned appends the part of a head line its signature covers,
// everything before `,"sig":` (AppendHeadLine): the one spelling of it,
// for the writer and for ParseHead's canonical check.
func appendHeadSigned(dst []byte, h Head, ts time.Time, key ed25519.PublicKey) []byte {
	dst = append(dst, `{"v":2,"kind":"head","seq":`...)
	dst = strconv.AppendUint(dst, h.Seq, 10)
	dst = AppendDigestField(dst, "hash", h.Hash)
	dst = append(dst, fieldTS...)
	dst = append(AppendTime(dst, ts), '"')
	return appendStringField(dst, "key", FormatPublicKey(key))
}

// ParseHead decodes and checks a head file's content: its form must be
// exactly what AppendHeadLine writes and its signature must verify
// against the key it names. Pinning that key is the caller's business.
func ParseHead(data []byte) (SignedHead, error) {
	var sh SignedHead
	line := bytes.TrimSuffix(data, []byte("\n"))
	var p fastjson.Parser
	v, err := p.ParseBytes(line)
	if err != nil {
		return sh, recordError("head file: not JSON: %v", err)
	}
	o, err := v.Object()
	if err != nil {
		return sh, recordError("head file: not a JSON object")
	}
	g := getter{o: o}
	if k := g.str("kind"); g.err == nil && string(k) != "head" {
		return sh, recordError("head file: kind %q, want \"head\"", k)
	}
	sh.Seq = g.uint("seq")
	sh.Hash = g.digest("hash")
	if ts := g.str("ts"); g.err == nil {
		if sh.TS, err = parseTime(ts); err != nil {
			g.fail("ts %q is not RFC 3339 UTC with nanoseconds", ts)
		}
	}
	if k := g.str("key"); g.err == nil {
		if sh.Key, err = ParsePublicKey(string(k)); err != nil {
			g.fail("key: %v", err)
		}
	}
	sig := g.key("sig", ed25519.SignatureSize)
	if g.err != nil {
		return sh, fmt.Errorf("head file: %w", g.err)
	}
	// Canonical form: re-encode the signed part and compare.
	want := appendHeadSigned(nil, sh.Head, sh.TS, sh.Key)
	signed := len(want)
	want = AppendSig(want, sig)
	if !bytes.Equal(want, line) || len(data) != len(line)+1 {
		return sh, recordError("head file: not in canonical form")
	}
	if !ed25519.Verify(sh.Key, line[:signed], sig) {
		return sh, recordError("head file: signature does not verify")
	}
	return sh, nil
}

// MaxHeadFile bounds the head file ReadHead reads: its one line is about
// 260 bytes.
const MaxHeadFile = 4 << 10

// ReadHead reads and checks a head file (ParseHead). A path that is not a
// regular file (ErrNotRegular) or holds more than MaxHeadFile bytes
// (ErrTooLarge) is not read.
func ReadHead(path string) (SignedHead, error) {
	data, _, err := regular.ReadFile(path, "a head file", MaxHeadFile)
	if err != nil {
		return SignedHead{}, err
	}
	sh, err := ParseHead(data)
	if err != nil {
		return sh, fmt.Errorf("%s: %w", path, err)
	}
	return sh, nil
}
