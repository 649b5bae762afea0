package clientconfig

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// FuzzWrap checks, for any file: the reader accepts everything
// encoding/json accepts; Wrap leaves no stdio server unwrapped and
// wrapping again changes nothing; unwrapping what Wrap wrote gives every
// server back its command and arguments, and the original bytes unless
// the file had entries with Wrap's mark already.
func FuzzWrap(f *testing.F) {
	files, err := filepath.Glob("testdata/*.json")
	if err != nil || len(files) == 0 {
		f.Fatalf("testdata/*.json: %v, %d files", err, len(files))
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"mcpServers": {"a": {"command": "x", "args": [ ]}, "b": {"args": ["-v"], "command": "y"}}}`))
	f.Add([]byte(`{"servers": {"a": {"command": "/bin/aegis", "args": ["wrap", "--policy", "p", "--", "z"]}}}`))
	f.Add([]byte(`{"mcpServers": {"m": {"command": "aegis", "args": ["wrap", "--name=m", "npx", "-y", "pkg"]}, "n": {"args": ["wrap", "-name=n", "t"], "command": "aegis"}, "o": {"command": "s"}}}`))
	f.Add([]byte(`{"mcpServers": {"w": {"command": "cmd", "args": ["/c", "npx", "pkg"]}, "o": {"command": "s", "args": []}}}`))
	f.Add([]byte("{\r\n \"mcpServers\": {\r\n  \"a\": {\r\n   \"args\": [\r\n    \"-v\"\r\n   ],\r\n   \"command\": \"x\"\r\n  },\r\n  \"b\": {\"args\": [ /* none */ ], \"command\": \"-y\"}\r\n }\r\n}\r\n"))
	opts := Options{Aegis: "/opt/bin/aegis", Client: "c"}
	f.Fuzz(func(t *testing.T, src []byte) {
		scan, err := Scan(src, opts)
		if json.Valid(src) && !bytes.HasPrefix(src, []byte("\uFEFF")) {
			if _, perr := parse(src); perr != nil && bytes.Count(src, []byte("[")) <= maxDepth && bytes.Count(src, []byte("{")) <= maxDepth {
				t.Fatalf("parse refused what encoding/json accepts: %v", perr)
			}
		}
		if err != nil {
			if w, werr := Wrap(src, opts); w != nil || werr == nil {
				t.Fatalf("Scan refused (%v) and Wrap did not (%v)", err, werr)
			}
			return
		}
		w, err := Wrap(src, opts)
		if err != nil {
			t.Fatalf("Scan read the file and Wrap refused it: %v", err)
		}
		again, err := Wrap(w.Out, opts)
		if err != nil {
			t.Fatalf("Wrap refused its own output: %v\n%s", err, w.Out)
		}
		if again.Changed() {
			t.Fatalf("Wrap of Wrap's output changed it:\n%s", again.Diff("a", "b"))
		}
		// Unwrap undoes what Wrap did, byte for byte, unless src holds an
		// entry with Wrap's mark already (Unwrap takes it for Wrap's).
		hadMarked := false
		want := map[string][]string{} // stdio entries' argv, by path
		for _, e := range scan.Entries {
			if e.Kind == Wrapped {
				ok, _ := marked(e.Argv[1:])
				hadMarked = hadMarked || ok
			}
			if e.Kind == Stdio {
				want[dotted(e.Path)] = e.Argv
			}
		}
		for _, e := range again.Entries {
			if e.Kind == Stdio && !windowsShell(e.Argv[0], e.Argv[1:]) {
				t.Fatalf("%v is still a stdio entry after Wrap", e.Path)
			}
		}
		u, err := Unwrap(w.Out, opts)
		if err != nil {
			t.Fatalf("Unwrap refused Wrap's output: %v\n%s", err, w.Out)
		}
		back, err := Scan(u.Out, opts)
		if err != nil {
			t.Fatalf("Scan refused Unwrap's output: %v\n%s", err, u.Out)
		}
		for _, e := range back.Entries {
			if argv, ok := want[dotted(e.Path)]; ok && (e.Kind != Stdio || !slices.Equal(e.Argv, argv)) {
				t.Fatalf("%v after Wrap and Unwrap = %v %q; want stdio %q", e.Path, e.Kind, e.Argv, argv)
			}
		}
		if !hadMarked && !bytes.Equal(u.Out, src) {
			t.Fatalf("Unwrap(Wrap(src)) differs from src:\n%s\nwant\n%s", u.Out, src)
		}
	})
}
