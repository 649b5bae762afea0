package pin

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"testing"
)

// FuzzReadMessage: for any tools/list answer, every tool ReadMessage does
// not call ambiguous has a canonical form that is stable (canonicalising
// it again, or after encoding/json re-encodes it, gives the same bytes),
// its digest is the SHA-256 of those bytes, and two tools' digests are
// equal exactly when their canonical bytes are. When it calls nothing
// ambiguous, Go's encoding/json (keys matched without regard to case,
// the last of a key twice) reads the same tool names and next page.
func FuzzReadMessage(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"echo","description":"Echo","inputSchema":{"type":"object","$defs":{"a":{"type":"string"}},"properties":{"x":{"$ref":"#/$defs/a"}}}}]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","description":"x","description":"y"}]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","Description":"y"},{"name":"a"}],"nextCursor":"2"}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","inputSchema":{"maximum":1e400,"minimum":9007199254740993}}]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"\ud800"},{"name":"b","title":"é","annotations":{"readOnlyHint":true}}]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"b","outputSchema":{"type":"object"},"x":1}, {"name":"c","inputSchema":[1.0,1e2,-0]}]}}`,
	} {
		f.Add([]byte(s))
	}
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"Tools":[{"name":"a"}],"nextcursor":"2"}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","Name":"x"}],"tools":[{"name":"b"}]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[]},"result":{"tools":[{"name":"b"}]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		l := ReadMessage(msg)
		agreed := l.Ambiguous == ""
		for _, d := range l.Tools {
			agreed = agreed && d.Ambiguous == ""
		}
		var goRead struct {
			Result struct {
				Tools []struct {
					Name string `json:"name"`
				} `json:"tools"`
				NextCursor any `json:"nextCursor"`
			} `json:"result"`
		}
		if agreed && json.Unmarshal(msg, &goRead) == nil {
			if len(goRead.Result.Tools) != len(l.Tools) || (goRead.Result.NextCursor != nil) != l.NextCursor {
				t.Fatalf("encoding/json reads %d tools, next page %v; ReadMessage %d, %v, nothing ambiguous", len(goRead.Result.Tools), goRead.Result.NextCursor != nil, len(l.Tools), l.NextCursor)
			}
			for i, d := range l.Tools {
				if goRead.Result.Tools[i].Name != d.Name {
					t.Fatalf("tool %d: encoding/json reads %q, ReadMessage %q, nothing ambiguous", i, goRead.Result.Tools[i].Name, d.Name)
				}
			}
		}
		byDigest := map[[32]byte][]byte{}
		for _, d := range l.Tools {
			if d.Ambiguous != "" {
				if d.Canonical != nil {
					t.Fatalf("ambiguous tool %q has a canonical form", d.Name)
				}
				continue
			}
			if sha256.Sum256(d.Canonical) != d.Digest {
				t.Fatalf("digest of %q is not its canonical form's", d.Name)
			}
			again, err := Canonical(d.Canonical)
			if err != nil || !bytes.Equal(again, d.Canonical) {
				t.Fatalf("canonical form %q not stable: %q, %v", d.Canonical, again, err)
			}
			var v any
			if err := json.Unmarshal(d.Canonical, &v); err != nil {
				t.Fatalf("canonical form %q: %v", d.Canonical, err)
			}
			re, _ := json.Marshal(v)
			if c, err := Canonical(re); err != nil || !bytes.Equal(c, d.Canonical) {
				t.Fatalf("re-encoded by encoding/json, %q canonicalises to %q (%v)", d.Canonical, c, err)
			}
			if prev, ok := byDigest[d.Digest]; ok && !bytes.Equal(prev, d.Canonical) {
				t.Fatalf("one digest for %q and %q", prev, d.Canonical)
			}
			byDigest[d.Digest] = d.Canonical
		}
	})
}
