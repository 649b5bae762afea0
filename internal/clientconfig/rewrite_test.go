package clientconfig

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

const testAegis = "/usr/local/bin/aegis"

// configs returns the client-shaped example files in testdata.
func configs(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("testdata/*.json")
	if err != nil || len(files) < 5 {
		t.Fatalf("testdata/*.json = %v, %v; want the five client examples", files, err)
	}
	return files
}

// exampleClient is the client that reads each example in testdata.
var exampleClient = map[string]string{
	"claude.json": ClaudeCode, "claude_desktop_config.json": ClaudeDesktop, "cursor_mcp.json": Cursor,
	"dot_mcp.json": ClaudeCode, "vscode_mcp.json": VSCode,
}

// golden compares got with testdata/golden/name, or writes it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs from the golden file:\ngot:\n%s\nwant:\n%s", name, got, want)
	}
}

// TestWrapGolden wraps every example file and holds the output and the
// diff to golden files; unwrapping the output gives back the original
// bytes, and wrapping it again changes nothing.
func TestWrapGolden(t *testing.T) {
	for _, file := range configs(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			w, err := Wrap(src, Options{Client: exampleClient[filepath.Base(file)], Aegis: testAegis})
			if err != nil {
				t.Fatalf("Wrap: %v", err)
			}
			if !w.Changed() {
				t.Fatal("Wrap changed nothing; every example has a stdio server")
			}
			base := filepath.Base(file)
			golden(t, base+".wrapped", w.Out)
			golden(t, base+".diff", []byte(w.Diff(base, base+" (wrapped)")))

			again, err := Wrap(w.Out, Options{Client: exampleClient[filepath.Base(file)], Aegis: testAegis})
			if err != nil {
				t.Fatalf("Wrap of the wrapped file: %v", err)
			}
			if again.Changed() || string(again.Out) != string(w.Out) {
				t.Errorf("Wrap of the wrapped file changed it:\n%s", again.Diff("a", "b"))
			}
			u, err := Unwrap(w.Out, Options{})
			if err != nil {
				t.Fatalf("Unwrap: %v", err)
			}
			if string(u.Out) != string(src) {
				t.Errorf("Unwrap(Wrap(src)) differs from src:\n%s", u.Out)
			}
			u2, err := Unwrap(src, Options{})
			if err != nil || u2.Changed() {
				t.Errorf("Unwrap of the original = changed %v, %v; want nothing to unwrap", u2 != nil && u2.Changed(), err)
			}
		})
	}
}

// TestWrapSemantics reads the strict-JSON examples with encoding/json
// before and after Wrap: every stdio entry runs aegis wrap --name NAME --
// with its own command and arguments, and nothing else differs.
func TestWrapSemantics(t *testing.T) {
	for _, file := range configs(t) {
		if strings.Contains(file, "vscode") { // JSONC: comments, trailing commas
			continue
		}
		t.Run(filepath.Base(file), func(t *testing.T) {
			src := readBytes(t, file)
			w, err := Wrap(src, Options{Client: "c", Aegis: testAegis})
			if err != nil {
				t.Fatal(err)
			}
			var before, after map[string]any
			if err := json.Unmarshal(src, &before); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(w.Out, &after); err != nil {
				t.Fatalf("the wrapped file is not JSON: %v\n%s", err, w.Out)
			}
			wrapped := 0
			for _, e := range w.Entries {
				b, a := lookup(before, e.Path), lookup(after, e.Path)
				if e.Kind != Stdio {
					if !reflect.DeepEqual(a, b) {
						t.Errorf("%v (%v) changed: %v; want %v", e.Path, e.Kind, a, b)
					}
					continue
				}
				wrapped++
				want := map[string]any{}
				for k, v := range b {
					want[k] = v
				}
				args := []any{"wrap", "-name=" + e.Name, "--client=c", b["command"]}
				if old, ok := b["args"].([]any); ok {
					args = append([]any{"wrap", "--name=" + e.Name, "--client=c", b["command"]}, old...)
				}
				want["command"], want["args"] = testAegis, args
				if !reflect.DeepEqual(a, want) {
					t.Errorf("%v wrapped = %v; want %v", e.Path, a, want)
				}
			}
			if wrapped == 0 {
				t.Error("no stdio entry in the example")
			}
			// Outside the entries, nothing changed.
			for _, e := range w.Entries {
				deletePath(before, e.Path)
				deletePath(after, e.Path)
			}
			if !reflect.DeepEqual(before, after) {
				t.Errorf("outside the entries, the file changed:\n%v\nwant\n%v", after, before)
			}
		})
	}
}

func lookup(v map[string]any, path []string) map[string]any {
	for _, k := range path {
		v, _ = v[k].(map[string]any)
	}
	return v
}

func deletePath(v map[string]any, path []string) {
	delete(lookup(v, path[:len(path)-1]), path[len(path)-1])
}

