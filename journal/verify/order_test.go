package verify

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"testing"

	"github.com/aegisrelay/aegis/journal/record"
)

// TestVerifyProblemsInLineOrder: problems are reported in line order,
// whichever goroutine found them — a bad signature (found by a worker,
// after its line was judged) before the broken chain of the line after
// it — and past maxProblems the first ones in line order are kept and the
// rest counted, with any number of workers.
func TestVerifyProblemsInLineOrder(t *testing.T) {
	key := testKey(t)
	// flipSigs changes the signature of each line whose number (1-based)
	// is in lines.
	flipSigs := func(b []byte, lines ...int) []byte {
		b = bytes.Clone(b)
		for _, n := range lines {
			at := lineStart(b, n)
			i := at + bytes.Index(b[at:], []byte(record.SigField)) + len(record.SigField) + len("ed25519:") + 10
			if b[i] == 'A' {
				b[i] = 'B'
			} else {
				b[i] = 'A'
			}
		}
		return b
	}
	h := &handLog{key: key}
	h.session(0xa0, 100, 0) // lines 1-202
	base := h.out
	type want struct {
		line uint64
		msg  string
	}
	many := make([]int, 0, 80)
	for n := 2; n < 2+2*80; n += 2 {
		many = append(many, n)
	}
	var manyWant []want
	for _, n := range many {
		manyWant = append(manyWant, want{uint64(n), "signature does not verify"}, want{uint64(n + 1), "chain broken"})
	}
	// More bad signatures than the checker keeps (maxKept) at once.
	h = &handLog{key: key}
	h.session(0xa1, 150, 0) // lines 1-302
	var most []int
	for n := 2; n < 302; n++ {
		most = append(most, n)
	}
	// Each line's chain breaks (the line before changed), then its
	// signature: sig 2, chain 3, sig 3, chain 4, …
	mostWant := []want{{2, "signature does not verify"}}
	for n := uint64(3); len(mostWant) < maxProblems; n++ {
		mostWant = append(mostWant, want{n, "chain broken"}, want{n, "signature does not verify"})
	}
	mostWant = mostWant[:maxProblems]
	tests := []struct {
		name    string
		log     []byte
		want    []want // the first problems, in order
		dropped int
	}{
		{"one signature", flipSigs(base, 5), []want{{5, "signature does not verify"}, {6, "chain broken"}}, 0},
		{"signatures and a later line", func() []byte {
			b := flipSigs(base, 3, 7)
			at := lineStart(b, 21) // an outcome
			i := at + bytes.Index(b[at:], []byte(`"latency_ns":1000`)) + len(`"latency_ns":1`)
			b[i] = '9'
			return b
		}(), []want{{3, "signature does not verify"}, {4, "chain broken"}, {7, "signature does not verify"}, {8, "chain broken"},
			{21, "signature does not verify"}, {22, "chain broken"}}, 0},
		{"more than maxProblems", flipSigs(base, many...), manyWant[:maxProblems], len(manyWant) - maxProblems},
		{"more than maxKept", flipSigs(h.out, most...), mostWant, 2*len(most) - maxProblems},
	}
	for _, tt := range tests {
		for _, workers := range []int{1, 2, 4} {
			t.Run(fmt.Sprintf("%s/workers=%d", tt.name, workers), func(t *testing.T) {
				rep := verifyBytes(t, tt.log, Options{Key: key.Public().(ed25519.PublicKey), Workers: workers})
				if len(rep.Problems) != len(tt.want) || rep.Dropped != tt.dropped {
					t.Fatalf("Verify = %d problems, %d more; want %d, %d: %v", len(rep.Problems), rep.Dropped, len(tt.want), tt.dropped, rep.Problems)
				}
				for i, w := range tt.want {
					if p := rep.Problems[i]; p.Line != w.line || !bytes.Contains([]byte(p.Msg), []byte(w.msg)) {
						t.Errorf("Verify problem %d = %v; want line %d: %q", i, p, w.line, w.msg)
					}
				}
			})
		}
	}
}
