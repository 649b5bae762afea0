package verify

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/journal"
	"github.com/aegisrelay/aegis/journal/record"
	"github.com/aegisrelay/aegis/journal/segment"
)

// seededKey is a fixed Ed25519 key, distinct for each name.
func seededKey(name string) ed25519.PrivateKey {
	seed := sha256.Sum256([]byte("aegis certs_test " + name))
	return ed25519.NewKeyFromSeed(seed[:])
}

func pubOf(k ed25519.PrivateKey) ed25519.PublicKey { return k.Public().(ed25519.PublicKey) }

// certSession is one session of a hand-written log: its session_start's
// key and certificate, the key that signs its records, and its sid.
type certSession struct {
	sid  byte
	key  ed25519.PublicKey   // session_start's "key"
	cert *record.SessionCert // nil: a session signed by its root
	sign ed25519.PrivateKey  // signs its intent, outcome and session_end
}

// certLog writes sessions one after the other as the journal does (each
// record its own group, so each signed), with a fixed clock.
func certLog(sessions ...certSession) []byte {
	var out []byte
	var prev record.Digest
	seq := uint64(0)
	ts := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, s := range sessions {
		call := record.Call{Type: record.IDNumber, Text: []byte("1")}
		start := seq
		bodies := []record.Body{
			&record.SessionStart{Key: s.key, Cert: s.cert, Aegis: "test", Argv: []string{"server"}, Durability: "strict", PolicySet: record.PassThroughSet},
			&record.Intent{Call: call, Tool: []byte("echo"), HasTool: true},
			&record.Outcome{Call: call, Intent: start + 1, HasResponse: true, Status: record.StatusOK},
			&record.SessionEnd{Reason: record.EndClientEOF, Counts: record.Counts{FramesIn: 1, FramesOut: 1, Intents: 1, Outcomes: 1}},
		}
		for _, b := range bodies {
			line := len(out)
			out = append(out, `{"v":2,"seq":`...)
			out = fmt.Appendf(out, "%d", seq)
			out = append(out, `,"ts":"`...)
			out = record.AppendTime(out, ts)
			out = fmt.Appendf(out, `","sid":"%02x0102030405060708090a0b0c0d0e0f","kind":"`, s.sid)
			out = append(out, b.Kind().String()...)
			out = append(out, `","prev":"`...)
			out = prev.Append(out)
			out = append(out, '"')
			out = b.AppendFields(out)
			out = record.AppendSig(out, ed25519.Sign(s.sign, out[line:]))
			prev = sha256.Sum256(out[line:])
			out = append(out, '\n')
			seq++
		}
	}
	return out
}

// lastPrev is the hash of the last line of log (the prev of the record
// that would follow it).
func lastPrev(log []byte) record.Digest {
	lines := bytes.SplitAfter(bytes.TrimSuffix(log, []byte("\n")), []byte("\n"))
	return sha256.Sum256(bytes.TrimSuffix(lines[len(lines)-1], []byte("\n")))
}

// certTS is when certify's certificates are made: a second before
// certLog's records.
var certTS = time.Date(2026, 1, 2, 3, 4, 4, 0, time.UTC)

