package userfiles

import (
	"crypto/ed25519"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aegisrelay/aegis/journal/record"
)

// stateFolder makes a state folder holding files (empty), and returns
// it: the aegis folder under a fresh $XDG_STATE_HOME.
func stateFolder(t *testing.T, files ...string) string {
	t.Helper()
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	state, err := StateDir()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(state, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return state
}

// TestFindLogs: a server's NAME (or NAME.jsonl) stands for all its logs
// in the state folder, its default log given as a file too (each log
// added said in a note), each with its sealed segments; a glob is
// expanded; a name no server has, and a glob that matches nothing, are
// errors; the notes made before an error come with it.
func TestFindLogs(t *testing.T) {
	state := stateFolder(t, "a.jsonl", "a-2.jsonl", "a.jsonl.0-5.jsonl", "b.jsonl")
	in := func(names ...string) []string {
		for i, n := range names {
			names[i] = filepath.Join(state, n)
		}
		return names
	}
	t.Chdir(t.TempDir())
	if err := os.WriteFile("x.jsonl", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	addedNote := "also reading " + filepath.Join(state, "a-2.jsonl") + ", a's log while a.jsonl was in use"
	for _, tt := range []struct {
		args      []string
		wantArgs  []string
		wantSets  [][]string // each set's paths
		wantNotes []string
		wantErr   string
	}{
		{args: []string{"a"}, wantArgs: in("a.jsonl", "a-2.jsonl"), wantSets: [][]string{in("a.jsonl", "a.jsonl.0-5.jsonl"), in("a-2.jsonl")}},
		{args: []string{"b.jsonl"}, wantArgs: in("b.jsonl"), wantSets: [][]string{in("b.jsonl")}},
		{args: []string{filepath.Join(state, "a.jsonl")}, wantArgs: in("a.jsonl", "a-2.jsonl"),
			wantSets: [][]string{in("a.jsonl", "a.jsonl.0-5.jsonl"), in("a-2.jsonl")}, wantNotes: []string{addedNote}},
		{args: []string{filepath.Join(state, "b*")}, wantArgs: in("b*"), wantSets: [][]string{in("b.jsonl")}},
		{args: []string{"x.jsonl"}, wantArgs: []string{"x.jsonl"}, wantSets: [][]string{{"x.jsonl"}}},
		{args: []string{"nope"}, wantErr: "nope: no such file, and no server of that name has a log in " + state},
		{args: []string{filepath.Join(state, "a.jsonl"), "nope"}, wantNotes: []string{addedNote}, wantErr: "nope: no such file"},
		{args: []string{"*.nothing"}, wantErr: "*.nothing: no file matches"},
	} {
		l, err := FindLogs(tt.args)
		if tt.wantErr != "" {
			if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
				t.Errorf("FindLogs(%q) = %v; want an error %q…", tt.args, err, tt.wantErr)
			}
		} else if err != nil {
			t.Errorf("FindLogs(%q) = %v", tt.args, err)
		}
		if tt.wantArgs != nil && !slices.Equal(l.Args, tt.wantArgs) {
			t.Errorf("FindLogs(%q).Args = %q; want %q", tt.args, l.Args, tt.wantArgs)
		}
		var sets [][]string
		for _, s := range l.Sets {
			sets = append(sets, s.Paths)
		}
		if !slices.EqualFunc(sets, tt.wantSets, slices.Equal) {
			t.Errorf("FindLogs(%q).Sets = %q; want %q", tt.args, sets, tt.wantSets)
		}
		if !slices.Equal(l.Notes, tt.wantNotes) {
			t.Errorf("FindLogs(%q).Notes = %q; want %q", tt.args, l.Notes, tt.wantNotes)
		}
	}
}

// TestFindLog: prove's LOG is a file, or a server with one log; a
// server with two, and a name no server has, are errors.
func TestFindLog(t *testing.T) {
	state := stateFolder(t, "a.jsonl", "a-2.jsonl", "b.jsonl", "b.jsonl.0-5.jsonl")
	for _, tt := range []struct {
		arg, want, wantErr string
	}{
		{arg: "b", want: filepath.Join(state, "b.jsonl")},
		{arg: filepath.Join(state, "a-2.jsonl"), want: filepath.Join(state, "a-2.jsonl")},
		{arg: "a", wantErr: "a has 2 logs (" + filepath.Join(state, "a.jsonl") + ", " + filepath.Join(state, "a-2.jsonl") + "): name one"},
		{arg: "nope", wantErr: "nope: no such file, and no server of that name has a log in " + state},
		{arg: state, wantErr: state + " holds 3 logs; name one"},
	} {
		set, err := FindLog(tt.arg)
		switch {
		case tt.wantErr != "":
			if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
				t.Errorf("FindLog(%q) = %v; want an error %q…", tt.arg, err, tt.wantErr)
			}
		case err != nil:
			t.Errorf("FindLog(%q) = %v", tt.arg, err)
		case set.Base != tt.want:
			t.Errorf("FindLog(%q) = the log %s; want %s", tt.arg, set.Base, tt.want)
		}
	}
}

// TestPinKey: --key's key, else keygen's public key when it exists (one
// that does not read as a key an error, never passed over), else none,
// each said in the mode; --unpinned pins none, and with --key is an
// error.
func TestPinKey(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	priv, err := KeyPath()
	if err != nil {
		t.Fatal(err)
	}
	pubPath := priv + ".pub"
	pin, err := PinKey("", false)
	if err != nil || pin.Key != nil || pin.Mode != "unpinned: each session checked only against the key it names (no --key, and no public key at "+pubPath+")" {
		t.Errorf("PinKey with no default key = %+v, %v; want none, and the path looked at", pin, err)
	}
	if _, err := MkdirParents(priv); err != nil {
		t.Fatal(err)
	}
	k, err := record.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	pub, err := WriteKey(priv, k, false)
	if err != nil {
		t.Fatal(err)
	}
	want := k.Public().(ed25519.PublicKey)
	for _, tt := range []struct {
		key      string
		unpinned bool
		wantKey  bool
		wantMode string
	}{
		{"", false, true, "pinned to " + pub + ", the default key " + pubPath},
		{pub, false, true, "pinned to " + pub},
		{"@" + pubPath, false, true, "pinned to " + pub},
		{"", true, false, "unpinned: each session checked only against the key it names (--unpinned)"},
	} {
		pin, err := PinKey(tt.key, tt.unpinned)
		if err != nil || pin.Key.Equal(want) != tt.wantKey || pin.Mode != tt.wantMode {
			t.Errorf("PinKey(%q, %v) = %+v, %v; want the key %v, mode %q", tt.key, tt.unpinned, pin, err, tt.wantKey, tt.wantMode)
		}
	}
	for _, tt := range []struct {
		key      string
		unpinned bool
		wantErr  string
	}{
		{pub, true, "give --key or --unpinned, not both"},
		{"ed25519:nope", false, "--key: "},
		{"@" + pubPath + ".missing", false, "--key: "},
	} {
		if pin, err := PinKey(tt.key, tt.unpinned); err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
			t.Errorf("PinKey(%q, %v) = %+v, %v; want an error %q…", tt.key, tt.unpinned, pin, err, tt.wantErr)
		}
	}
	if err := os.WriteFile(pubPath, []byte("not a key\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if pin, err := PinKey("", false); err == nil || !strings.HasPrefix(err.Error(), "the default public key: ") {
		t.Errorf("PinKey with a default .pub that is no key = %+v, %v; want an error", pin, err)
	}
}
