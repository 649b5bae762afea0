package record

import (
	"encoding/base64"
	"strconv"
)

// Attestations: a signature of an earlier line, carried by a later
// record (doc.go, "Signatures"). Part of the format.
const (
	// AttField begins a record's attestation: `,"att":{"seq":`.
	AttField = `,"att":{"seq":`
	// attestHeader is the first line of the message an attestation
	// signs: no record line (which begins with '{'), certificate
	// ("aegis session key"), head line or checkpoint (its origin) begins
	// so.
	attestHeader = "aegis attest v1\n"
	// MaxUnattested bounds the unattested lines a writer leaves before a
	// record: once the lines after the last one a signature covers hold
	// MaxUnattested bytes (each with its '\n'), the next record the
	// writer writes is signed itself. So a log's unattested tail holds,
	// but for its last line, fewer bytes than this; verify reports a
	// longer one.
	MaxUnattested = 1 << 20
)

// AppendAtt appends an attestation of the line with seq seq:
// `,"att":{"seq":<seq>,"sig":"ed25519:<base64>"}`. It goes after the
// record's kind fields and before its own signature, if any.
func AppendAtt(dst []byte, seq uint64, sig []byte) []byte {
	dst = append(dst, AttField...)
	dst = strconv.AppendUint(dst, seq, 10)
	dst = append(dst, SigField...)
	dst = base64.StdEncoding.AppendEncode(dst, sig)
	return append(dst, '"', '}')
}

// AppendAttestMessage appends the bytes an attestation of the line with
// seq seq and hash h signs, three lines each ended by '\n':
//
//	aegis attest v1
//	seq <seq>
//	hash sha256:<hex>
//
// Through h the signature covers that line and, by the chain, every
// line before it.
func AppendAttestMessage(dst []byte, seq uint64, h Digest) []byte {
	dst = append(dst, attestHeader...)
	dst = append(dst, "seq "...)
	dst = strconv.AppendUint(dst, seq, 10)
	dst = append(dst, "\nhash "...)
	dst = h.Append(dst)
	return append(dst, '\n')
}

// Close is the record a writer writes as it closes its journal when the
// last line it wrote is not attested (its group was written, and no
// record after it carries the signature): no kind fields, and
// always signed itself, so a cleanly closed journal leaves no unattested
// tail. It belongs to the session of the line before it.
type Close struct{}

func (*Close) Kind() Kind { return KindClose }

func (*Close) AppendFields(dst []byte) []byte { return dst }

// decodeFields reads Close's kind fields from g: there are none.
func (*Close) decodeFields(*getter) error { return nil }
