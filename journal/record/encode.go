package record

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"strconv"
	"unicode/utf8"
)

// Format constants. They are part of the log format: changing any of them
// makes every existing log unverifiable.
const (
	// Version is the record schema version written in "v".
	Version = 2
	// TimeLayout is the layout of "ts": RFC 3339, UTC, always nine digits of
	// nanoseconds so that the text is canonical.
	TimeLayout = "2006-01-02T15:04:05.000000000Z"

	digestPrefix = "sha256:"
	keyPrefix    = "ed25519:"
	SigField     = `,"sig":"` + keyPrefix

	// MaxLine is the longest line, in bytes without its '\n', that the
	// journal writes and that Verify and Open read: Append refuses a record
	// that would be longer (CheckFields), so no line the journal writes is
	// one its readers reject.
	// The bound keeps memory finite on hostile input: fastjson holds ~50
	// bytes per byte of a line of tiny values.
	MaxLine = 1 << 20
	// MaxValueBytes is the longest call id, tool name or policy rule
	// recorded whole, measured as recorded (a number's literal; a
	// string's canonical text, fitsWhole); a longer one is recorded
	// abbreviated (appendAbbrev).
	// Every id and tool name seen in practice is far shorter (numbers,
	// UUIDs; MCP asks tool names to be at most 128 characters), and the
	// bound keeps an intent or an outcome, whatever a client sends, a few
	// KiB at most (6×MaxValueBytes for a value of control bytes, each
	// escaped as \u00XX), and the relay's memory of a pending call small.
	MaxValueBytes = 256
	// PrefixBytes bounds the prefix of an abbreviated value: enough to
	// tell values apart by eye in aegis log; the digest tells them apart
	// for certain.
	PrefixBytes = 64
)

// lineOverhead bounds what a line holds besides its kind fields: the
// common fields (a seq of up to 20 digits, a ts whose year may outgrow
// four digits, the longest kind name) and a signature, with room to
// spare. TestLineOverhead holds it above the longest such bytes.
const lineOverhead = 512

// maxFields is the most kind-field bytes a record may have (CheckFields).
const maxFields = MaxLine - lineOverhead

// CheckFields says whether a record of kind k whose kind fields take n
// bytes fits in a line. Values a client or a child controls are bounded
// by the encoder (AppendCall, appendBounded), so that only the fields
// aegis's own caller supplies — a session_start's argv and environment,
// an enforcement's paths, a reload's status — can make a record too long;
// Append refuses it, writing nothing, rather than write a line that
// Verify would reject.
func CheckFields(k Kind, n int) error {
	if n <= maxFields {
		return nil
	}
	return fmt.Errorf("%w: %s record of %d bytes of fields, more than a line holds (%d)", ErrRecord, k, n, maxFields)
}

// Fits reports whether b's record fits in a line, as Append would judge it
// (an error matching ErrRecord if not), so that a caller can refuse a
// session_start it cannot record before it opens the log. It allocates.
func Fits(b Body) error {
	if s, ok := b.(*SessionStart); ok && s.Key == nil {
		c := *s
		c.Key = make(ed25519.PublicKey, ed25519.PublicKeySize) // the sizes Append fills in
		c.Cert = &SessionCert{Root: c.Key, Seq: math.MaxUint64, Sig: make([]byte, ed25519.SignatureSize)}
		b = &c
	}
	return CheckFields(b.Kind(), len(b.AppendFields(nil)))
}

// appendString appends s as a JSON string in the journal's canonical form:
// only '"', '\\' and bytes below 0x20 are escaped, invalid UTF-8 becomes
// U+FFFD. Decoding the result and encoding it again gives the same bytes.
func appendString[T string | []byte](dst []byte, s T) []byte {
	const hexDigits = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := decodeRune(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, "\uFFFD"...)
			i++
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

func decodeRune[T string | []byte](s T) (rune, int) {
	switch v := any(s).(type) {
	case string:
		return utf8.DecodeRuneInString(v)
	case []byte:
		return utf8.DecodeRune(v)
	}
	return utf8.RuneError, 1
}

// appendKey appends `,"name":`, or `"name":` right after an opening brace.
func appendKey(dst []byte, name string) []byte {
	if n := len(dst); n == 0 || dst[n-1] != '{' {
		dst = append(dst, ',')
	}
	dst = append(dst, '"')
	dst = append(dst, name...)
	return append(dst, '"', ':')
}

func appendStringField(dst []byte, name, v string) []byte {
	return appendString(appendKey(dst, name), v)
}

func appendUintField(dst []byte, name string, v uint64) []byte {
	return strconv.AppendUint(appendKey(dst, name), v, 10)
}

func appendIntField(dst []byte, name string, v int64) []byte {
	return strconv.AppendInt(appendKey(dst, name), v, 10)
}

func appendBoolField(dst []byte, name string, v bool) []byte {
	return strconv.AppendBool(appendKey(dst, name), v)
}

// appendNullableString appends the string, or null when s is "".
func appendNullableString(dst []byte, name, s string) []byte {
	dst = appendKey(dst, name)
	if s == "" {
		return append(dst, "null"...)
	}
	return appendString(dst, s)
}

func appendStrings(dst []byte, name string, ss []string) []byte {
	dst = appendKey(dst, name)
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, s)
	}
	return append(dst, ']')
}

