package journal

import (
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"time"
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
	sigField     = `,"sig":"` + keyPrefix
)

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
func (d Digest) AppendText(dst []byte) ([]byte, error) { return d.appendText(dst), nil }

// String returns "sha256:<hex>".
func (d Digest) String() string { return string(d.appendText(nil)) }

func (d Digest) appendText(dst []byte) []byte {
	dst = append(dst, digestPrefix...)
	return hex.AppendEncode(dst, d[:])
}

func appendDigestField(dst []byte, name string, d Digest) []byte {
	dst = append(appendKey(dst, name), '"')
	return append(d.appendText(dst), '"')
}

func appendTime(dst []byte, t time.Time) []byte {
	return t.UTC().AppendFormat(dst, TimeLayout)
}

func appendSig(dst, sig []byte) []byte {
	dst = append(dst, sigField...)
	dst = base64.StdEncoding.AppendEncode(dst, sig)
	return append(dst, '"', '}')
}
