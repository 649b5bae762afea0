package record

import (
	"bytes"
	"crypto/sha256"
	"testing"
)

// BenchmarkDecode is the per-line cost of decoding (parse, canonical
// re-encoding and comparison) the lines of a log written at none by 4
// appenders (testdata/load.jsonl), one line per op, beside SHA-256 of the same lines (verify's
// other per-line cost, and the floor of any per-line work):
//
//   - into: Decoder.DecodeInto, as verify decodes (a reused slot);
//   - Decode: the exported Decode, which allocates the record it returns;
//   - general: the general decoder alone (fastjson), which the canonical
//     scanner spares nearly every line.
func BenchmarkDecode(b *testing.B) {
	data := readTestdata(b, "load.jsonl")
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	perLine := int64(len(data) / len(lines))
	each := func(b *testing.B, f func(line []byte) error) {
		b.ReportAllocs()
		b.SetBytes(perLine)
		i := 0
		for b.Loop() {
			if err := f(lines[i]); err != nil {
				b.Fatal(err)
			}
			if i++; i == len(lines) {
				i = 0
			}
		}
	}
	b.Run("sha256", func(b *testing.B) {
		each(b, func(line []byte) error { sha256.Sum256(line); return nil })
	})
	b.Run("into", func(b *testing.B) {
		var d Decoder
		var s Slot
		each(b, func(line []byte) error { return d.DecodeInto(&s, line) })
	})
	b.Run("Decode", func(b *testing.B) {
		var d Decoder
		each(b, func(line []byte) error { _, err := d.Decode(line); return err })
	})
	b.Run("general", func(b *testing.B) {
		var d Decoder
		var s Slot
		each(b, func(line []byte) error { return d.decodeGeneral(&s, line) })
	})
}
