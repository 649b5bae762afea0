package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/aegisrelay/aegis/journal/segment"
)

// proveIn runs aegis prove with args, its cache folder (the index's) in
// cache, and returns its exit code, stdout and stderr.
func proveIn(t *testing.T, cache string, args ...string) (int, []byte, string) {
	t.Helper()
	cmd := exec.Command(aegisBin, append([]string{"prove"}, args...)...)
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+cache)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runBounded(t, cmd, 60e9)
	return cmd.ProcessState.ExitCode(), stdout.Bytes(), stderr.String()
}

// TestProveIndex: on a rotated, compressed log written by wrap with its
// checkpoints, prove inclusion and consistency give the same proofs with
// the index cold (each sealed segment's entry made and written to the
// cache folder), warm, and without a cache folder at all, and prove check
// accepts them; a sealed segment rewritten after its entry was made is
// found (exit 1), as it is without an index.
func TestProveIndex(t *testing.T) {
	f := newFixture(t)
	// wrap writes its sealed segments' entries in a cache folder of its
	// own (TestProveIndexFromWrap), so that "cold" below is cold.
	t.Setenv("XDG_CACHE_HOME", filepath.Join(f.dir, "wrap-cache"))
	cp := filepath.Join(f.dir, "audit.checkpoint")
	f.drive(t, []string{"--durability", "strict", "--audit-max-size", "8KiB", "--compress", "--checkpoint-file", cp, "--checkpoint-every", "50"}, 120, 8)
	_, zst := segmentsIn(t, f.dir)
	if len(zst) < 4 {
		t.Fatalf("%d sealed segments; want rotation", len(zst))
	}
	hist := cp + ".history"
	first := firstCheckpoint(t, hist)
	if a, b := readAudit(first), readAudit(cp); bytes.Equal(a, b) {
		t.Fatalf("the history's first checkpoint is the last; want several (--checkpoint-every):\n%s", a)
	}
	cache := filepath.Join(f.dir, "cache")
	pin := "@" + f.key + ".pub"
	inclusion := []string{"inclusion", "--checkpoint", cp, "--seq", "100", "--key", pin, f.audit}
	consistency := []string{"consistency", "--old", first, "--new", cp, "--key", pin, f.audit}
	for _, args := range [][]string{inclusion, consistency} {
		var want []byte
		for _, run := range []struct{ name, cache string }{
			{"no cache folder", noCache},
			{"cold", cache},
			{"warm", cache},
		} {
			code, out, errOut := proveIn(t, run.cache, args...)
			if code != 0 {
				t.Fatalf("%s: aegis prove %s = exit %d: %s", run.name, args[0], code, errOut)
			}
			if want == nil {
				want = out
			} else if !bytes.Equal(out, want) {
				t.Fatalf("%s: aegis prove %s =\n%s\nwant (no cache folder)\n%s", run.name, args[0], out, want)
			}
		}
		proof := writeProveFile(t, filepath.Join(f.dir, args[0]+".proof"), want)
		check := []string{"check", "--key", pin, "--proof", proof, "--checkpoint", cp}
		if args[0] == "consistency" {
			check = []string{"check", "--key", pin, "--proof", proof, "--old", first, "--new", cp}
		}
		if code, out, errOut := proveIn(t, cache, check...); code != 0 {
			t.Fatalf("aegis prove check (%s) = exit %d: %s%s", args[0], code, out, errOut)
		}
	}
	entries, err := os.ReadDir(filepath.Join(cache, "aegis", "tlog-index"))
	if err != nil || len(entries) < len(zst)-1 {
		t.Fatalf("index holds %d entries (%v); want one per sealed segment, %d", len(entries), err, len(zst))
	}

	// Rewrite the first sealed segment's second record (a byte of its
	// tool name), as someone holding the files could.
	seg := zst[0]
	for _, z := range zst {
		if s, ok := segment.ParseName(z); ok && s.First == 0 {
			seg = z
		}
	}
	raw := readZst(t, seg)
	lines := bytes.SplitAfter(raw, []byte("\n"))
	lines[1] = bytes.Replace(lines[1], []byte(`"kind":"`), []byte(`"kind" :"`), 1)
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(seg, enc.EncodeAll(bytes.Join(lines, nil), nil), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, run := range []struct{ name, cache string }{{"no cache folder", noCache}, {"warm", cache}} {
		code, _, errOut := proveIn(t, run.cache, inclusion...)
		if code != 1 || !strings.Contains(errOut, "rewritten") {
			t.Errorf("%s: aegis prove inclusion of a rewritten log = exit %d, %q; want 1, rewritten", run.name, code, errOut)
		}
	}
}

// firstCheckpoint writes the first checkpoint of a history to a file of
// its own and returns its path.
func firstCheckpoint(t *testing.T, hist string) string {
	t.Helper()
	data, err := os.ReadFile(hist)
	if err != nil {
		t.Fatal(err)
	}
	end := bytes.Index(data, []byte("\n\n"))
	end += bytes.IndexByte(data[end+2:], '\n') + 3
	return writeProveFile(t, hist+".first", data[:end])
}

func readZst(t *testing.T, path string) []byte {
	t.Helper()
	rc, err := segment.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(rc); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
