package frame

import (
	"bufio"
	"bytes"
	"testing"

	"github.com/valyala/fastjson"

	"github.com/aegisrelay/aegis/internal/jsonbaseline"
)

// Typical frames, as an MCP client and server send them; the bench
// harness measures the same ones.
var (
	benchCall     = jsonbaseline.Frames[0].Line
	benchResponse = jsonbaseline.Frames[1].Line
	benchBatch    = jsonbaseline.Frames[2].Line
)

// fjClassify is the fastjson approach this package does not take: strict
// validation (Validate) then a Parser tree. No duplicate detection either.
func fjClassify(p *fastjson.Parser, line []byte, s *jsonbaseline.Summary) error {
	*s = jsonbaseline.Summary{}
	if err := fastjson.ValidateBytes(line); err != nil {
		return err
	}
	v, err := p.ParseBytes(line)
	if err != nil {
		return err
	}
	msg := func(v *fastjson.Value) {
		if string(v.GetStringBytes("method")) == "tools/call" {
			s.ToolCalls++
			s.Tool = string(v.GetStringBytes("params", "name"))
		}
		if v.Get("method") == nil && v.Get("id") != nil && (v.Get("result") != nil || v.Get("error") != nil) {
			s.Responses++
			if v.GetBool("result", "isError") {
				s.ToolErrors++
			}
		}
	}
	if v.Type() == fastjson.TypeArray {
		for _, e := range v.GetArray() {
			msg(e)
		}
	} else {
		msg(v)
	}
	return nil
}

// BenchmarkClassify compares Classify with encoding/json doing the same
// classification, on the same frames:
//
//	frame         Classify (full: validation, duplicates, case variants, id keys)
//	encoding/json struct decoding into RawMessage fields (less work: no ambiguity checks)
//	encoding/json-tokens  json.Valid + Decoder token walk (the differential reference: the same work)
//	fastjson      fastjson.Validate + Parser tree (the library not used; no ambiguity checks)
func BenchmarkClassify(b *testing.B) {
	frames := []struct {
		name string
		line []byte
	}{
		{"call", benchCall},
		{"response4k", benchResponse},
		{"batch8", benchBatch},
	}
	for _, fr := range frames {
		b.Run(fr.name+"/frame", func(b *testing.B) {
			var c Classifier
			var f Frame
			b.ReportAllocs()
			b.SetBytes(int64(len(fr.line)))
			for b.Loop() {
				c.Classify(fr.line, &f)
			}
			if f.Kind == NotJSON {
				b.Fatal(f.Anomaly)
			}
		})
		b.Run(fr.name+"/encoding-json", func(b *testing.B) {
			var s jsonbaseline.Summary
			b.ReportAllocs()
			b.SetBytes(int64(len(fr.line)))
			for b.Loop() {
				if err := jsonbaseline.Classify(fr.line, &s); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fr.name+"/encoding-json-tokens", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(fr.line)))
			for b.Loop() {
				refClassify(fr.line)
			}
		})
		b.Run(fr.name+"/fastjson", func(b *testing.B) {
			var p fastjson.Parser
			var s jsonbaseline.Summary
			b.ReportAllocs()
			b.SetBytes(int64(len(fr.line)))
			for b.Loop() {
				if err := fjClassify(&p, fr.line, &s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReader measures splitting a stream into lines, per line, against
// bufio.Scanner on the same stream and reads.
func BenchmarkReader(b *testing.B) {
	streams := []struct {
		name  string
		data  []byte
		read  int
		lines int // lines in data
	}{
		{"calls/read64k", bytes.Repeat(benchCall, 64), 64 << 10, 64},
		{"calls/read4k", bytes.Repeat(benchCall, 64), 4 << 10, 64},
		{"response1M/read64k", append(bytes.Repeat([]byte("x"), 1<<20), '\n'), 64 << 10, 1},
		// A long line among short ones: the Reader moves to a long buffer
		// and back to its own, through longBufs, once per round.
		{"response1M+calls/read64k", append(append(bytes.Repeat([]byte("x"), 1<<20), '\n'), bytes.Repeat(benchCall, 64)...), 64 << 10, 65},
		{"response16M/read64k", append(bytes.Repeat([]byte("x"), 16<<20), '\n'), 64 << 10, 1},
	}
	for _, st := range streams {
		per := int64(len(st.data) / st.lines)
		b.Run(st.name+"/frame", func(b *testing.B) {
			r := NewReader(&loopReader{data: st.data, n: st.read}, 64<<10, 64<<20)
			b.ReportAllocs()
			b.SetBytes(per)
			b.ResetTimer()
			for i := 0; i < b.N; {
				chunk, err := r.Next()
				if err != nil {
					b.Fatal(err)
				}
				for len(chunk) > 0 {
					_, chunk = NextLine(chunk)
					i++
				}
			}
		})
		b.Run(st.name+"/bufio-scanner", func(b *testing.B) {
			s := bufio.NewScanner(&loopReader{data: st.data, n: st.read})
			s.Buffer(make([]byte, 64<<10), 64<<20)
			b.ReportAllocs()
			b.SetBytes(per)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if !s.Scan() {
					b.Fatal(s.Err())
				}
			}
		})
	}
}

// BenchmarkPipeline is the relay's hot loop without I/O: read, split,
// classify every line.
func BenchmarkPipeline(b *testing.B) {
	data := bytes.Repeat(append(append([]byte(nil), benchCall...), benchResponse...), 16)
	r := NewReader(&loopReader{data: data, n: 64 << 10}, 64<<10, 64<<20)
	var c Classifier
	var f Frame
	b.ReportAllocs()
	b.SetBytes(int64(len(data) / 32))
	b.ResetTimer()
	for i := 0; i < b.N; {
		chunk, err := r.Next()
		if err != nil {
			b.Fatal(err)
		}
		for len(chunk) > 0 {
			var line []byte
			line, chunk = NextLine(chunk)
			c.Classify(line, &f)
			i++
		}
	}
}
