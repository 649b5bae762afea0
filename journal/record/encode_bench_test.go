package record

import (
	"crypto/sha256"
	"testing"
)

// BenchmarkAppendFields is the encoder's per-record cost on its own: the
// kind fields of an intent and of an outcome as the relay records a
// tools/call (a short numeric id, a short tool name), appended to a
// reused buffer, beside SHA-256 of the same bytes (the per-line work the
// journal does anyway, to chain the line). Must stay at 0 allocs/op.
func BenchmarkAppendFields(b *testing.B) {
	id := []byte("12345")
	in := &Intent{Call: Call{Type: IDNumber, Text: id}, Tool: []byte("read_file"), HasTool: true,
		RequestDigest: sha256.Sum256([]byte("request")), Verdict: VerdictAllowed, Rule: "rules[0] read_*", Set: Digest(sha256.Sum256([]byte("policy"))).String()}
	out := &Outcome{Call: Call{Type: IDString, Text: []byte("call-7f3a")}, Intent: 42,
		ResponseDigest: sha256.Sum256([]byte("response")), HasResponse: true, Status: StatusOK, LatencyNS: 123456}
	for _, c := range []struct {
		name string
		body Body
	}{
		{"intent", in},
		{"outcome", out},
	} {
		buf := c.body.AppendFields(nil)
		b.Run("sha256/"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(buf)))
			for b.Loop() {
				sha256.Sum256(buf)
			}
		})
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(buf)))
			dst := make([]byte, 0, 4096)
			for b.Loop() {
				dst = c.body.AppendFields(dst[:0])
			}
		})
	}
}
