package witness

import (
	"crypto/ed25519"
	"crypto/rsa"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestFlagsOptions: wrap's --witness URL,KEY needs a checkpoint file to
// submit, an http(s) URL, a witness key and an Ed25519 log key;
// --witness-quorum is between 1 and the witnesses given, and means
// nothing without them, nor does --witness-strict.
func TestFlagsOptions(t *testing.T) {
	pub, k, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	vkey, err := CosignatureKey("example.com/w", k.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	w := "http://127.0.0.1:7380," + vkey
	const file = "audit.checkpoint"
	tests := []struct {
		name    string
		f       Flags
		file    string
		pub     any
		want    int // witnesses
		wantErr string
	}{
		{"none", Flags{Timeout: time.Second}, file, pub, 0, ""},
		{"one", Flags{List: []string{w}, Timeout: time.Second}, file, pub, 1, ""},
		{"two, quorum 1", Flags{List: []string{w, w}, Quorum: 1, Timeout: time.Second}, file, pub, 2, ""},
		{"no checkpoint file", Flags{List: []string{w}, Timeout: time.Second}, "", pub, 0, "no checkpoint file"},
		{"no key", Flags{List: []string{"http://127.0.0.1:7380"}, Timeout: time.Second}, file, pub, 0, "want URL,KEY"},
		{"not a URL", Flags{List: []string{"127.0.0.1:7380," + vkey}, Timeout: time.Second}, file, pub, 0, "http://"},
		{"not a key", Flags{List: []string{"http://127.0.0.1:7380,ed25519:AAAA"}, Timeout: time.Second}, file, pub, 0, "not a witness key"},
		{"quorum above the witnesses", Flags{List: []string{w}, Quorum: 2, Timeout: time.Second}, file, pub, 0, "--witness-quorum 2"},
		{"quorum without witnesses", Flags{Quorum: 1, Timeout: time.Second}, file, pub, 0, "no --witness"},
		{"strict", Flags{List: []string{w}, Strict: true, Timeout: time.Second}, file, pub, 1, ""},
		{"strict without witnesses", Flags{Strict: true, Timeout: time.Second}, file, pub, 0, "--witness-strict: no --witness"},
		{"no timeout", Flags{List: []string{w}}, file, pub, 0, "--witness-timeout"},
		{"not an Ed25519 log key", Flags{List: []string{w}, Timeout: time.Second}, file, &rsa.PublicKey{}, 0, "not an Ed25519 key"},
	}
	for _, tt := range tests {
		o, err := tt.f.Options("audit.jsonl", tt.file, tt.pub, nil)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: Options = %v; want an error with %q", tt.name, err, tt.wantErr)
			}
			continue
		}
		switch {
		case err != nil:
			t.Errorf("%s: Options = %v", tt.name, err)
		case tt.want == 0 && o != nil:
			t.Errorf("%s: Options = %+v; want none", tt.name, o)
		case tt.want > 0 && (o == nil || len(o.Witnesses) != tt.want || o.File != tt.file || o.Log != "audit.jsonl" || !pub.Equal(o.Key) || o.Strict != tt.f.Strict || o.Quorum != tt.f.Quorum):
			t.Errorf("%s: Options = %+v; want %d witnesses, the file, log and key, and the flags", tt.name, o, tt.want)
		}
	}
}

// TestParseQuorum: a reader's --witness-quorum is between 1 and the keys
// given (0: all of them), and means nothing without them.
func TestParseQuorum(t *testing.T) {
	_, k, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	vkey, err := CosignatureKey("example.com/w", k.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		keys    []string
		n       int
		want    int // Quorum.N
		wantErr string
	}{
		{"none", nil, 0, 0, ""},
		{"all by default", []string{vkey, vkey}, 0, 2, ""},
		{"one of two", []string{vkey, vkey}, 1, 1, ""},
		{"above the keys", []string{vkey}, 2, 0, "--witness-quorum 2: between 1 and the 1 keys given"},
		{"negative", []string{vkey}, -1, 0, "--witness-quorum -1"},
		{"without keys", nil, 1, 0, "--witness-quorum: no --witness"},
		{"not a key", []string{"ed25519:AAAA"}, 0, 0, "--witness: "},
	}
	for _, tt := range tests {
		q, err := ParseQuorum(tt.keys, tt.n)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: ParseQuorum = %v; want an error with %q", tt.name, err, tt.wantErr)
			}
			continue
		}
		if err != nil || q.N != tt.want || len(q.Witnesses) != len(tt.keys) {
			t.Errorf("%s: ParseQuorum = %+v, %v; want N %d of %d", tt.name, q, err, tt.want, len(tt.keys))
		}
	}
}

// TestRefusal names the log, every witness's answer, the checkpoint file
// and its size.
func TestRefusal(t *testing.T) {
	e := &RefusedError{Size: 7, Answers: []error{errors.New("w1: ahead"), errors.New("w2: fork")}}
	got := e.Refusal("audit.jsonl", "audit.checkpoint")
	for _, want := range []string{"audit.jsonl: w1: ahead; w2: fork; its last checkpoint, in audit.checkpoint, is 7 records", "under --witness-strict it is not continued"} {
		if !strings.Contains(got, want) {
			t.Errorf("Refusal = %q; want %q in it", got, want)
		}
	}
}
