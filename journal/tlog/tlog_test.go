package tlog

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	xtlog "golang.org/x/mod/sumdb/tlog"

	"github.com/aegisrelay/aegis/internal/journaltest"
	"github.com/aegisrelay/aegis/journal/record"
	"github.com/aegisrelay/aegis/journal/segment"
)

var update = flag.Bool("update", false, "rewrite testdata/genuine.checkpoint")

// genuinePath is the writer's golden log (package journal's
// TestRecordTestdata keeps it): three sessions, a torn line answered by a
// recovery, 19 records.
var genuinePath = filepath.Join("..", "record", "testdata", "genuine.jsonl")

var fixedKey = func() ed25519.PrivateKey {
	seed := sha256.Sum256([]byte("aegis tlog golden"))
	return ed25519.NewKeyFromSeed(seed[:])
}()

var fixedPub = fixedKey.Public().(ed25519.PublicKey)

func readGenuine(t *testing.T) []byte {
	t.Helper()
	g, err := os.ReadFile(genuinePath)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// leavesOf returns the lines of the hash chain of data: every line that
// ends with '}', but the torn one a recovery of its seq answers.
func leavesOf(t *testing.T, data []byte) [][]byte {
	t.Helper()
	var out [][]byte
	c := &Chain{Leaf: func(_ uint64, l []byte) error { out = append(out, bytes.Clone(l)); return nil }}
	for _, l := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		if err := c.Line(l); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.End(); err != nil {
		t.Fatal(err)
	}
	return out
}

func writeLog(t *testing.T, data []byte) *segment.Set {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	sets, err := segment.Sets([]string{path}, true)
	if err != nil || len(sets) != 1 {
		t.Fatalf("segment.Sets(%s) = %v, %v", path, sets, err)
	}
	return sets[0]
}

// checkpointAt is the checkpoint of the first n leaves.
func checkpointAt(leaves [][]byte, n int) Checkpoint {
	tr := NewTree()
	for _, l := range leaves[:n] {
		tr.AppendLine(l)
	}
	return Checkpoint{Origin: Origin(leaves[0]), Size: uint64(n), Root: tr.Root()}
}

func signed(t *testing.T, c Checkpoint) []byte {
	t.Helper()
	s, err := Signer(c.Origin, fixedKey)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := Sign(c, s)
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

// TestChainLeaves: the genuine log's leaves are its records seq 0..18 in
// order, the torn line of seq 14 left out for the recovery that answers it.
func TestChainLeaves(t *testing.T) {
	g := readGenuine(t)
	leaves := leavesOf(t, g)
	if len(leaves) != 19 {
		t.Fatalf("%d leaves; want 19", len(leaves))
	}
	for i, l := range leaves {
		seq, _, ok := record.PeekChain(l)
		if !ok || seq != uint64(i) {
			t.Errorf("leaf %d: seq %d (%v); want %d", i, seq, ok, i)
		}
	}
	if !bytes.Contains(leaves[14], []byte(`"kind":"recovery"`)) {
		t.Errorf("leaf 14 = %.80q…; want the recovery", leaves[14])
	}
}

// TestGoldenCheckpoint pins the bytes of the genuine log's checkpoint
// signed with a fixed key; -update rewrites it. It must open with x/mod's
// note package under the verifier key of the public key (Open), and its
// root be the one x/mod's tlog computes.
func TestGoldenCheckpoint(t *testing.T) {
	leaves := leavesOf(t, readGenuine(t))
	c := checkpointAt(leaves, len(leaves))
	got := signed(t, c)
	golden := filepath.Join("testdata", "genuine.checkpoint")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("checkpoint =\n%s\nwant (%s)\n%s", got, golden, want)
	}
	o, err := Open(want, fixedPub)
	if err != nil || o != c {
		t.Errorf("Open(golden) = %+v, %v; want %+v", o, err, c)
	}
	if root := journaltest.RFC6962Root(t, leaves); Hash(root) != c.Root {
		t.Errorf("root %s; x/mod tlog's %s", c.Root, root)
	}
	_, other, _ := ed25519.GenerateKey(nil)
	if _, err := Open(want, other.Public().(ed25519.PublicKey)); !errors.Is(err, ErrCheckpoint) {
		t.Errorf("Open with another key = %v; want ErrCheckpoint", err)
	}
}

// TestProofsIndependent: every inclusion proof (each record, each tree
// size) and every consistency proof (each pair of sizes) made by reading
// the genuine log checks with x/mod's tlog (CheckRecord, CheckTree), an
// implementation sharing no code with transparency-dev/merkle.
func TestProofsIndependent(t *testing.T) {
	leaves := leavesOf(t, readGenuine(t))
	set := writeLog(t, readGenuine(t))
	for n := 1; n <= len(leaves); n++ {
		c := checkpointAt(leaves, n)
		for i := range n {
			p, err := ProveInclusion(set, c, uint64(i))
			if err != nil {
				t.Fatalf("ProveInclusion(%d of %d) = %v", i, n, err)
			}
			if p.Line != string(leaves[i]) {
				t.Fatalf("ProveInclusion(%d of %d): line %.60q…; want %.60q…", i, n, p.Line, leaves[i])
			}
			rp := make(xtlog.RecordProof, len(p.Hashes))
			for k, h := range p.Hashes {
				rp[k] = xtlog.Hash(h)
			}
			if err := xtlog.CheckRecord(rp, int64(n), xtlog.Hash(c.Root), int64(i), xtlog.RecordHash(leaves[i])); err != nil {
				t.Fatalf("x/mod CheckRecord(inclusion of %d in %d) = %v", i, n, err)
			}
		}
		for m := 1; m <= n; m++ {
			old := checkpointAt(leaves, m)
			p, err := ProveConsistency(set, old, c)
			if err != nil {
				t.Fatalf("ProveConsistency(%d, %d) = %v", m, n, err)
			}
			tp := make(xtlog.TreeProof, len(p.Hashes))
			for k, h := range p.Hashes {
				tp[k] = xtlog.Hash(h)
			}
			if err := xtlog.CheckTree(tp, int64(n), xtlog.Hash(c.Root), int64(m), xtlog.Hash(old.Root)); err != nil {
				t.Fatalf("x/mod CheckTree(%d to %d) = %v", m, n, err)
			}
		}
	}
}

// TestProofTampered: a proof with one hash, the line, the index or the
// root changed does not check.
func TestProofTampered(t *testing.T) {
	leaves := leavesOf(t, readGenuine(t))
	set := writeLog(t, readGenuine(t))
	c := checkpointAt(leaves, len(leaves))
	p, err := ProveInclusion(set, c, 5)
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]func(q *Inclusion){
		"hash":  func(q *Inclusion) { q.Hashes[1][0] ^= 1 },
		"line":  func(q *Inclusion) { q.Line = q.Line[:len(q.Line)-2] + "x}" },
		"index": func(q *Inclusion) { q.Index = 6 },
		"short": func(q *Inclusion) { q.Hashes = q.Hashes[:len(q.Hashes)-1] },
	} {
		q := *p
		q.Hashes = append([]Hash(nil), p.Hashes...)
		f(&q)
		if err := q.Check(c); !errors.Is(err, ErrProof) {
			t.Errorf("%s changed: Check = %v; want ErrProof", name, err)
		}
	}
	old := checkpointAt(leaves, 7)
	cp, err := ProveConsistency(set, old, c)
	if err != nil {
		t.Fatal(err)
	}
	cp.Hashes[0][3] ^= 1
	if err := cp.Check(old, c); !errors.Is(err, ErrProof) {
		t.Errorf("consistency with a hash changed: Check = %v; want ErrProof", err)
	}
}

