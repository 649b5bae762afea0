package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestProveIndexFromWrap: a rotating wrap (plain and --compress) writes
// the index entry of each segment it seals into the user's cache folder,
// one per sealed segment and named for the bytes that stay, so that the
// recording user's first aegis prove finds every entry there: the folder
// is the same after prove as before, and the proof is the one made without
// an index and checks.
func TestProveIndexFromWrap(t *testing.T) {
	for _, tt := range []struct {
		name  string
		extra []string
	}{
		{"plain", nil},
		{"compressed", []string{"--compress"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			cache := filepath.Join(f.dir, "cache")
			t.Setenv("XDG_CACHE_HOME", cache) // wrap's, inherited
			cp := filepath.Join(f.dir, "audit.checkpoint")
			f.drive(t, append([]string{"--durability", "strict", "--audit-max-size", "8KiB", "--checkpoint-file", cp}, tt.extra...), 120, 8)
			plain, zst := segmentsIn(t, f.dir)
			sealed := append(plain, zst...)
			if len(sealed) < 4 || (len(zst) > 0) != (tt.extra != nil) {
				t.Fatalf("sealed segments: %d plain, %d compressed; want rotation, compressed %v", len(plain), len(zst), tt.extra != nil)
			}
			var want []string
			for _, p := range sealed {
				data, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				sum := sha256.Sum256(data)
				want = append(want, hex.EncodeToString(sum[:]))
			}
			slices.Sort(want)
			index := filepath.Join(cache, "aegis", "tlog-index")
			before := dirEntries(t, index)
			if names := sortedKeys(before); !slices.Equal(names, want) {
				t.Fatalf("index after wrap holds %d entries %v; want one per sealed segment, %d: %v", len(names), names, len(want), want)
			}

			args := []string{"inclusion", "--checkpoint", cp, "--seq", "100", "--key", "@" + f.key + ".pub", f.audit}
			code, out, errOut := proveIn(t, cache, args...)
			if code != 0 {
				t.Fatalf("aegis prove inclusion = exit %d: %s", code, errOut)
			}
			if after := dirEntries(t, index); !maps.EqualFunc(after, before, bytes.Equal) {
				t.Errorf("index after prove holds %v; want what wrap wrote, %v", sortedKeys(after), sortedKeys(before))
			}
			code, bare, errOut := proveIn(t, noCache, args...)
			if code != 0 || !bytes.Equal(bare, out) {
				t.Fatalf("aegis prove inclusion without a cache folder = exit %d, %s%s; want 0 and the same proof:\n%s", code, bare, errOut, out)
			}
			proof := writeProveFile(t, filepath.Join(f.dir, "inclusion.proof"), out)
			if code, out, errOut := proveIn(t, cache, "check", "--key", "@"+f.key+".pub", "--proof", proof, "--checkpoint", cp); code != 0 {
				t.Fatalf("aegis prove check = exit %d: %s%s", code, out, errOut)
			}
		})
	}
}

// dirEntries returns the contents of the files in dir by name.
func dirEntries(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("index folder: %v", err)
	}
	out := map[string][]byte{}
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = data
	}
	return out
}

func sortedKeys(m map[string][]byte) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
