package record

import (
	"crypto/sha256"
	"testing"
)

// BenchmarkAppendFields is the encoder's per-record cost on its own: the
// kind fields of an intent and of an outcome as the relay records a
// tools/call (a short numeric id, a short tool name), appended to a
// reused buffer, beside SHA-256 of the same bytes (the per-line work the
// journal does anyway, to chain the line). It stays at 0 allocs/op:
// TestAppendFieldsAllocs holds it there.
func BenchmarkAppendFields(b *testing.B) {
	for _, c := range appendFieldsBodies() {
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

// TestAppendFieldsAllocs: encoding an intent's and an outcome's fields
// into a buffer with room allocates nothing, the claim
// BenchmarkAppendFields's figures rest on.
func TestAppendFieldsAllocs(t *testing.T) {
	for _, c := range appendFieldsBodies() {
		dst := make([]byte, 0, 4096)
		if n := testing.AllocsPerRun(100, func() { dst = c.body.AppendFields(dst[:0]) }); n != 0 {
			t.Errorf("%s: AppendFields = %v allocs/op; want 0", c.name, n)
		}
	}
}

// appendFieldsBodies are an intent and an outcome as the relay records a
// tools/call.
func appendFieldsBodies() []struct {
	name string
	body Body
} {
	id := []byte("12345")
	in := &Intent{Call: Call{Type: IDNumber, Text: id}, Tool: []byte("read_file"), HasTool: true,
		RequestDigest: sha256.Sum256([]byte("request")), Verdict: VerdictAllowed, Rule: "rules[0] read_*", Set: Digest(sha256.Sum256([]byte("policy"))).String()}
	out := &Outcome{Call: Call{Type: IDString, Text: []byte("call-7f3a")}, Intent: 42,
		ResponseDigest: sha256.Sum256([]byte("response")), HasResponse: true, Status: StatusOK, LatencyNS: 123456}
	return []struct {
		name string
		body Body
	}{
		{"intent", in},
		{"outcome", out},
	}
}
