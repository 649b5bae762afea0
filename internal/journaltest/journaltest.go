// Package journaltest holds the test helpers the journal's packages
// share: keys, the genuine log of the fuzz tests, and the records of a
// recorded tools/call. It imports no package of the journal but record,
// so that the tests of package journal itself may use it as well as
// those of verify. It is for tests only.
package journaltest

import (
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	xtlog "golang.org/x/mod/sumdb/tlog"

	"github.com/aegisrelay/aegis/journal/record"
)

// Key returns a fresh signing key.
func Key(tb testing.TB) ed25519.PrivateKey {
	tb.Helper()
	k, err := record.GenerateKey()
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

// FuzzKey signs the genuine log (Genuine): a key derived from a fixed
// seed, so that the log in testdata verifies in every run. The fuzzers
// cannot sign with it; anything they make that verifies under it, other
// than the genuine log cut at a line end, is a hole in the verifier.
var FuzzKey = func() ed25519.PrivateKey {
	seed := sha256.Sum256([]byte("aegis FuzzVerify"))
	return ed25519.NewKeyFromSeed(seed[:])
}()

// FuzzPub is FuzzKey's public key.
var FuzzPub = FuzzKey.Public().(ed25519.PublicKey)

// Genuine returns journal/record/testdata/genuine.jsonl: two sessions of
// every record kind, signed by FuzzKey, with a torn line between them.
func Genuine(tb testing.TB) []byte {
	tb.Helper()
	// A test runs in its package's folder, somewhere under the module's
	// root: the file is found from there, not from this file's compiled-in
	// path, which -trimpath makes a module path.
	rel := filepath.Join("journal", "record", "testdata", "genuine.jsonl")
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, rel))
		if err == nil {
			return data
		}
		parent := filepath.Dir(dir)
		if !errors.Is(err, fs.ErrNotExist) || parent == dir {
			tb.Fatalf("journaltest: no %s above the test's folder: %v", rel, err)
		}
		dir = parent
	}
}

// Calls builds the records of recorded tools/calls as the relay does: an
// intent, then its outcome. The records returned are reused by the next
// call to Intent or Outcome (a journal's Append copies them). A Calls is
// not safe for concurrent use.
type Calls struct {
	id  []byte
	in  record.Intent
	out record.Outcome
}

// NewCalls returns a Calls whose records name the tool read_file and
// carry fixed request and response digests.
func NewCalls() *Calls {
	c := &Calls{}
	c.in = record.Intent{Tool: []byte("read_file"), HasTool: true, RequestDigest: sha256.Sum256([]byte("request"))}
	c.out = record.Outcome{ResponseDigest: sha256.Sum256([]byte("response")), HasResponse: true, Status: record.StatusOK, LatencyNS: 123456}
	return c
}

// Intent returns the intent of call n (its id is the number n).
func (c *Calls) Intent(n int) *record.Intent {
	c.id = strconv.AppendInt(c.id[:0], int64(n), 10)
	c.in.Call = record.Call{Type: record.IDNumber, Text: c.id}
	return &c.in
}

// Outcome returns the outcome, answering the intent at seq intent, of the
// call last named by Intent.
func (c *Calls) Outcome(intent uint64) *record.Outcome {
	c.out.Call, c.out.Intent = c.in.Call, intent
	return &c.out
}

// RFC6962Root is the RFC 6962 root of the tree whose leaves are leaves,
// computed with golang.org/x/mod/sumdb/tlog: an implementation that shares
// no code with package tlog's (transparency-dev/merkle), so that tests
// check aegis's trees against it.
func RFC6962Root(t testing.TB, leaves [][]byte) xtlog.Hash {
	t.Helper()
	var stored []xtlog.Hash
	hr := xtlog.HashReaderFunc(func(idx []int64) ([]xtlog.Hash, error) {
		out := make([]xtlog.Hash, len(idx))
		for i, x := range idx {
			out[i] = stored[x]
		}
		return out, nil
	})
	for i, l := range leaves {
		hs, err := xtlog.StoredHashes(int64(i), l, hr)
		if err != nil {
			t.Fatal(err)
		}
		stored = append(stored, hs...)
	}
	h, err := xtlog.TreeHash(int64(len(leaves)), hr)
	if err != nil {
		t.Fatal(err)
	}
	return h
}