// Digest is a SHA-256 digest, written "sha256:<hex>".
type Digest [32]byte

// AppendText appends the digest's text form.
func (d Digest) AppendText(dst []byte) ([]byte, error) { return d.Append(dst), nil }

// String returns "sha256:<hex>".
func (d Digest) String() string { return string(d.Append(nil)) }

// Append appends "sha256:<hex>" to dst, as AppendText does, without the
// error.
func (d Digest) Append(dst []byte) []byte {
	dst = append(dst, digestPrefix...)
	return hex.AppendEncode(dst, d[:])
}

// AppendDigestField appends `,"name":"sha256:<hex>"` to dst.
func AppendDigestField(dst []byte, name string, d Digest) []byte {
	dst = append(appendKey(dst, name), '"')
	return append(d.Append(dst), '"')
}

// AppendSig ends a line with its signature: `,"sig":"ed25519:<base64>"}`.
// The signature covers the bytes before it (doc.go, Signatures).
func AppendSig(dst, sig []byte) []byte {
	dst = append(dst, SigField...)
	dst = base64.StdEncoding.AppendEncode(dst, sig)
	return append(dst, '"', '}')
}

// abbreviate returns what the record keeps of a value that is not written
// whole: its prefix, and the whole value's length and SHA-256. For a
// value already abbreviated (n > 0) these are s (cut to PrefixBytes, so
// that no Go value makes a long line), n and sum.
func abbreviate[T string | []byte](s T, n int, sum Digest) (T, int, Digest) {
	if n <= 0 {
		n = len(s)
		switch v := any(s).(type) {
		case []byte:
			sum = sha256.Sum256(v)
		case string:
			h := sha256.New()
			io.WriteString(h, v)
			h.Sum(sum[:0])
		}
	}
	return s[:prefixLen(s)], n, sum
}

// prefixLen returns the length of the longest prefix of s, cut between
// two characters, whose canonical form (appendString: an invalid byte
// becomes U+FFFD) takes at most PrefixBytes bytes. So the prefix decodes
// from a record to valid UTF-8 of at most PrefixBytes bytes, which
// prefixLen takes whole: abbreviating a decoded prefix again keeps it.
func prefixLen[T string | []byte](s T) int {
	out := 0
	for i := 0; i < len(s); {
		size, w := 1, 1
		if s[i] >= utf8.RuneSelf {
			var r rune
			r, size = decodeRune(s[i:])
			if w = size; r == utf8.RuneError && size == 1 {
				w = len("\uFFFD")
			}
		}
		if out+w > PrefixBytes {
			return i
		}
		out += w
		i += size
	}
	return len(s)
}

// fitsWhole reports whether the string s is recorded whole: whether its
// canonical text (appendString: an invalid byte becomes U+FFFD) takes at
// most MaxValueBytes bytes. It is the text, not s, that is measured, so
// that a value decoded from a record — its canonical text — is recorded
// whole again exactly when it was. Scanning is needed only for the rare
// value of between MaxValueBytes/3 and MaxValueBytes bytes.
func fitsWhole[T string | []byte](s T) bool {
	switch {
	case 3*len(s) <= MaxValueBytes:
		return true
	case len(s) > MaxValueBytes:
		return false
	}
	n := 0
	for i := 0; i < len(s); {
		if s[i] < utf8.RuneSelf {
			n++
			i++
			continue
		}
		r, size := decodeRune(s[i:])
		if r == utf8.RuneError && size == 1 {
			n += len("\uFFFD")
		} else {
			n += size
		}
		i += size
	}
	return n <= MaxValueBytes
}

// appendBounded appends a string value that a client or a policy file
// controls: whole, as a JSON string, when it fits (fitsWhole) and is not
// abbreviated already (n <= 0); otherwise abbreviated:
//
//	{"prefix":"<text>","bytes":N,"sha256":"sha256:<hex>"}
func appendBounded[T string | []byte](dst []byte, s T, n int, sum Digest) []byte {
	if n <= 0 && fitsWhole(s) {
		return appendString(dst, s)
	}
	p, n, sum := abbreviate(s, n, sum)
	return appendAbbrev(append(dst, '{'), p, n, sum)
}

// appendAbbrev appends the fields of an abbreviated value after its
// opening brace (and, for a call, its type):
// "prefix":"<text>","bytes":N,"sha256":"sha256:<hex>"}.
func appendAbbrev[T string | []byte](dst []byte, prefix T, n int, sum Digest) []byte {
	dst = append(dst, `"prefix":`...)
	dst = appendString(dst, prefix)
	dst = appendIntField(dst, "bytes", int64(n))
	dst = AppendDigestField(dst, "sha256", sum)
	return append(dst, '}')
}