// rechain rewrites the prev of every line after the first changed one,
// as a forger who rewrites a record and the chain after it would.
func rechain(lines [][]byte) [][]byte {
	var prev [32]byte
	out := make([][]byte, len(lines))
	for i, l := range lines {
		l = bytes.Clone(l)
		if i > 0 {
			const prevField = `,"prev":"sha256:`
			j := bytes.Index(l, []byte(prevField)) + len(prevField)
			hex.Encode(l[j:j+64], prev[:])
		}
		prev = sha256.Sum256(l)
		out[i] = l
	}
	return out
}

func join(lines [][]byte) []byte { return append(bytes.Join(lines, []byte("\n")), '\n') }

// TestCheckTampering: each way a log can stop being an append-only
// extension of its checkpoints is found and named (Check).
func TestCheckTampering(t *testing.T) {
	g := readGenuine(t)
	leaves := leavesOf(t, g)
	full := checkpointAt(leaves, len(leaves))
	ended := checkpointAt(leaves, 14) // through the first session_end
	mid := checkpointAt(leaves, 9)
	rewritten := bytes.Clone(leaves[5])
	rewritten = bytes.Replace(rewritten, []byte(`"kind":"intent"`), []byte(`"kind":"intent" `), 1)
	edited := append(append(append([][]byte{}, leaves[:5]...), rewritten), leaves[6:]...)
	rechained := rechain(edited)
	forked := checkpointAt(rechained, 12)
	otherLeaves := rechain(append([][]byte{bytes.Replace(leaves[0], []byte(`"seq":0,`), []byte(`"seq":0, `), 1)}, leaves[1:]...))
	other := checkpointAt(otherLeaves, 3)
	tests := []struct {
		name string
		log  []byte
		cps  []Checkpoint
		want error
	}{
		{"genuine", g, []Checkpoint{ended, mid, full}, nil},
		{"genuine, the checkpoint of its first record", g, []Checkpoint{checkpointAt(leaves, 1)}, nil},
		{"record rewritten, chain left", join(edited), []Checkpoint{full}, ErrRewritten},
		{"record rewritten, chain redone", join(rechained), []Checkpoint{mid}, ErrRewritten},
		{"record rewritten after a checkpoint it still extends", join(rechained), []Checkpoint{checkpointAt(leaves, 5), full}, ErrRewritten},
		{"tail cut", join(leaves[:17]), []Checkpoint{full}, ErrCut},
		{"rolled back to a session's end", join(leaves[:14]), []Checkpoint{ended, full}, ErrRollback},
		{"rolled back to a checkpoint", join(leaves[:9]), []Checkpoint{mid, full}, ErrRollback},
		{"fork: one size, two roots", g, []Checkpoint{full, {Origin: full.Origin, Size: full.Size, Root: mid.Root}}, ErrFork},
		{"fork: a smaller tree not the larger's first records", g, []Checkpoint{forked, full}, ErrFork},
		{"another log's checkpoint", g, []Checkpoint{other}, ErrOrigin},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var named []Named
			dir := t.TempDir()
			var files []string
			for i, c := range tt.cps {
				f := filepath.Join(dir, "cp"+string(rune('a'+i)))
				if err := os.WriteFile(f, signed(t, c), 0o600); err != nil {
					t.Fatal(err)
				}
				files = append(files, f)
				named = append(named, Named{c, f})
			}
			_, err := Check(writeLog(t, tt.log), named)
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("Check = %v; want %v", err, tt.want)
			}
			for _, e := range []error{ErrRewritten, ErrCut, ErrRollback, ErrFork, ErrOrigin} {
				if e != tt.want && errors.Is(err, e) {
					t.Errorf("Check = %v; want %v alone, not %v", err, tt.want, e)
				}
			}
			_, ferr := CheckFiles(writeLog(t, tt.log), files, fixedPub)
			if (ferr == nil) != (err == nil) || tt.want != nil && !errors.Is(ferr, tt.want) {
				t.Errorf("CheckFiles = %v; want what Check says, %v", ferr, err)
			}
		})
	}
}