// TestScanKinds holds the classification of every example entry.
func TestScanKinds(t *testing.T) {
	want := map[string]string{
		"claude.json":                "projects./home/me/src/webapp.mcpServers.playwright=stdio projects./home/me/src/webapp.mcpServers.db=stdio mcpServers.memory=stdio mcpServers.sentry=remote",
		"claude_desktop_config.json": "mcpServers.filesystem=stdio mcpServers.everything=stdio mcpServers.sqlite=stdio mcpServers.weather=stdio mcpServers.github=stdio",
		"cursor_mcp.json":            "mcpServers.postgres=stdio mcpServers.linear=remote mcpServers.remote-api=remote mcpServers.local-python=stdio",
		"dot_mcp.json":               "mcpServers.shared-server=stdio mcpServers.api-server=remote mcpServers.tools=stdio",
		"vscode_mcp.json":            "servers.Perplexity=stdio servers.fetch=stdio servers.my-server=stdio servers.github=remote servers.legacy-sse=remote",
	}
	for _, file := range configs(t) {
		src := readBytes(t, file)
		r, err := Scan(src, Options{})
		if err != nil {
			t.Fatalf("Scan(%s): %v", file, err)
		}
		var got []string
		for _, e := range r.Entries {
			got = append(got, strings.Join(e.Path, ".")+"="+e.Kind.String())
		}
		// The map's key order is not the file's: compare as sets.
		g, w := slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(strings.Fields(want[filepath.Base(file)])))
		if !slices.Equal(g, w) {
			t.Errorf("Scan(%s) = %v; want %v", file, g, w)
		}
		if r.Changed() || string(r.Out) != string(src) {
			t.Errorf("Scan(%s) changed the file", file)
		}
	}
}

// TestUnwrapFlags unwraps entries written by hand (Options.All), with
// aegis flags before --: the flags go, the command and its arguments stay
// as written.
func TestUnwrapFlags(t *testing.T) {
	tests := []struct {
		name, in, want, note string
	}{{
		name: "README example",
		in: `{"mcpServers": {"everything": {"command": "aegis", "args": [
  "wrap", "--audit", "/home/me/aegis/everything.jsonl", "--signing-key", "/home/me/.config/aegis/signing.key",
  "--", "npx", "-y", "@modelcontextprotocol/server-everything"]}}}`,
		want: `{"mcpServers": {"everything": {"command": "npx", "args": [
  "-y", "@modelcontextprotocol/server-everything"]}}}`,
	}, {
		name: "policy and name, absolute path",
		in:   `{"servers": {"fs": {"type": "stdio", "command": "/opt/aegis/bin/aegis", "args": ["wrap", "--policy", "p.yaml", "--name", "fs", "--", "node", "--", "x"], "cwd": "/srv"}}}`,
		want: `{"servers": {"fs": {"type": "stdio", "command": "node", "args": ["--", "x"], "cwd": "/srv"}}}`,
	}, {
		name: "command only",
		in:   `{"mcpServers": {"w": {"command": "aegis", "args": ["wrap", "--", "/usr/bin/w"], "env": {"A": "1"}}}}`,
		want: `{"mcpServers": {"w": {"command": "/usr/bin/w", "args": [], "env": {"A": "1"}}}}`,
	}, {
		name: "escapes kept",
		in:   `{"mcpServers": {"w": {"command": "aegis", "args": ["wrap", "--", "C:\\bin\\w\u00e9.exe", "\"q\""]}}}`,
		want: `{"mcpServers": {"w": {"command": "C:\\bin\\w\u00e9.exe", "args": ["\"q\""]}}}`,
	}, {
		name: "no command after --",
		in:   `{"mcpServers": {"w": {"command": "aegis", "args": ["wrap", "--audit", "a"]}}}`,
		want: `{"mcpServers": {"w": {"command": "aegis", "args": ["wrap", "--audit", "a"]}}}`,
		note: "runs aegis wrap without a command; left as it is",
	}, {
		name: "no value",
		in:   `{"mcpServers": {"w": {"command": "aegis", "args": ["wrap", "--name", "w", "--audit"]}}}`,
		want: `{"mcpServers": {"w": {"command": "aegis", "args": ["wrap", "--name", "w", "--audit"]}}}`,
		note: "runs aegis wrap with no value for --audit; left as it is",
	}, {
		name: "bad flag",
		in:   `{"mcpServers": {"w": {"command": "aegis", "args": ["wrap", "---x", "srv"]}}}`,
		want: `{"mcpServers": {"w": {"command": "aegis", "args": ["wrap", "---x", "srv"]}}}`,
		note: `runs aegis wrap with a bad flag "---x"; left as it is`,
	}, {
		name: "without --",
		in:   `{"mcpServers": {"w": {"command": "aegis", "args": ["wrap", "--name", "w", "-policy=p.yaml", "npx", "-y", "pkg", "--", "z"]}}}`,
		want: `{"mcpServers": {"w": {"command": "npx", "args": ["-y", "pkg", "--", "z"]}}}`,
	}, {
		name: "boolean flags take no value",
		in:   `{"mcpServers": {"w": {"command": "aegis", "args": ["wrap", "--confine", "--clean-env", "node", "--", "x"]}}}`,
		want: `{"mcpServers": {"w": {"command": "node", "args": ["--", "x"]}}}`,
	}, {
		name: "-- after the command is the child's",
		in:   `{"mcpServers": {"w": {"command": "aegis", "args": ["wrap", "--", "node", "--", "x"]}}}`,
		want: `{"mcpServers": {"w": {"command": "node", "args": ["--", "x"]}}}`,
	}, {
		name: "aegis but not wrap",
		in:   `{"mcpServers": {"w": {"command": "aegis", "args": ["log", "--", "x"]}}}`,
		want: `{"mcpServers": {"w": {"command": "aegis", "args": ["log", "--", "x"]}}}`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			isBool := func(name string) bool { return name == "confine" || name == "clean-env" }
			r, err := Unwrap([]byte(tt.in), Options{BoolFlag: isBool, All: true})
			if err != nil {
				t.Fatalf("Unwrap: %v", err)
			}
			if string(r.Out) != tt.want {
				t.Errorf("Unwrap(%s) =\n%s\nwant\n%s", tt.in, r.Out, tt.want)
			}
			if got := r.Entries[0].Note; got != tt.note {
				t.Errorf("note = %q; want %q", got, tt.note)
			}
		})
	}
}