// sidOf is the sid certLog writes for certSession.sid.
func sidOf(b byte) [16]byte {
	return [16]byte{b, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
}

// certify is root's certificate of key for the session sid (certLog's
// sid byte) beginning at seq after prev.
func certify(t *testing.T, root ed25519.PrivateKey, key ed25519.PublicKey, sid byte, seq uint64, prev record.Digest) *record.SessionCert {
	t.Helper()
	c, err := record.Certify(root, key, sidOf(sid), seq, prev, certTS)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// certifyV1 is root's v1 certificate of key, as journals wrote them
// before v2: the place only, no session.
func certifyV1(root ed25519.PrivateKey, key ed25519.PublicKey, seq uint64, prev record.Digest) *record.SessionCert {
	c := &record.SessionCert{Root: pubOf(root), V1: true, Seq: seq, Prev: prev, TS: certTS}
	c.Sig = ed25519.Sign(root, c.AppendMessage(nil, key))
	return c
}

// TestSessionCerts: a session's records are checked against its
// session key, the session key against the certificate, the
// certificate against its root, and the root against the pinned key.
// Each way of breaking that chain is invalid, named at the line where
// it shows, in file order.
func TestSessionCerts(t *testing.T) {
	root, other := seededKey("root"), seededKey("other")
	sk1, sk2 := seededKey("session 1"), seededKey("session 2")
	first := certLog(certSession{sid: 1, key: pubOf(sk1), cert: certify(t, root, pubOf(sk1), 1, 0, record.Digest{}), sign: sk1})
	good1 := certSession{sid: 1, key: pubOf(sk1), cert: certify(t, root, pubOf(sk1), 1, 0, record.Digest{}), sign: sk1}
	// A second session certified where it begins: after first's 4 lines.
	good2 := certSession{sid: 2, key: pubOf(sk2), cert: certify(t, root, pubOf(sk2), 2, 4, lastPrev(first)), sign: sk2}
	flipped := *certify(t, root, pubOf(sk2), 2, 4, lastPrev(first))
	flipped.Sig = bytes.Clone(flipped.Sig)
	flipped.Sig[5] ^= 1
	flipped1 := *certify(t, root, pubOf(sk1), 1, 0, record.Digest{})
	flipped1.Sig = bytes.Clone(flipped1.Sig)
	flipped1.Sig[9] ^= 1
	laterTS := *good1.cert
	laterTS.TS = laterTS.TS.Add(time.Second)
	// A session key and its certificate taken from one log (good1's:
	// session 01 at seq 0) and used to start a new log: the place fits
	// every new log; the session does not.
	stolen := func(sid byte) certSession { return certSession{sid: sid, key: pubOf(sk1), cert: good1.cert, sign: sk1} }
	// The same with the certificate's sid edited to the new log's.
	edited := *good1.cert
	edited.SID = sidOf(3)
	// A certificate made after the session it names began.
	late, err := record.Certify(root, pubOf(sk1), sidOf(1), 0, record.Digest{}, certTS.Add(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	v1 := certSession{sid: 1, key: pubOf(sk1), cert: certifyV1(root, pubOf(sk1), 0, record.Digest{}), sign: sk1}

	tests := []struct {
		name     string
		sessions []certSession
		pin      ed25519.PublicKey
		want     Status
		problems []string // substrings of the problems, in order
	}{
		{"certified, pinned to the root", []certSession{good1, good2}, pubOf(root), Valid, nil},
		{"certified, unpinned", []certSession{good1, good2}, nil, Valid, nil},
		{"root-signed session after a certified one", []certSession{good1, {sid: 2, key: pubOf(root), sign: root}}, pubOf(root), Valid, nil},
		{"pinned to another key", []certSession{good1}, pubOf(other), Invalid,
			[]string{"line 1 (seq 0): session 01010203040506070809", "is certified by " + record.FormatPublicKey(pubOf(root)) + ", not the pinned key"}},
		{"records signed by an uncertified key", []certSession{good1, {sid: 2, key: pubOf(sk2), cert: good2.cert, sign: other}}, pubOf(root), Invalid,
			[]string{"line 5 (seq 4): signature does not verify", "line 6 (seq 5): signature does not verify", "line 7 (seq 6): signature does not verify", "line 8 (seq 7): signature does not verify"}},
		{"session key replaced, certificate kept", []certSession{good1, {sid: 2, key: pubOf(other), cert: good2.cert, sign: other}}, pubOf(root), Invalid,
			[]string{"line 5 (seq 4): session 02", "certificate does not verify against its root"}},
		{"certificate by another root, pinned", []certSession{good1, {sid: 2, key: pubOf(sk2), cert: certify(t, other, pubOf(sk2), 2, 4, lastPrev(first)), sign: sk2}}, pubOf(root), Invalid,
			[]string{"line 5 (seq 4): session 02", "is certified by " + record.FormatPublicKey(pubOf(other))}},
		{"certificate by another root, unpinned", []certSession{good1, {sid: 2, key: pubOf(sk2), cert: certify(t, other, pubOf(sk2), 2, 4, lastPrev(first)), sign: sk2}}, nil, Valid, nil},
		{"certificate signature flipped", []certSession{good1, {sid: 2, key: pubOf(sk2), cert: &flipped, sign: sk2}}, pubOf(root), Invalid,
			[]string{"line 5 (seq 4): session 02", "certificate does not verify"}},
		{"certificate for another place", []certSession{good1, {sid: 2, key: pubOf(sk2), cert: certify(t, root, pubOf(sk2), 2, 0, record.Digest{}), sign: sk2}}, pubOf(root), Invalid,
			[]string{"line 5 (seq 4): session 02", "is for sessions beginning at seq 0"}},
		{"a session key's certificate replayed in a new log", []certSession{{sid: 2, key: pubOf(sk2), cert: good2.cert, sign: sk2}}, pubOf(root), Invalid,
			[]string{"line 1 (seq 0): session 02", "is for sessions beginning at seq 4"}},
		{"one key, one certificate, two sessions", []certSession{good1, {sid: 2, key: pubOf(sk1), cert: good1.cert, sign: sk1}}, pubOf(root), Valid, nil},
		{"one key again after another key's session", []certSession{good1, good2, {sid: 3, key: pubOf(sk1), cert: good1.cert, sign: sk1}}, pubOf(root), Invalid,
			[]string{"line 9 (seq 8): session 03", "is an earlier journal's"}},
		{"one key, a certificate that does not verify, two sessions", []certSession{{sid: 1, key: pubOf(sk1), cert: &flipped1, sign: sk1}, {sid: 2, key: pubOf(sk1), cert: &flipped1, sign: sk1}}, pubOf(root), Invalid,
			[]string{"line 1 (seq 0): session 01", "certificate does not verify against its root"}},
		{"one key, two certificates", []certSession{good1, {sid: 2, key: pubOf(sk1), cert: &laterTS, sign: sk1}}, pubOf(root), Invalid,
			[]string{"line 5 (seq 4): session 02", "carries another certificate"}},
		{"a v2 certificate copied into a new log of another session", []certSession{stolen(3)}, pubOf(root), Invalid,
			[]string{"line 1 (seq 0): session 03", "certificate is for session 01"}},
		{"a v2 certificate copied into a new log, unpinned", []certSession{stolen(0xfe)}, nil, Invalid,
			[]string{"line 1 (seq 0): session fe", "certificate is for session 01"}},
		{"a v2 certificate copied, its sid edited to the new log's", []certSession{{sid: 3, key: pubOf(sk1), cert: &edited, sign: sk1}}, pubOf(root), Invalid,
			[]string{"line 1 (seq 0): session 03", "certificate does not verify against its root"}},
		{"a v2 certificate made after its session began", []certSession{{sid: 1, key: pubOf(sk1), cert: late, sign: sk1}}, pubOf(root), Invalid,
			[]string{"line 1 (seq 0): session 01", "was made at 2026-01-02T03:04:06", "after the session began at 2026-01-02T03:04:05"}},
		{"a v2 certificate, its ts edited to the session's", []certSession{{sid: 1, key: pubOf(sk1), cert: &laterTS, sign: sk1}}, pubOf(root), Invalid,
			[]string{"line 1 (seq 0): session 01", "certificate does not verify against its root"}},
		{"a v2 certificate copied to a later place of its own log", []certSession{good1, stolen(2)}, pubOf(root), Valid, nil},
		{"a v1 certificate, as logs before v2 carry", []certSession{v1, {sid: 2, key: pubOf(sk1), cert: v1.cert, sign: sk1}}, pubOf(root), Valid, nil},
		{"a v1 certificate in a new log of another session (what v2 closes)", []certSession{{sid: 3, key: pubOf(sk1), cert: v1.cert, sign: sk1}}, pubOf(root), Valid, nil},
		{"a v1 certificate for another place", []certSession{good1, {sid: 2, key: pubOf(sk2), cert: certifyV1(root, pubOf(sk2), 0, record.Digest{}), sign: sk2}}, pubOf(root), Invalid,
			[]string{"line 5 (seq 4): session 02", "is for sessions beginning at seq 0"}},
		{"a v1 certificate's signature on a v2 certificate", []certSession{{sid: 1, key: pubOf(sk1), cert: &record.SessionCert{Root: pubOf(root), SID: sidOf(1), TS: certTS, Sig: v1.cert.Sig}, sign: sk1}}, pubOf(root), Invalid,
			[]string{"line 1 (seq 0): session 01", "certificate does not verify against its root"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := verifyBytes(t, certLog(tt.sessions...), Options{Key: tt.pin})
			if rep.Status != tt.want {
				t.Fatalf("Verify = %v %v %v; want %v", rep.Status, rep.Problems, rep.Gaps, tt.want)
			}
			var got strings.Builder
			for _, p := range rep.Problems {
				got.WriteString(p.String() + "\n")
			}
			rest := got.String()
			for _, want := range tt.problems {
				i := strings.Index(rest, want)
				if i < 0 {
					t.Fatalf("problems =\n%s; want %q, in that order after what came before", got.String(), want)
				}
				rest = rest[i+len(want):]
			}
			if tt.want == Valid && tt.pin != nil {
				for _, s := range rep.Sessions {
					if s.Key != record.FormatPublicKey(tt.pin) {
						t.Errorf("session %s Key = %s; want the pinned root %s", s.SID, s.Key, record.FormatPublicKey(tt.pin))
					}
				}
			}
		})
	}
}

// TestJournalSessionKey: the journal signs every record with a session
// key of its own, not the root, and carries the root's certificate of
// it in session_start; the log verifies pinned to the root, its head
// file is signed by the root, and a second Open certifies a new key.
func TestJournalSessionKey(t *testing.T) {
	root := testKey(t)
	dir := t.TempDir()
	path, head := filepath.Join(dir, "audit.jsonl"), filepath.Join(dir, "audit.head")
	var keys []string
	for range 2 {
		j, err := journal.Open(path, journal.Options{Key: root, Durability: mustDurability(t, "strict"), HeadFile: head})
		if err != nil {
			t.Fatal(err)
		}
		if !j.PublicKey().Equal(pubOf(root)) {
			t.Fatalf("PublicKey = %s; want the root %s", record.FormatPublicKey(j.PublicKey()), record.FormatPublicKey(pubOf(root)))
		}
		start := &record.SessionStart{Aegis: "test", Argv: []string{"server"}, Durability: "strict", PolicySet: record.PassThroughSet}
		if _, err := j.Append(start); err != nil {
			t.Fatal(err)
		}
		if start.Key.Equal(pubOf(root)) || start.Cert == nil || !start.Cert.Root.Equal(pubOf(root)) || !start.Cert.Verify(start.Key) {
			t.Fatalf("session_start key %s cert %+v; want a session key certified by the root", record.FormatPublicKey(start.Key), start.Cert)
		}
		keys = append(keys, record.FormatPublicKey(start.Key))
		calls := newCallRecords()
		for n := range 3 {
			if err := calls.call(j, n+1); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := j.Append(&record.SessionEnd{Reason: record.EndClientEOF, Counts: record.Counts{Intents: 3, Outcomes: 3}}); err != nil {
			t.Fatal(err)
		}
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if keys[0] == keys[1] {
		t.Errorf("two Opens certified the same session key %s; want one each", keys[0])
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		var d record.Decoder
		r, err := d.Decode(line)
		if err != nil {
			t.Fatal(err)
		}
		if r.Sig != nil && ed25519.Verify(pubOf(root), r.Signed, r.Sig) {
			t.Errorf("line %d is signed by the root; want only session keys on records", i+1)
		}
	}
	sh, err := record.ReadHead(head)
	if err != nil {
		t.Fatal(err)
	}
	if !sh.Key.Equal(pubOf(root)) {
		t.Errorf("head file key %s; want the root", record.FormatPublicKey(sh.Key))
	}
	rep := verifyBytes(t, data, Options{Key: pubOf(root), Head: &sh.Head, HeadKey: sh.Key})
	if rep.Status != Valid || len(rep.Sessions) != 2 {
		t.Fatalf("Verify = %v %v, %d sessions; want valid, 2", rep.Status, rep.Problems, len(rep.Sessions))
	}
	for i, s := range rep.Sessions {
		if s.Key != record.FormatPublicKey(pubOf(root)) || s.SessionKey != keys[i] {
			t.Errorf("session %d: Key %s SessionKey %s; want %s and %s", i, s.Key, s.SessionKey, record.FormatPublicKey(pubOf(root)), keys[i])
		}
	}
}

// TestRootSignedLogs: logs written before session keys (each session
// signed by the root directly; testdata/rootsigned holds the journal's
// golden logs as they were) verify as they did: the same verdict, and
// each session pinned to the key its session_start names.
func TestRootSignedLogs(t *testing.T) {
	dir := filepath.Join("testdata", "rootsigned")
	tests := []struct {
		file string
		want Status
	}{
		{"genuine.jsonl", Valid},
		{"torn.jsonl", Incomplete},
		{"prezeroed.jsonl", Valid},
		{"smallorder.jsonl", Invalid},
		{"rotated/audit.jsonl", Valid},
	}
	for _, tt := range tests {
		sets, err := segment.Sets([]string{filepath.Join(dir, tt.file)}, true)
		if err != nil {
			t.Fatal(err)
		}
		for _, pin := range []ed25519.PublicKey{fuzzPub, nil} {
			rep, err := Set(sets[0], Options{Key: pin})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Status != tt.want {
				t.Errorf("Verify(%s, pinned %v) = %v %v; want %v", tt.file, pin != nil, rep.Status, rep.Problems, tt.want)
			}
			for _, s := range rep.Sessions {
				if s.SessionKey != "" {
					t.Errorf("Verify(%s): session %s SessionKey %q; want none in a root-signed log", tt.file, s.SID, s.SessionKey)
				}
			}
		}
	}
}

// TestCertV1Logs: logs whose sessions carry v1 certificates (the place
// only; testdata/certv1 holds the journal's golden logs as they were
// before v2) verify as they did: the same verdict, each session pinned to
// the root that certifies it.
func TestCertV1Logs(t *testing.T) {
	dir := filepath.Join("testdata", "certv1")
	tests := []struct {
		file     string
		want     Status
		sessions int
	}{
		{"genuine.jsonl", Valid, 2},
		{"prezeroed.jsonl", Valid, 1},
		{"torn.jsonl", Incomplete, 1},
		{"rotated/audit.jsonl", Valid, 2},
	}
	for _, tt := range tests {
		sets, err := segment.Sets([]string{filepath.Join(dir, tt.file)}, true)
		if err != nil {
			t.Fatal(err)
		}
		for _, pin := range []ed25519.PublicKey{fuzzPub, nil} {
			rep, err := Set(sets[0], Options{Key: pin})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Status != tt.want || len(rep.Sessions) != tt.sessions {
				t.Errorf("Verify(%s, pinned %v) = %v %v, %d sessions; want %v, %d", tt.file, pin != nil, rep.Status, rep.Problems, len(rep.Sessions), tt.want, tt.sessions)
			}
			for _, s := range rep.Sessions {
				if s.SessionKey == "" || s.Key != record.FormatPublicKey(fuzzPub) {
					t.Errorf("Verify(%s): session %s Key %s SessionKey %q; want certified by %s", tt.file, s.SID, s.Key, s.SessionKey, record.FormatPublicKey(fuzzPub))
				}
			}
		}
	}
}
