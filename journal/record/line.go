package record

import (
	"bytes"
	"encoding/hex"
	"math"
	"strconv"
	"time"
)

// The common fields of a line, as the writer (package journal), the
// decoder, the canonical scanner and the tree's leaf reader (PeekChain)
// all spell them: part of the format (doc.go, "Format").
const (
	// LineStart is how every line of a log begins: a log's first bytes,
	// and a torn line's, are a prefix of it.
	LineStart = `{"v":2,"seq":`
	fieldTS   = `,"ts":"`
	fieldSID  = `","sid":"`
	fieldKind = `","kind":"`
	fieldPrev = `,"prev":"` + digestPrefix // after the kind's closing quote
)

// AppendCommon appends a line's common fields, from LineStart to the
// closing quote of prev:
//
//	{"v":2,"seq":N,"ts":"<TimeLayout>","sid":"<32 hex>","kind":"<kind>","prev":"sha256:<hex>"
//
// The kind fields (Body.AppendFields) follow, then the signature
// (AppendSig) or a closing brace. sid is the session id as its 32
// lower-case hex digits (hex.Encode of the 16 bytes): a writer encodes it
// once per session, not once per line. It allocates nothing beyond
// growing dst.
func AppendCommon(dst []byte, seq uint64, ts time.Time, sid *[32]byte, k Kind, prev Digest) []byte {
	dst = append(dst, LineStart...)
	dst = strconv.AppendUint(dst, seq, 10)
	dst = append(dst, fieldTS...)
	dst = AppendTime(dst, ts)
	dst = append(dst, fieldSID...)
	dst = append(dst, sid[:]...)
	dst = append(dst, fieldKind...)
	dst = append(dst, k.String()...)
	dst = append(dst, '"')
	dst = append(dst, fieldPrev...)
	dst = hex.AppendEncode(dst, prev[:])
	return append(dst, '"')
}

// AppendTime appends t in UTC as TimeLayout writes it, the form of every
// "ts". It is the one encoder of times in the format. It writes the
// digits itself rather than interpreting the layout (time.AppendFormat),
// which would be a fifth of the cost of decoding a line, where the
// decoder re-encodes every ts; a year TimeLayout does not write in four
// digits goes to AppendFormat. TestAppendTime holds the two equal.
func AppendTime(dst []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.AppendFormat(dst, TimeLayout)
	}
	hour, minute, sec := t.Clock()
	b := [len(TimeLayout)]byte{4: '-', 7: '-', 10: 'T', 13: ':', 16: ':', 19: '.', 29: 'Z'}
	putDecimal(b[0:4], year)
	putDecimal(b[5:7], int(month))
	putDecimal(b[8:10], day)
	putDecimal(b[11:13], hour)
	putDecimal(b[14:16], minute)
	putDecimal(b[17:19], sec)
	putDecimal(b[20:29], t.Nanosecond())
	return append(dst, b[:]...)
}

// putDecimal writes v into b in decimal, zero-padded to len(b) digits.
func putDecimal(b []byte, v int) {
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = byte('0' + v%10)
		v /= 10
	}
}

// parseTime reads a ts the general decoders (a line's, a certificate's, a
// head file's) hold to TimeLayout; the canonical check after them
// refuses what AppendTime would not write back. (The canonical scanner
// reads its own, cursor.time.)
func parseTime(b []byte) (time.Time, error) {
	return time.Parse(TimeLayout, string(b))
}

// peekWindow is how far past seq PeekChain looks for prev: ts, sid and
// the longest kind name come between, well within it.
const peekWindow = 256

// PeekChain reads the seq and the prev of a line that may be a record,
// without decoding it: ok is true if the line begins with LineStart and
// a seq (decimal, no leading zero, within uint64), holds `,"prev":"sha256:`
// and 64 hex digits and a quote within the next few hundred bytes, and
// ends with '}'. It is how the Merkle tree picks its leaves out of a log's
// lines (package tlog's Chain), which must pass over torn bytes and lines
// too long to decode at the cost of a scan. It allocates nothing.
func PeekChain(line []byte) (seq uint64, prev Digest, ok bool) {
	rest, found := bytes.CutPrefix(line, []byte(LineStart))
	if !found || line[len(line)-1] != '}' {
		return 0, prev, false
	}
	i := 0
	for ; i < len(rest) && rest[i] >= '0' && rest[i] <= '9'; i++ {
		d := uint64(rest[i] - '0')
		if seq > (math.MaxUint64-d)/10 {
			return 0, prev, false
		}
		seq = seq*10 + d
	}
	if i == 0 || i == len(rest) || rest[i] != ',' || (i > 1 && rest[0] == '0') {
		return 0, prev, false
	}
	head := rest[i:min(len(rest), i+peekWindow)]
	j := bytes.Index(head, []byte(fieldPrev))
	if j < 0 {
		return 0, prev, false
	}
	hx := head[j+len(fieldPrev):]
	if len(hx) < 2*len(prev)+1 || hx[2*len(prev)] != '"' {
		return 0, prev, false
	}
	if _, err := hex.Decode(prev[:], hx[:2*len(prev)]); err != nil {
		return 0, prev, false
	}
	return seq, prev, true
}