// TestWrapIdempotentOtherAegis: an entry wrapped with another aegis path
// is left alone by Wrap, and unwrapped by Unwrap with that path.
func TestWrapIdempotentOtherAegis(t *testing.T) {
	in := `{"mcpServers": {"a": {"command": "/home/me/go/bin/aegis-dev", "args": ["wrap", "--name", "a", "--", "srv"]}, "b": {"command": "srv"}}}`
	r, err := Wrap([]byte(in), Options{Client: "c", Aegis: "/home/me/go/bin/aegis-dev"})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"mcpServers": {"a": {"command": "/home/me/go/bin/aegis-dev", "args": ["wrap", "--name", "a", "--", "srv"]}, "b": {"args": ["wrap", "-name=b", "--client=c", "srv"], "command": "/home/me/go/bin/aegis-dev"}}}`
	if string(r.Out) != want {
		t.Errorf("Wrap =\n%s\nwant\n%s", r.Out, want)
	}
	if r.Entries[0].Kind != Wrapped || r.Entries[0].Changed || r.Entries[0].Note != "already runs through aegis" {
		t.Errorf("entry a = %+v; want wrapped, unchanged, noted", r.Entries[0])
	}
	// Without the path, aegis-dev is not recognised: nothing to unwrap.
	if u, err := Unwrap(r.Out, Options{}); err != nil || u.Changed() {
		t.Errorf("Unwrap without Aegis = %v; want %s unchanged", err, r.Out)
	}
	u, err := Unwrap(r.Out, Options{Aegis: "/home/me/go/bin/aegis-dev"})
	if err != nil {
		t.Fatal(err)
	}
	// a was written by hand: only b, which Wrap marked, is unwrapped.
	if want := `{"mcpServers": {"a": {"command": "/home/me/go/bin/aegis-dev", "args": ["wrap", "--name", "a", "--", "srv"]}, "b": {"command": "srv"}}}`; string(u.Out) != want {
		t.Errorf("Unwrap =\n%s\nwant\n%s", u.Out, want)
	}
}

// TestWrapName: Options.Name decides the --name written.
func TestWrapName(t *testing.T) {
	in := `{"mcpServers": {"Brave Search": {"command": "npx", "args": ["-y", "brave"]}}}`
	r, err := Wrap([]byte(in), Options{Client: "c", Aegis: "/bin/aegis", Name: func(k string) string { return strings.ReplaceAll(k, " ", "-") }})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"mcpServers": {"Brave Search": {"command": "/bin/aegis", "args": ["wrap", "--name=Brave-Search", "--client=c", "npx", "-y", "brave"]}}}`
	if string(r.Out) != want {
		t.Errorf("Wrap =\n%s\nwant\n%s", r.Out, want)
	}
}

