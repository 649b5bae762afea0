package verify

import (
	"bytes"
	"crypto/ed25519"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aegisrelay/aegis/journal"
	"github.com/aegisrelay/aegis/journal/record"
)

// TestOpenCallLong: an id longer than openCall keeps inline is matched
// in full.
func TestOpenCallLong(t *testing.T) {
	long := strings.Repeat("id-", 20)
	tests := []struct {
		name string
		out  string
		want Status
	}{
		{"same", long, Valid},
		{"differs at the end", long[:len(long)-1] + "x", Invalid},
		{"prefix", long[:22], Invalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			key := testKey(t)
			j := openLog(t, path, key)
			in := record.Call{Type: record.IDString, Text: []byte(long)}
			seq, err := j.Append(&record.Intent{Call: in, Tool: []byte("t"), HasTool: true})
			if err == nil {
				_, err = j.Append(&record.Outcome{Call: record.Call{Type: record.IDString, Text: []byte(tt.out)}, Intent: seq, Status: record.StatusOK})
			}
			if err != nil {
				t.Fatal(err)
			}
			end(t, j, 1)
			if rep := verifyFile(t, path, Options{}); rep.Status != tt.want {
				t.Errorf("Verify(outcome call %q for intent call %q) = %v %v; want %v", tt.out, long, rep.Status, rep.Problems, tt.want)
			}
		})
	}
}

// TestVerifyTornAtChunkEdge: a torn line and the recovery that answers it
// on either side of the edge between two chunks (read.go), and
// next to it. The torn line is pending while the next line is judged, its
// record in its chunk, so verify must hold that chunk until then.
func TestVerifyTornAtChunkEdge(t *testing.T) {
	key := testKey(t)
	pub := key.Public().(ed25519.PublicKey)
	// shift: how far the torn line reaches past the chunk's size; the
	// chunk ends with the first line that reaches it.
	for _, shift := range []int{-50, -1, 0, 1, 50} {
		path := filepath.Join(t.TempDir(), "audit.jsonl")
		// A session that ends a little before chunkSize.
		j := openLog(t, path, key)
		c := newCallRecords()
		calls := 0
		for {
			if err := c.call(j, calls); err != nil {
				t.Fatal(err)
			}
			calls++
			if st, err := os.Stat(path); err != nil || st.Size() > chunkSize-3000 {
				break
			}
		}
		end(t, j, uint64(calls))
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		// A chunk counts the bytes of its lines without their ends.
		n := len(data) - bytes.Count(data, []byte("\n"))
		tornLen := chunkSize - n + shift
		if n >= chunkSize-100 || tornLen < 1 {
			t.Fatalf("shift %d: the first session holds %d bytes; want fewer than %d", shift, n, chunkSize-100)
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		// A torn line begins as every record does (Open refuses any other).
		_, err = f.Write([]byte((record.LineStart + strings.Repeat("t", tornLen))[:tornLen]))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
		// The next session answers the torn line with a recovery.
		j = openLog(t, path, key)
		if err := c.call(j, 0); err != nil {
			t.Fatal(err)
		}
		end(t, j, 1)
		if data, err = os.ReadFile(path); err != nil {
			t.Fatal(err)
		}
		changed := bytes.Replace(data, []byte("ttt\n"), []byte("ttu\n"), 1)
		if bytes.Equal(changed, data) {
			t.Fatal("the log holds no torn line")
		}
		for _, workers := range []int{1, 2, 4} {
			if rep := verifyBytes(t, data, Options{Key: pub, Workers: workers}); rep.Status != Valid {
				t.Errorf("shift %d, %d workers: Verify = %v %v %v; want valid", shift, workers, rep.Status, rep.Problems, rep.Gaps)
			}
			// The recovery answers that torn line, and no other.
			if rep := verifyBytes(t, changed, Options{Key: pub, Workers: workers}); rep.Status != Invalid {
				t.Errorf("shift %d, %d workers: Verify(torn line changed) = %v; want invalid", shift, workers, rep.Status)
			}
		}
	}
}

// openLog opens path at none and starts a session.
func openLog(t *testing.T, path string, key ed25519.PrivateKey) *journal.Journal {
	t.Helper()
	j, err := journal.Open(path, journal.Options{Durability: mustDurability(t, "none"), Key: key})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Append(&record.SessionStart{Aegis: "test", Argv: []string{"server"}, Durability: "none", PolicySet: record.PassThroughSet}); err != nil {
		t.Fatal(err)
	}
	return j
}

// end ends j's session, which holds calls calls, and closes j.
func end(t *testing.T, j *journal.Journal, calls uint64) {
	t.Helper()
	seq, err := j.Append(&record.SessionEnd{Reason: record.EndClientEOF, Counts: record.Counts{Intents: calls, Outcomes: calls}})
	if err == nil {
		err = j.Wait(seq, journal.BeforeResponse)
	}
	if cerr := j.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestVerifyHoldsChunk: a line left pending at the end of a chunk is
// judged with the next chunk's first line, from its record in its own
// chunk; that chunk must not be recycled before. Split the genuine log
// into two chunks at every line, and scribble over whatever the chunk
// pool hands out between the two, as the reader would when it reuses a
// chunk.
func TestVerifyHoldsChunk(t *testing.T) {
	g := mustGenuine(t)
	chunkOf := func(b []byte) *chunk {
		c, _ := newChunkReader(bytes.NewReader(b)).next()
		return c
	}
	for i := range len(g) {
		if g[i] != '\n' {
			continue
		}
		v := newVerifier(Options{Key: fuzzPub, Workers: 1})
		a, b := chunkOf(g[:i+1]), chunkOf(g[i+1:])
		a.decode(&v.dec)
		b.decode(&v.dec)
		v.take(a)
		for range 4 {
			c := getChunk()
			for k := range c.buf {
				c.buf[k] = 'x'
			}
			for k := range c.recs {
				c.recs[k] = decoded{}
			}
		}
		v.take(b)
		if err := v.endFile(readEnd{}, true); err != nil {
			t.Fatal(err)
		}
		v.finish()
		if v.rep.Status != Valid {
			t.Errorf("split after byte %d: Verify = %v %v %v; want valid", i, v.rep.Status, v.rep.Problems, v.rep.Gaps)
		}
	}
}
