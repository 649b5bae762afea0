package verify

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/journal/record"
	"github.com/aegisrelay/aegis/journal/segment"
)

// Tests of a line longer than any record (MaxLine) in a log: verify
// reports it and reads on, checking the chain across it by its hash.

// handLog writes signed records by hand, as the journal would but for
// lines it never writes: each record is given by its kind fields.
type handLog struct {
	key  ed25519.PrivateKey
	out  []byte
	seq  uint64
	prev record.Digest
	// w, if set, takes each line as it is written, and out holds only
	// the line being written: a log of many long lines is never held
	// whole. werr is the first error w returned.
	w    io.Writer
	werr error
}

func (h *handLog) add(sid byte, k record.Kind, fields []byte) {
	start := len(h.out)
	h.out = fmt.Appendf(h.out, `{"v":2,"seq":%d,"ts":"`, h.seq)
	h.out = record.AppendTime(h.out, time.Date(2026, 1, 2, 3, 4, 5, int(h.seq), time.UTC))
	h.out = fmt.Appendf(h.out, `","sid":"%02x000000000000000000000000000000","kind":"%s","prev":"`, sid, k.String())
	h.out = h.prev.Append(h.out)
	h.out = append(h.out, '"')
	h.out = append(h.out, fields...)
	h.out = record.AppendSig(h.out, ed25519.Sign(h.key, h.out[start:]))
	h.prev = sha256.Sum256(h.out[start:])
	h.out = append(h.out, '\n')
	h.seq++
	if h.w != nil {
		if _, err := h.w.Write(h.out); err != nil && h.werr == nil {
			h.werr = err
		}
		h.out = h.out[:0]
	}
}

func (h *handLog) body(sid byte, b record.Body) { h.add(sid, b.Kind(), b.AppendFields(nil)) }

// session writes a session of calls calls, and a line of long bytes of
// status (a policy_reload no journal writes) after its first call if
// long > 0.
func (h *handLog) session(sid byte, calls, long int) {
	h.body(sid, &record.SessionStart{Key: h.key.Public().(ed25519.PublicKey), Aegis: "test", Argv: []string{"server"}, Durability: "strict", PolicySet: record.PassThroughSet})
	for i := range calls {
		id := record.Call{Type: record.IDNumber, Text: fmt.Appendf(nil, "%d", i)}
		iseq := h.seq
		h.body(sid, &record.Intent{Call: id, Tool: []byte("echo"), HasTool: true})
		h.body(sid, &record.Outcome{Call: id, Intent: iseq, HasResponse: true, Status: record.StatusOK, LatencyNS: 1000})
		if i == 0 && long > 0 {
			h.add(sid, record.KindPolicyReload, fmt.Appendf(nil, `,"set":"sha256:00","status":"%s"`, strings.Repeat("s", long)))
		}
	}
	h.body(sid, &record.SessionEnd{Reason: record.EndClientEOF, Counts: record.Counts{Intents: uint64(calls), Outcomes: uint64(calls)}})
}

// lineStart returns the offset of line n (1-based) in b.
func lineStart(b []byte, n int) int {
	off := 0
	for range n - 1 {
		off += bytes.IndexByte(b[off:], '\n') + 1
	}
	return off
}

func TestVerifyReadsOnAfterLongLine(t *testing.T) {
	key := testKey(t)
	const long = 3 << 19 // 1.5 MiB
	build := func(longs ...int) []byte {
		h := &handLog{key: key}
		for i, n := range longs {
			h.session(byte(0xa0+i), 2, n)
		}
		return h.out
	}
	// Line numbers: session 1 is lines 1-7 (its long line, if any, is
	// line 4), session 2 lines 8-13 after a long line in session 1.
	longLog := build(long, 0)
	secondStart := lineStart(longLog, 10) // session 2's first outcome
	type want struct {
		line uint64
		msg  string
	}
	tests := []struct {
		name   string
		log    []byte
		status Status
		want   []want
	}{
		{"no long line", build(0, 0), Valid, nil},
		{"long line", longLog, Invalid, []want{{4, "longer than any record"}}},
		{"long line, then a later session tampered", func() []byte {
			b := bytes.Clone(longLog)
			i := secondStart + bytes.Index(b[secondStart:], []byte(`"latency_ns":1000`)) + len(`"latency_ns":1`)
			b[i] = '9'
			return b
		}(), Invalid, []want{{4, "longer than any record"}, {10, "signature does not verify"}, {11, "chain broken"}}},
		{"long line changed: the chain after it breaks", func() []byte {
			b := bytes.Clone(longLog)
			b[lineStart(b, 4)+long/2] = 't'
			return b
		}(), Invalid, []want{{4, "longer than any record"}, {5, "chain broken"}}},
		{"long line removed", func() []byte {
			b := bytes.Clone(longLog)
			return append(b[:lineStart(b, 4)], b[lineStart(b, 5):]...)
		}(), Invalid, []want{{4, "seq 4, want 3"}, {4, "chain broken"}}},
		{"two long lines in a row, then a later session tampered", func() []byte {
			h := &handLog{key: key}
			id := record.Call{Type: record.IDNumber, Text: []byte("1")}
			h.body(0xa0, &record.SessionStart{Key: key.Public().(ed25519.PublicKey), Aegis: "test", Argv: []string{"server"}, Durability: "strict", PolicySet: record.PassThroughSet})
			h.body(0xa0, &record.Intent{Call: id, Tool: []byte("echo"), HasTool: true})
			h.body(0xa0, &record.Outcome{Call: id, Intent: 1, HasResponse: true, Status: record.StatusOK})
			h.add(0xa0, record.KindPolicyReload, []byte(`,"set":"sha256:00","status":"`+strings.Repeat("u", long)+`"`))
			h.add(0xa0, record.KindPolicyReload, []byte(`,"set":"sha256:00","status":"`+strings.Repeat("w", 2<<20)+`"`))
			h.body(0xa0, &record.SessionEnd{Reason: record.EndClientEOF, Counts: record.Counts{Intents: 1, Outcomes: 1}})
			h.session(0xa1, 1, 0)
			b := h.out
			i := lineStart(b, 8) + bytes.Index(b[lineStart(b, 8):], []byte(`"tool":"echo"`)) + len(`"tool":"`)
			b[i] = 'E'
			return b
		}(), Invalid, []want{{4, "longer than any record"}, {5, "longer than any record"},
			{8, "signature does not verify"}, {9, "chain broken"}}},
		{"long last line without its end", func() []byte {
			b := build(0)
			return append(b, strings.Repeat("x", long)...)
		}(), Invalid, []want{{7, "longer than any record"}}},
	}
	for _, tt := range tests {
		for _, workers := range []int{1, 4} {
			t.Run(fmt.Sprintf("%s/workers=%d", tt.name, workers), func(t *testing.T) {
				rep := verifyBytes(t, tt.log, Options{Workers: workers})
				if rep.Status != tt.status {
					t.Errorf("Verify = %v; want %v (%v %v)", rep.Status, tt.status, rep.Problems, rep.Gaps)
				}
				if len(rep.Problems) != len(tt.want) {
					t.Errorf("Verify problems = %v; want %d: %v", rep.Problems, len(tt.want), tt.want)
				}
				for _, w := range tt.want {
					found := false
					for _, p := range rep.Problems {
						found = found || p.Line == w.line && strings.Contains(p.Msg, w.msg)
					}
					if !found {
						t.Errorf("Verify problems = %v; want one at line %d saying %q", rep.Problems, w.line, w.msg)
					}
				}
			})
		}
	}
}

