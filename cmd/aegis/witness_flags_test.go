package main

import (
	"crypto/ed25519"
	"flag"
	"strings"
	"testing"

	"github.com/aegisrelay/aegis/internal/witness"
	"github.com/aegisrelay/aegis/journal"
)

// TestWitnessFlags: wrap's --witness URL,KEY needs a checkpoint file to
// submit, an http(s) URL and a witness key; --witness-quorum is between 1
// and the witnesses given, and means nothing without them, nor does
// --witness-strict.
func TestWitnessFlags(t *testing.T) {
	_, k, _ := ed25519.GenerateKey(nil)
	vkey, err := witness.CosignatureKey("example.com/w", k.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	w := "http://127.0.0.1:7380," + vkey
	cp := journal.Options{Checkpoint: journal.CheckpointOptions{File: "audit.checkpoint"}}
	tests := []struct {
		name    string
		args    []string
		opts    journal.Options
		want    int // witnesses
		wantErr string
	}{
		{"none", nil, cp, 0, ""},
		{"one", []string{"--witness", w}, cp, 1, ""},
		{"two, quorum 1", []string{"--witness", w, "--witness", w, "--witness-quorum", "1"}, cp, 2, ""},
		{"no checkpoint file", []string{"--witness", w}, journal.Options{}, 0, "no checkpoint file"},
		{"no key", []string{"--witness", "http://127.0.0.1:7380"}, cp, 0, "want URL,KEY"},
		{"not a URL", []string{"--witness", "127.0.0.1:7380," + vkey}, cp, 0, "http://"},
		{"not a key", []string{"--witness", "http://127.0.0.1:7380,ed25519:AAAA"}, cp, 0, "not a witness key"},
		{"quorum above the witnesses", []string{"--witness", w, "--witness-quorum", "2"}, cp, 0, "--witness-quorum 2"},
		{"quorum without witnesses", []string{"--witness-quorum", "1"}, cp, 0, "no --witness"},
		{"strict", []string{"--witness", w, "--witness-strict"}, cp, 1, ""},
		{"strict without witnesses", []string{"--witness-strict"}, cp, 0, "--witness-strict: no --witness"},
		{"no timeout", []string{"--witness", w, "--witness-timeout", "0s"}, cp, 0, "--witness-timeout"},
	}
	for _, tt := range tests {
		fs := flag.NewFlagSet("wrap", flag.ContinueOnError)
		wf := addWitnessFlags(fs)
		if err := fs.Parse(tt.args); err != nil {
			t.Fatal(err)
		}
		err := wf.check(tt.opts)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: check = %v; want an error with %q", tt.name, err, tt.wantErr)
			}
			continue
		}
		if err != nil || len(wf.ws) != tt.want {
			t.Errorf("%s: check = %v, %d witnesses; want nil, %d", tt.name, err, len(wf.ws), tt.want)
		}
	}
}