// TestRefusals: a file the rewrite cannot read unambiguously is refused
// whole, with the reason.
func TestRefusals(t *testing.T) {
	tests := []struct {
		name, in string
		want     error
		msg      string
	}{
		{"only a comment", `// servers go here`, ErrSyntax, "unexpected end of file"},
		{"truncated", `{"mcpServers": {"a": {"command": "x"`, ErrSyntax, "line 1"},
		{"unterminated comment", `{"servers": {}} /* end`, ErrSyntax, "unterminated /* comment"},
		{"trailing garbage", `{"mcpServers": {}} x`, ErrSyntax, "line 1, column 20: invalid character 'x' after top-level value"},
		{"two values", `{} {}`, ErrSyntax, "after top-level value"},
		{"single quotes", `{'mcpServers': {}}`, ErrSyntax, `invalid character '\'' at start of value`},
		{"bad escape", `{"mcpServers": {"a": {"command": "\q"}}}`, ErrSyntax, "bad string"},
		{"control byte in string", "{\"mcpServers\": {\"a\": {\"command\": \"a\tb\"}}}", ErrSyntax, "bad string"},
		{"NaN", `{"x": NaN}`, ErrSyntax, `"NaN" is not a JSON value`},
		{"bad literal", `{"x": tru}`, ErrSyntax, "not a JSON value"},
		{"missing comma", "{\n\"a\": 1\n\"b\": 2}", ErrSyntax, `line 3, column 1: invalid character '"' after object value (expecting ',' or '}')`},
		{"deep", strings.Repeat("[", maxDepth+2) + strings.Repeat("]", maxDepth+2), ErrSyntax, "nested more than"},
		{"array at top", `[{"mcpServers": {}}]`, ErrShape, "top level is not an object"},
		{"mcpServers array", `{"mcpServers": []}`, ErrShape, "mcpServers is not an object"},
		{"servers string", `{"servers": "x"}`, ErrShape, "servers is not an object"},
		{"projects entry", `{"projects": {"/p": 1}}`, ErrShape, `projects./p is not an object`},
		{"project mcpServers", `{"projects": {"/p": {"mcpServers": null}}}`, ErrShape, `projects./p.mcpServers is not an object`},
		{"entry not object", `{"mcpServers": {"a": "npx"}}`, ErrShape, "mcpServers.a is not an object"},
		{"command number", `{"mcpServers": {"a": {"command": 1}}}`, ErrShape, "mcpServers.a.command is not a string"},
		{"type bool", `{"mcpServers": {"a": {"command": "x", "type": true}}}`, ErrShape, "mcpServers.a.type is not a string"},
		{"args string", `{"mcpServers": {"a": {"command": "x", "args": "-y"}}}`, ErrShape, "mcpServers.a.args is not an array"},
		{"args number", `{"mcpServers": {"a": {"command": "x", "args": ["a", 1]}}}`, ErrShape, "mcpServers.a.args[1] is not a string"},
		{"duplicate command", `{"mcpServers": {"a": {"command": "x", "command": "y"}}}`, ErrShape, `mcpServers.a has the key "command" twice, and JSON readers differ`},
		{"duplicate escaped", `{"mcpServers": {"a": {"command": "x", "comm\u0061nd": "y"}}}`, ErrShape, `mcpServers.a has the key "command" twice`},
		{"duplicate entry", `{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}`, ErrShape, `mcpServers has the key "a" twice`},
		{"duplicate project", `{"projects": {"/p": {}, "/p": {"mcpServers": {"a": {"command": "y"}}}}}`, ErrShape, `projects has the key "/p" twice`},
		{"duplicate project map", `{"projects": {"/p": {"mcpServers": {}, "mcpServers": {"a": {"command": "y"}}}}}`, ErrShape, `projects./p has the key "mcpServers" twice`},
		{"duplicate map", `{"mcpServers": {}, "mcpServers": {"a": {"command": "y"}}}`, ErrShape, `the top level has the key "mcpServers" twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, f := range []func([]byte, Options) (*Result, error){Wrap, Unwrap, Scan} {
				r, err := f([]byte(tt.in), Options{Client: "c"})
				if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.msg) {
					t.Fatalf("Wrap(%.40q) = %v; want %v saying %q", tt.in, err, tt.want, tt.msg)
				}
				if r != nil {
					t.Errorf("a refusal returned a result")
				}
			}
		})
	}
}

// TestWrapDashCommand: a command that begins with '-' would read as a
// flag of wrap's, so it alone gets a "--" before it.
func TestWrapDashCommand(t *testing.T) {
	r, err := Wrap([]byte(`{"mcpServers": {"d": {"command": "-odd", "args": ["x"]}}}`), Options{Aegis: "/bin/aegis", Client: "c"})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"mcpServers": {"d": {"command": "/bin/aegis", "args": ["wrap", "--name=d", "--client=c", "--", "-odd", "x"]}}}`
	if string(r.Out) != want {
		t.Errorf("Wrap =\n%s\nwant\n%s", r.Out, want)
	}
}

// TestJSONC: comments and trailing commas everywhere JSONC allows them are
// read, and kept byte for byte.
func TestJSONC(t *testing.T) {
	in := "\uFEFF// top\n{ /* a */ \"servers\" /* b */ : // c\n { \"x\" : { \"command\" /* d */ : \"srv\" , \"args\" : [ /* e */ \"-v\" , ] , } , } , }\n// end"
	r, err := Wrap([]byte(in), Options{Client: "c", Aegis: "/bin/aegis"})
	if err != nil {
		t.Fatal(err)
	}
	want := "\uFEFF// top\n{ /* a */ \"servers\" /* b */ : // c\n { \"x\" : { \"command\" /* d */ : \"/bin/aegis\" , \"args\" : [ /* e */ \"wrap\", \"--name=x\", \"--client=c\", \"srv\", \"-v\" , ] , } , } , }\n// end"
	if string(r.Out) != want {
		t.Errorf("Wrap =\n%s\nwant\n%s", r.Out, want)
	}
	u, err := Unwrap(r.Out, Options{})
	if err != nil || string(u.Out) != in {
		t.Errorf("Unwrap = %s, %v; want the original", u.Out, err)
	}
}

// TestDiff: hunks merge when their context touches, a file without a
// final line break says so, and line numbers count from one.
func TestDiff(t *testing.T) {
	var lines []string
	for i := range 30 {
		lines = append(lines, `"k`+string(rune('a'+i%26))+string(rune('a'+i/26))+`": 0,`)
	}
	in := "{\n\"mcpServers\": {\"x\": {\"command\": \"c\"}},\n" + strings.Join(lines, "\n") + "\n\"servers\": {\"y\": {\"command\": \"d\"}}}"
	r, err := Wrap([]byte(in), Options{Client: "c", Aegis: "/a"})
	if err != nil {
		t.Fatal(err)
	}
	want := `--- old
+++ new
@@ -1,5 +1,5 @@
 {
-"mcpServers": {"x": {"command": "c"}},
+"mcpServers": {"x": {"args": ["wrap", "-name=x", "--client=c", "c"], "command": "/a"}},
 "kaa": 0,
 "kba": 0,
 "kca": 0,
@@ -30,4 +30,4 @@
 "kbb": 0,
 "kcb": 0,
 "kdb": 0,
-"servers": {"y": {"command": "d"}}}
\ No newline at end of file
+"servers": {"y": {"args": ["wrap", "-name=y", "--client=c", "d"], "command": "/a"}}}
\ No newline at end of file
`
	if got := r.Diff("old", "new"); got != want {
		t.Errorf("Diff =\n%s\nwant\n%s", got, want)
	}
	if got := (&Result{Src: []byte("x")}).Diff("a", "b"); got != "" {
		t.Errorf("Diff of no change = %q; want empty", got)
	}
}

// TestDiffApplies applies each example's diff, wrap and unwrap, as patch
// would, and gets the rewritten file.
func TestDiffApplies(t *testing.T) {
	for _, file := range configs(t) {
		src := readBytes(t, file)
		w, err := Wrap(src, Options{Client: "c", Aegis: testAegis})
		if err != nil {
			t.Fatal(err)
		}
		u, err := Unwrap(w.Out, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range []*Result{w, u} {
			if got := patch(t, r.Src, r.Diff("a", "b")); got != string(r.Out) {
				t.Errorf("%s: the diff applied gives\n%s\nwant\n%s\ndiff:\n%s", file, got, r.Out, r.Diff("a", "b"))
			}
		}
	}
}

// patch applies a unified diff to src, checking every context and removed
// line against src.
func patch(t *testing.T, src []byte, diff string) string {
	t.Helper()
	old := strings.SplitAfter(string(src), "\n")
	if old[len(old)-1] == "" {
		old = old[:len(old)-1]
	}
	lines := strings.SplitAfter(diff, "\n")
	var out []string
	at := 0
	for i := 2; i < len(lines) && lines[i] != ""; i++ {
		l := lines[i]
		if strings.HasPrefix(l, "@@") {
			var a, n int
			if _, err := fmt.Sscanf(l, "@@ -%d", &a); err != nil {
				t.Fatalf("hunk header %q: %v", l, err)
			}
			if !strings.Contains(strings.Fields(l)[1], ",") {
				n = 1
			} else {
				fmt.Sscanf(strings.Fields(l)[1], "-%d,%d", &a, &n)
			}
			if n > 0 {
				a--
			}
			out = append(out, old[at:a]...)
			at = a
			continue
		}
		if strings.HasPrefix(l, `\ No newline`) {
			out[len(out)-1] = strings.TrimSuffix(out[len(out)-1], "\n")
			continue
		}
		switch l[0] {
		case ' ', '-':
			if at >= len(old) || strings.TrimSuffix(old[at], "\n") != strings.TrimSuffix(l[1:], "\n") {
				t.Fatalf("diff line %q does not match line %d of the source", l, at+1)
			}
			if l[0] == ' ' {
				out = append(out, old[at])
			}
			at++
		case '+':
			out = append(out, l[1:])
		}
	}
	return strings.Join(append(out, old[at:]...), "")
}

// TestWrapEmpty: an empty file has no servers, and is left alone.
func TestWrapEmpty(t *testing.T) {
	for _, in := range []string{"", " \n"} {
		r, err := Wrap([]byte(in), Options{Client: "c"})
		if err != nil || r.Changed() || len(r.Entries) != 0 || string(r.Out) != in {
			t.Errorf("Wrap(%q) = %+v, %v; want no entries, unchanged", in, r, err)
		}
	}
}

// TestEntryKinds: an entry is read as every client reads it, or its
// file is refused: a "command" beside anything that could make a client
// start something else (a url of any spelling, a type or transport
// other than exactly "stdio") is read differently by different clients.
func TestEntryKinds(t *testing.T) {
	tests := []struct {
		name, entry string
		want        string // the kind, or the refusal's words
	}{
		{"command", `{"command": "s"}`, "stdio"},
		{"type stdio", `{"type": "stdio", "command": "s"}`, "stdio"},
		{"transport stdio", `{"transport": "stdio", "command": "s"}`, "stdio"},
		{"type and transport stdio", `{"type": "stdio", "transport": "stdio", "command": "s"}`, "stdio"},
		{"url", `{"url": "http://h/mcp"}`, "remote"},
		{"type http and url", `{"type": "http", "url": "http://h/mcp"}`, "remote"},
		{"httpUrl", `{"httpUrl": "http://h/mcp"}`, "remote"},
		{"serverUrl", `{"serverUrl": "http://h/sse"}`, "remote"},
		{"type sse alone", `{"type": "sse"}`, "remote"},
		{"neither", `{"disabled": true}`, "other"},
		{"type stdio alone", `{"type": "stdio"}`, "other"},
		{"stdio command and url", `{"type": "stdio", "command": "s", "url": "http://h/mcp"}`, `has a "command" and a "url"`},
		{"command and url", `{"command": "s", "url": "http://h/mcp"}`, `has a "command" and a "url"`},
		{"command and httpUrl", `{"command": "s", "httpUrl": "http://h/mcp"}`, `has a "command" and a "httpUrl"`},
		{"command and serverUrl", `{"command": "s", "serverUrl": "http://h/sse"}`, `a "serverUrl"`},
		{"command and empty url", `{"command": "s", "url": ""}`, `a "url"`},
		{"command and null url", `{"command": "s", "url": null}`, `a "url"`},
		{"http with command", `{"type": "http", "command": "s"}`, `has a "command" and "type": "http"`},
		{"type in capitals", `{"type": "STDIO", "command": "s"}`, `"type": "STDIO"`},
		{"type with a space", `{"type": "stdio ", "command": "s"}`, `"type": "stdio "`},
		{"unknown type", `{"type": "local", "command": "s"}`, `"type": "local"`},
		{"empty type", `{"type": "", "command": "s"}`, `"type": ""`},
		{"transport sse", `{"transport": "sse", "command": "s"}`, `"transport": "sse"`},
		{"type stdio, transport http", `{"type": "stdio", "transport": "http", "command": "s"}`, `"transport": "http"`},
		{"transport number", `{"transport": 1, "command": "s"}`, `transport is not a string`},
		{"wrapped with a url", `{"command": "aegis", "args": ["wrap", "--name=x", "s"], "url": "http://h"}`, `a "url"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := `{"mcpServers": {"x": ` + tt.entry + `}}`
			for _, f := range []func([]byte, Options) (*Result, error){Scan, Wrap, Unwrap} {
				r, err := f([]byte(in), Options{Aegis: "/bin/aegis", Client: "c"})
				got := ""
				if err != nil {
					got = err.Error()
					if !errors.Is(err, ErrShape) || r != nil {
						t.Errorf("Wrap(%s) = %v, %v; want ErrShape and no result", in, r, err)
					}
				} else {
					got = r.Entries[0].Kind.String()
					if got != "stdio" && r.Changed() {
						t.Errorf("Wrap(%s) rewrote a %s entry:\n%s", in, got, r.Out)
					}
				}
				if !strings.Contains(got, tt.want) {
					t.Errorf("Wrap(%s) = %s; want %s", in, got, tt.want)
				}
			}
		})
	}
}

// TestUnwrapUndoesWrap: Unwrap gives back, byte for byte, the file Wrap
// was given, whatever the layout of the entries it rewrote, and leaves
// the wraps a user wrote by hand (which Wrap skipped) as they are.
func TestUnwrapUndoesWrap(t *testing.T) {
	tests := []struct{ name, in string }{
		{"no args", `{"mcpServers": {"a": {"command": "s"}}}`},
		{"no args, command first on its line", "{\"mcpServers\": {\"a\": {\n  \"command\": \"s\",\n  \"env\": {}\n}}}"},
		{"empty args before command", `{"mcpServers": {"a": {"args": [], "command": "s"}}}`},
		{"empty args after command", `{"mcpServers": {"a": {"command": "s", "args": []}}}`},
		{"empty args with a space", `{"mcpServers": {"a": {"args": [ ], "command": "s"}}}`},
		{"empty args with a comment", `{"servers": {"a": {"args": [ /* none yet */ ], "command": "s"}}}`},
		{"empty args on lines", "{\"mcpServers\": {\"a\": {\"args\": [\n],\n\"command\": \"s\"}}}"},
		{"one arg", `{"mcpServers": {"a": {"command": "s", "args": ["-v"]}}}`},
		{"dash command", `{"mcpServers": {"a": {"command": "-s", "args": ["-v"]}}}`},
		{"one a line", "{\"mcpServers\": {\"a\": {\"command\": \"s\", \"args\": [\n    \"-v\",\n    \"x\"\n]}}}"},
		{"comment before the first arg", `{"servers": {"a": {"command": "s", "args": [ // first
"-v"]}}}`},
		{"CRLF, one arg a line", "{\r\n  \"mcpServers\": {\r\n    \"a\": {\r\n      \"command\": \"s\",\r\n      \"args\": [\r\n        \"-v\"\r\n      ]\r\n    }\r\n  }\r\n}\r\n"},
		{"CRLF, two args a line", "{\r\n  \"mcpServers\": {\r\n    \"a\": {\r\n      \"command\": \"s\",\r\n      \"args\": [\r\n        \"-v\",\r\n        \"x\"\r\n      ]\r\n    }\r\n  }\r\n}\r\n"},
		{"CRLF, no args", "{\r\n  \"mcpServers\": {\r\n    \"a\": {\r\n      \"command\": \"s\"\r\n    }\r\n  }\r\n}\r\n"},
		{"CRLF, empty args", "{\r\n  \"mcpServers\": {\r\n    \"a\": {\r\n      \"command\": \"s\",\r\n      \"args\": [\r\n      ]\r\n    }\r\n  }\r\n}\r\n"},
		{"hand-written wrap beside", `{"mcpServers": {"a": {"command": "s"}, "b": {"command": "aegis", "args": ["wrap", "--policy", "p.yaml", "--confine", "--", "t"]}}}`},
		{"hand-written as the README", `{"mcpServers": {"a": {"command": "s"}, "b": {"command": "aegis", "args": ["wrap", "--name", "b", "t"]}}}`},
		{"hand-written, no args after", `{"mcpServers": {"a": {"args": [], "command": "s"}, "b": {"args": ["wrap", "t"], "command": "aegis"}}}`},
		{"hand-written with --name= as one argument", `{"mcpServers": {"a": {"command": "s"}, "memory": {"command": "aegis", "args": ["wrap", "--name=memory", "npx", "-y", "@modelcontextprotocol/server-memory"]}}}`},
		{"hand-written with -name=, no args after", `{"mcpServers": {"a": {"command": "s"}, "b": {"args": ["wrap", "-name=b", "t"], "command": "aegis"}}}`},
		{"config wrap's, with a --policy added since", `{"mcpServers": {"a": {"command": "s"}, "b": {"command": "aegis", "args": ["wrap", "--name=b", "--client=c", "--policy", "p.yaml", "t"]}}}`},
		{"a Windows cmd /c entry beside", `{"mcpServers": {"a": {"command": "s"}, "w": {"command": "cmd", "args": ["/c", "npx", "-y", "pkg"]}}}`},
		{"comments and odd white space", "{\t\"mcpServers\" :{ // servers\n\"a\":{\"args\" :[ \"-v\" ,\n\t\t\"x\" /* keep */ ] ,\"command\":\"s\" },\n\"b\" : { \"command\"  :  \"t\"  } , } }\n"},
	}
	isBool := func(name string) bool { return name == "confine" }
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := Wrap([]byte(tt.in), Options{Client: "c", Aegis: "/bin/aegis", BoolFlag: isBool})
			if err != nil || !w.Changed() {
				t.Fatalf("Wrap(%q) = changed %v, %v; want a change", tt.in, w != nil && w.Changed(), err)
			}
			if crlf := strings.Count(tt.in, "\r\n"); crlf > 0 && strings.Count(string(w.Out), "\r\n") != strings.Count(string(w.Out), "\n") {
				t.Errorf("Wrap(%q) = %q; want every line ended by CRLF, as in the file", tt.in, w.Out)
			}
			u, err := Unwrap(w.Out, Options{Aegis: "/bin/aegis", BoolFlag: isBool})
			if err != nil {
				t.Fatal(err)
			}
			if string(u.Out) != tt.in {
				t.Errorf("Unwrap(Wrap(%q)) = %q; want the original", tt.in, u.Out)
			}
		})
	}
}

// TestUnwrapKeepsComments: a comment among the arguments Unwrap would
// remove (written there after Wrap) keeps the entry as it is, noted.
func TestUnwrapKeepsComments(t *testing.T) {
	tests := []struct{ name, in string }{
		{"between wrap's arguments", `{"servers": {"a": {"command": "/bin/aegis", "args": ["wrap", /* audited */ "--name=a", "--client=c", "s", "-v"]}}}`},
		{"before the command", `{"servers": {"a": {"command": "/bin/aegis", "args": ["wrap", "--name=a", "--client=c", // the server
  "s", "-v"]}}}`},
		{"after the command, before its arguments", `{"servers": {"a": {"command": "/bin/aegis", "args": ["wrap", "--name=a", "--client=c", "s" /* its flags: */, "-v"]}}}`},
		{"before the first argument kept", `{"servers": {"a": {"command": "/bin/aegis", "args": ["wrap", "--name=a", "--client=c", "s", /* flags */ "-v"]}}}`},
		{"in args Wrap added", `{"servers": {"a": {"args": [/* aegis */ "wrap", "-name=a", "--client=c", "s"], "command": "/bin/aegis"}}}`},
		{"at the end of args Wrap added", `{"servers": {"a": {"args": ["wrap", "-name=a", "--client=c", "s" // end
], "command": "/bin/aegis"}}}`},
		{"between arguments, no args before", `{"servers": {"a": {"command": "/bin/aegis", "args": ["wrap", "--name=a", "--client=c", /* x */ "s"]}}}`},
		{"hand-written, --all", `{"servers": {"a": {"command": "aegis", "args": ["wrap", "--policy", /* strict */ "p.yaml", "s"]}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := Unwrap([]byte(tt.in), Options{Aegis: "/bin/aegis", All: true})
			if err != nil {
				t.Fatal(err)
			}
			if u.Changed() || u.Entries[0].Note != "a comment among aegis's arguments; left as it is" {
				t.Errorf("Unwrap(%s) = %s, note %q; want it left, noted", tt.in, u.Out, u.Entries[0].Note)
			}
		})
	}
	// A comment outside what goes stays where it is.
	in := `{"servers": {"a": {"command": /* c */ "/bin/aegis", "args": [ /* first */ "wrap", "--name=a", "--client=c", "s", "-v" /* keep */, "x"]}}}`
	want := `{"servers": {"a": {"command": /* c */ "s", "args": [ /* first */ "-v" /* keep */, "x"]}}}`
	if u, err := Unwrap([]byte(in), Options{Aegis: "/bin/aegis"}); err != nil || string(u.Out) != want {
		t.Errorf("Unwrap(%s) = %s, %v; want %s", in, u.Out, err, want)
	}
}

// TestUnwrapHandWritten: a wrap not exactly as Wrap writes it (by hand,
// or with a flag added since) is left with a note, and unwrapped with
// Options.All.
func TestUnwrapHandWritten(t *testing.T) {
	tests := []struct{ name, in, all string }{
		{"as the README",
			`{"mcpServers": {"a": {"command": "aegis", "args": ["wrap", "--name", "a", "--policy", "p.yaml", "s", "-v"]}}}`,
			`{"mcpServers": {"a": {"command": "s", "args": ["-v"]}}}`},
		{"--name= without --client=",
			`{"mcpServers": {"a": {"command": "aegis", "args": ["wrap", "--name=a", "s", "-v"]}}}`,
			`{"mcpServers": {"a": {"command": "s", "args": ["-v"]}}}`},
		{"-name= without --client=",
			`{"mcpServers": {"a": {"args": ["wrap", "-name=a", "s"], "command": "aegis"}}}`,
			`{"mcpServers": {"a": {"args": [], "command": "s"}}}`},
		{"a flag added after the mark",
			`{"mcpServers": {"a": {"command": "aegis", "args": ["wrap", "--name=a", "--client=c", "--policy", "p.yaml", "s", "-v"]}}}`,
			`{"mcpServers": {"a": {"command": "s", "args": ["-v"]}}}`},
		{"a flag added before the mark",
			`{"mcpServers": {"a": {"command": "aegis", "args": ["wrap", "--confine", "--name=a", "--client=c", "s", "-v"]}}}`,
			`{"mcpServers": {"a": {"command": "s", "args": ["-v"]}}}`},
		{"-- before a command that is no flag",
			`{"mcpServers": {"a": {"command": "aegis", "args": ["wrap", "--name=a", "--client=c", "--", "s"]}}}`,
			`{"mcpServers": {"a": {"command": "s", "args": []}}}`},
	}
	isBool := func(name string) bool { return name == "confine" }
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := Unwrap([]byte(tt.in), Options{BoolFlag: isBool})
			if err != nil || u.Changed() || !strings.HasPrefix(u.Entries[0].Note, "not as config wrap writes it") {
				t.Errorf("Unwrap(%s) = %s, note %q, %v; want it left, noted", tt.in, u.Out, u.Entries[0].Note, err)
			}
			u, err = Unwrap([]byte(tt.in), Options{BoolFlag: isBool, All: true})
			if err != nil || string(u.Out) != tt.all {
				t.Errorf("Unwrap(%s, All) = %s, %v; want %s", tt.in, u.Out, err, tt.all)
			}
		})
	}
}

// TestWrapWindowsShell: an entry that runs its server through cmd /c is
// written for Windows, where aegis does not run: Wrap leaves it, and
// says why.
func TestWrapWindowsShell(t *testing.T) {
	tests := []struct {
		name, entry string
		note        string
	}{
		{"cmd /c", `{"command": "cmd", "args": ["/c", "npx", "-y", "pkg"]}`, "runs cmd /c, Windows's shell"},
		{"cmd.exe /C", `{"command": "cmd.exe", "args": ["/C", "npx"]}`, "runs cmd /C, Windows's shell"},
		{"full path, /k", `{"command": "C:\\Windows\\System32\\cmd.exe", "args": ["/k", "npx"]}`, "runs cmd /k"},
		{"cmd without /c", `{"command": "cmd", "args": ["serve"]}`, ""},
		{"a Windows path as an argument", `{"command": "uvx", "args": ["mcp-server-sqlite", "--db-path", "C:\\db"]}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := `{"mcpServers": {"x": ` + tt.entry + `}}`
			r, err := Wrap([]byte(in), Options{Aegis: "/bin/aegis", Client: "c"})
			if err != nil {
				t.Fatal(err)
			}
			if tt.note == "" {
				if !r.Changed() || r.Entries[0].Note != "" {
					t.Errorf("Wrap(%s) = %s, note %q; want it wrapped", in, r.Out, r.Entries[0].Note)
				}
				return
			}
			if r.Changed() || !strings.HasPrefix(r.Entries[0].Note, tt.note) || !strings.HasSuffix(r.Entries[0].Note, "left as it is") {
				t.Errorf("Wrap(%s) = %s, note %q; want it left, noted %q", in, r.Out, r.Entries[0].Note, tt.note)
			}
		})
	}
}

// TestReason: a refusal reads without the package's name.
func TestReason(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"mcpServers": {"a": {"command": "x", "command": "y"}}}`, `mcpServers.a has the key "command" twice, and JSON readers differ on which of the two counts; keep one`},
		{`{"mcpServers": {"a": {"command": "x"`, "not JSON: line 1, column 37: parsing object after value: unexpected end of file"},
		{`{"mcpServers": {"a": {"command": 1}}}`, "mcpServers.a.command is not a string"},
	}
	for _, tt := range tests {
		_, err := Scan([]byte(tt.in), Options{})
		if got := Reason(err); got != tt.want {
			t.Errorf("Reason(Scan(%s)) = %q; want %q", tt.in, got, tt.want)
		}
	}
	if got := Reason(os.ErrNotExist); got != os.ErrNotExist.Error() {
		t.Errorf("Reason(os.ErrNotExist) = %q; want its own text", got)
	}
}

// TestCommentsReadAlike: the reader is tailscale/hujson, with what it
// does not check added; each row is a file that a JSONC reader could
// read otherwise than the rewrite, and what the rewrite does with it.
func TestCommentsReadAlike(t *testing.T) {
	tests := []struct {
		name, in string
		want     string // the kinds of the entries, or the refusal's words
	}{
		{"line comment at the end, no line break", "{\"mcpServers\": {\"a\": {\"command\": \"s\"}}}\n// end", "stdio"},
		{"CRLF ends a line comment", "{\"mcpServers\": {\"a\": {\"command\": \"s\" // c\r\n}}}", "stdio"},
		// VS Code ends a // comment at a carriage return: it reads a
		// "command" beside the url (and runs it), the rewrite a remote.
		{"lone CR in a line comment", "{\"mcpServers\": {\"a\": {\"url\": \"http://h\" // c\r, \"command\": \"evil\"\n}}}", `line 1, column 45: '\r' in a // comment`},
		{"vertical tab in a line comment", "{\"mcpServers\": {\"a\": {\"url\": \"http://h\" // c\v, \"command\": \"evil\"\n}}}", `'\v' in a // comment`},
		{"form feed in a line comment", "{\"mcpServers\": {\"a\": {\"url\": \"http://h\" // c\f, \"command\": \"evil\"\n}}}", `'\f' in a // comment`},
		{"U+2028 in a line comment", "{\"mcpServers\": {\"a\": {\"url\": \"http://h\" // c\u2028, \"command\": \"evil\"\n}}}", `invalid character '\u2028' in line comment`},
		{"lone CR in a block comment", "{\"mcpServers\": {\"a\": {\"command\": \"s\" /* c\r */}}}", "stdio"},
		{"CR inside a string is not a comment's", "{\"mcpServers\": {\"a\": {\"command\": \"s\", \"env\": {\"X\": \"// \\r\"}}}}", "stdio"},
		{"invalid UTF-8 in a comment", "{\"mcpServers\": {\"a\": {\"command\": \"s\"}}} // caf\xe9\n", "invalid UTF-8 in comment"},
		{"invalid UTF-8 in a string", "{\"mcpServers\": {\"a\": {\"command\": \"caf\xe9\"}}}", "stdio"},
		{"deeper than the stack", strings.Repeat("[", 1<<20), "nested more than 512 deep"},
		{"deep inside a string", `{"mcpServers": {"a": {"command": "` + strings.Repeat("[", 1000) + `"}}}`, "stdio"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Scan([]byte(tt.in), Options{})
			got := ""
			if err != nil {
				got = err.Error()
				if !errors.Is(err, ErrSyntax) {
					t.Errorf("Scan = %v; want ErrSyntax", err)
				}
			} else {
				for _, e := range r.Entries {
					got += e.Kind.String()
				}
			}
			if !strings.Contains(got, tt.want) {
				t.Errorf("Scan(%.60q) = %s; want %s", tt.in, got, tt.want)
			}
		})
	}
}

// TestSyntaxErrorQuotesNoValue: a string the reader refuses is not
// repeated in the error (it may be an "env" secret, or megabytes); the
// error says where and what is wrong.
func TestSyntaxErrorQuotesNoValue(t *testing.T) {
	secret := "sk-" + strings.Repeat("x", 1000)
	in := "{\"mcpServers\": {\"a\": {\"command\": \"s\", \"env\": {\"KEY\": \"" + secret + "\tz\"}}}}"
	_, err := Scan([]byte(in), Options{})
	if !errors.Is(err, ErrSyntax) || strings.Contains(err.Error(), "sk-") || !strings.Contains(err.Error(), "line 1, column 1058: bad string: invalid character '\\t' in string literal") {
		t.Errorf("Scan = %v; want ErrSyntax at the tab, without the value", err)
	}
}