// TestVerifyLongLineProblemsCapped: a log of many long lines is read to
// its end; the problems reported are capped, and the rest counted.
func TestVerifyLongLineProblemsCapped(t *testing.T) {
	// The log, of more than a hundred lines of MaxLine bytes, is
	// streamed to Stream as it is signed: held whole, growing it and
	// copying it cost many times what verifying it does.
	pr, pw := io.Pipe()
	h := &handLog{key: testKey(t), w: pw}
	const n = maxProblems + 20
	written := make(chan struct{})
	go func() {
		defer close(written)
		h.body(0xa0, &record.SessionStart{Key: h.key.Public().(ed25519.PublicKey), Aegis: "test", Argv: []string{"server"}, Durability: "strict", PolicySet: record.PassThroughSet})
		long := []byte(`,"set":"sha256:00","status":"` + strings.Repeat("v", record.MaxLine) + `"`)
		for range n {
			h.add(0xa0, record.KindPolicyReload, long)
		}
		h.body(0xa0, &record.SessionEnd{Reason: record.EndClientEOF})
		pw.Close()
	}()
	rep, err := Stream(pr, Options{})
	pr.Close() // a writer not yet done (Stream failed) stops
	<-written
	if err != nil {
		t.Fatal(err)
	}
	if h.werr != nil {
		t.Fatalf("writing the log to Stream: %v", h.werr)
	}
	if rep.Status != Invalid || len(rep.Problems) != maxProblems || rep.Dropped != n-maxProblems || rep.Records != n+2 {
		t.Errorf("Verify = %v, %d problems, %d more, %d records; want invalid, %d, %d, %d",
			rep.Status, len(rep.Problems), rep.Dropped, rep.Records, maxProblems, n-maxProblems, n+2)
	}
	if len(rep.Sessions) != 1 || !rep.Sessions[0].Ended {
		t.Errorf("Verify sessions = %+v; want one, ended", rep.Sessions)
	}
}

// TestStreamTailLongLine: the tail of a compressed segment, read from its
// start, is found past a long line in its middle, as readTail finds it in
// a plain one; a long last line leaves no tail to continue (segment.ErrNotLog).
func TestStreamTailLongLine(t *testing.T) {
	h := &handLog{key: testKey(t)}
	h.session(0xa0, 1, 0)
	lines := bytes.SplitAfter(h.out, []byte("\n"))
	first, last := lines[0], lines[len(lines)-2]
	long := []byte(strings.Repeat("L", record.MaxLine+1) + "\n")
	tests := []struct {
		name    string
		parts   [][]byte
		wantErr bool
		seq     uint64
		torn    int
	}{
		{"long line in the middle", [][]byte{first, long, last}, false, uint64(len(lines) - 2), 0},
		{"long line first", [][]byte{long, last}, false, uint64(len(lines) - 2), 0},
		{"long line, then a torn one", [][]byte{first, long, last, []byte(`{"v":2`)}, false, uint64(len(lines) - 2), 6},
		{"long last line", [][]byte{first, long}, true, 0, 0},
		{"long last line without its end", [][]byte{first, long[:len(long)-1]}, true, 0, 0},
		{"only a long line", [][]byte{long}, true, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl, err := segment.StreamTail(bytes.NewReader(bytes.Join(tt.parts, nil)))
			switch {
			case tt.wantErr && !errors.Is(err, segment.ErrNotLog):
				t.Errorf("streamTail = %+v, %v; want segment.ErrNotLog", tl, err)
			case !tt.wantErr && (err != nil || !tl.Intact || tl.Seq != tt.seq || tl.TornBytes != int64(tt.torn)):
				t.Errorf("streamTail = %+v, %v; want intact at seq %d, %d torn bytes", tl, err, tt.seq, tt.torn)
			}
		})
	}
}