// TestSplitHistory: a history of checkpoints written one after the other
// splits into them, each opens; a torn last one fails alone.
func TestSplitHistory(t *testing.T) {
	leaves := leavesOf(t, readGenuine(t))
	var hist []byte
	for n := 1; n <= len(leaves); n++ {
		hist = append(hist, signed(t, checkpointAt(leaves, n))...)
	}
	cps, err := OpenAll(hist, fixedPub)
	if err != nil || len(cps) != len(leaves) {
		t.Fatalf("OpenAll(history of %d) = %d checkpoints, %v", len(leaves), len(cps), err)
	}
	for i, c := range cps {
		if c.Size != uint64(i+1) {
			t.Errorf("checkpoint %d has size %d; want %d", i, c.Size, i+1)
		}
	}
	torn := hist[:len(hist)-20]
	cps, err = OpenAll(torn, fixedPub)
	if len(cps) != len(leaves)-1 || !errors.Is(err, ErrTorn) || errors.Is(err, ErrCheckpoint) {
		t.Errorf("OpenAll(torn history) = %d checkpoints, %v; want %d and ErrTorn alone", len(cps), err, len(leaves)-1)
	}
}

// TestHistoryTornTail: a history cut anywhere within its last checkpoint
// (what a crash during an append leaves) holds the checkpoints before it,
// each checked, and a torn tail, which CheckFiles reports as ErrTorn and
// never as a bad checkpoint; a last checkpoint that is whole but forged,
// or bytes no append leaves, are ErrCheckpoint, as before.
func TestHistoryTornTail(t *testing.T) {
	g := readGenuine(t)
	leaves := leavesOf(t, g)
	var hist []byte
	for _, n := range []int{3, 9, len(leaves)} {
		hist = append(hist, signed(t, checkpointAt(leaves, n))...)
	}
	last := signed(t, checkpointAt(leaves, len(leaves)))
	whole := len(hist) - len(last)
	dir := t.TempDir()
	check := func(name string, data []byte) error {
		t.Helper()
		f := filepath.Join(dir, "audit.checkpoint.history")
		if err := os.WriteFile(f, data, 0o600); err != nil {
			t.Fatal(err)
		}
		res, err := CheckFiles(writeLog(t, g), []string{f}, fixedPub)
		if res == nil {
			t.Fatalf("%s: CheckFiles = nil, %v", name, err)
		}
		return err
	}
	for cut := whole + 1; cut < len(hist); cut++ {
		data := hist[:cut]
		notes, torn := SplitHistory(data)
		if len(notes) != 2 || len(torn) != cut-whole {
			t.Fatalf("SplitHistory(cut %d bytes into the last) = %d notes, %d torn bytes; want 2 and %d", cut-whole, len(notes), len(torn), cut-whole)
		}
		err := check(fmt.Sprintf("cut %d bytes into the last", cut-whole), data)
		var te *TornError
		if !errors.Is(err, ErrTorn) || !errors.As(err, &te) || te.Bytes != cut-whole || errors.Is(err, ErrCheckpoint) {
			t.Fatalf("CheckFiles(history cut %d bytes into its last checkpoint) = %v; want ErrTorn alone", cut-whole, err)
		}
	}
	if err := check("whole", hist); err != nil {
		t.Errorf("CheckFiles(whole history) = %v; want nil", err)
	}
	forged := bytes.Clone(hist)
	forged[len(forged)-10] ^= 1
	junk := append(bytes.Clone(hist), "not a checkpoint\n"...)
	onlyTorn := last[:len(last)/2]
	for _, tt := range []struct {
		name    string
		data    []byte
		want    error
		notWant error
	}{
		{"last checkpoint forged", forged, ErrCheckpoint, ErrTorn},
		{"bytes no append leaves", junk, ErrCheckpoint, ErrTorn},
		{"nothing but a torn checkpoint", onlyTorn, ErrTorn, ErrCheckpoint},
	} {
		if err := check(tt.name, tt.data); !errors.Is(err, tt.want) || errors.Is(err, tt.notWant) {
			t.Errorf("CheckFiles(%s) = %v; want %v, not %v", tt.name, err, tt.want, tt.notWant)
		}
	}
}
