package httpfront

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// This file keeps readView as it read bodies with encoding/json's Decoder
// (three decoders: the top level, params, params._meta), as the reference
// the one-pass reader is held to: FuzzReadViewSame and TestReadViewSame
// require readView to give the view refReadView gives, for every input.

// readView reads the members of line (one JSON object, as the frame
// classifier found) that headers mirror.
func refReadView(line []byte) view {
	var v view
	top, err := refMembers(line, []string{"method", "params"})
	if err != nil {
		v.ambiguous = err.Error()
		return v
	}
	if raw := top["method"]; raw != nil {
		if v.method, v.hasMethod, err = refStr(raw, "method"); err != nil {
			v.ambiguous = err.Error()
			return v
		}
	}
	params := top["params"]
	if params == nil || params[0] != '{' {
		return v
	}
	p, err := refMembers(params, []string{"name", "uri", "taskId", "_meta", "arguments"})
	if err != nil {
		v.ambiguous = "params: " + err.Error()
		return v
	}
	for _, f := range []struct {
		key string
		s   *string
		has *bool
	}{{"name", &v.name, &v.hasName}, {"uri", &v.uri, &v.hasURI}, {"taskId", &v.taskID, &v.hasTaskID}} {
		if raw := p[f.key]; raw != nil {
			if *f.s, *f.has, err = refStr(raw, "params."+f.key); err != nil {
				v.ambiguous = err.Error()
				return v
			}
		}
	}
	v.args = p["arguments"]
	if meta := p["_meta"]; meta != nil && meta[0] == '{' {
		mm, err := refMembers(meta, []string{revisionKey, capsKey})
		if err != nil {
			v.ambiguous = "params._meta: " + err.Error()
			return v
		}
		if raw := mm[revisionKey]; raw != nil {
			if v.revision, v.hasRevision, err = refStr(raw, "params._meta.protocolVersion"); err != nil {
				v.ambiguous = err.Error()
				return v
			}
		}
		v.hasCaps = len(mm[capsKey]) > 0 && mm[capsKey][0] == '{'
	}
	return v
}

// members returns the values of obj's members named by keys, or an error
// naming the first of keys that some decoder binds to more than one
// member, or to a member whose key is not exactly it.
func refMembers(obj []byte, keys []string) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("not an object")
	}
	found := map[string]json.RawMessage{}
	seen := map[string]bool{}
	// Each name is folded once: the keys wanted here, and each key read.
	folded := make([]string, len(keys))
	for i, want := range keys {
		folded[i] = refFold(want)
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k, _ := t.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		fk := refFold(k)
		for i, want := range keys {
			if fk != folded[i] {
				continue
			}
			if k != want || seen[want] || !utf8.ValidString(k) {
				return nil, errors.New(want + ": a duplicate or case-variant key")
			}
			seen[want] = true
			found[want] = raw
		}
	}
	return found, nil
}

// fold is a key as decoders may bind it: a decoder may bind key to the
// member want when refFold(key) == refFold(want), equal under Unicode simple
// case folding, '_' and '-' ignored, or once a C decoder has cut it at
// U+0000 or a decoder has dropped U+FFFD (which invalid UTF-8 decodes
// to).
func refFold(s string) string {
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || r == utf8.RuneError {
			return -1
		}
		// The smallest rune of r's folding orbit: one for every case.
		m := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			m = min(m, f)
		}
		return m
	}, s)
}

// str decodes raw as a string that every decoder reads alike: ok false
// when raw is not a string (null included); an error when its text is
// read differently (invalid UTF-8, which decoders replace, keep or
// refuse; U+0000, where C decoders cut; U+FFFD, which a replacement
// makes).
func refStr(raw json.RawMessage, what string) (string, bool, error) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false, nil
	}
	if !utf8.Valid(raw) {
		return "", false, errors.New(what + ": invalid UTF-8")
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false, errors.New(what + ": " + err.Error())
	}
	if strings.ContainsRune(s, 0) || strings.ContainsRune(s, utf8.RuneError) {
		return "", false, errors.New(what + ": U+0000 or U+FFFD")
	}
	return s, true, nil
}

// sameView reports how a and b differ, or "".
func sameView(a, b view) string {
	switch {
	case a.ambiguous != b.ambiguous:
		return fmt.Sprintf("ambiguous %q, reference %q", a.ambiguous, b.ambiguous)
	case a.method != b.method || a.hasMethod != b.hasMethod:
		return fmt.Sprintf("method %q %v, reference %q %v", a.method, a.hasMethod, b.method, b.hasMethod)
	case a.name != b.name || a.hasName != b.hasName:
		return fmt.Sprintf("name %q %v, reference %q %v", a.name, a.hasName, b.name, b.hasName)
	case a.uri != b.uri || a.hasURI != b.hasURI:
		return fmt.Sprintf("uri %q %v, reference %q %v", a.uri, a.hasURI, b.uri, b.hasURI)
	case a.taskID != b.taskID || a.hasTaskID != b.hasTaskID:
		return fmt.Sprintf("taskId %q %v, reference %q %v", a.taskID, a.hasTaskID, b.taskID, b.hasTaskID)
	case a.revision != b.revision || a.hasRevision != b.hasRevision:
		return fmt.Sprintf("revision %q %v, reference %q %v", a.revision, a.hasRevision, b.revision, b.hasRevision)
	case a.hasCaps != b.hasCaps:
		return fmt.Sprintf("caps %v, reference %v", a.hasCaps, b.hasCaps)
	case (a.args == nil) != (b.args == nil) || !bytes.Equal(a.args, b.args):
		return fmt.Sprintf("arguments %q, reference %q", a.args, b.args)
	}
	return ""
}

// checkSame fails t unless readView reads line as refReadView does: the
// same view, its ambiguity's text included, for every JSON value (the
// front reads no other: its classifier found the body one JSON object);
// and ambiguous for any other line (which refReadView may read when its
// object ends before the fault: a Decoder reads no further).
func checkSame(t *testing.T, line []byte) {
	t.Helper()
	got := readView(line)
	if !json.Valid(line) {
		if got.ambiguous == "" {
			t.Fatalf("readView(%q) reads a line that is not one JSON value: %+v", line, got)
		}
		return
	}
	if d := sameView(got, refReadView(line)); d != "" {
		t.Fatalf("readView(%q): %s", line, d)
	}
}

// viewSeeds are bodies at each of readView's verdicts: every member read
// clear, duplicate and variant keys at each level (spelt with escapes,
// folded runes, '_' and '-', cut at U+0000, with invalid UTF-8 and
// U+FFFD), each verdict's order against the others, text that decoders
// read differently in each string read, values of other types, nesting
// and data around the object.
var viewSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"a":[1,{"b":null}]},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"name":"\u0065cho"}}`,
	`{"method":"resources/read","params":{"uri":"file:///a"}}`,
	`{"method":"tasks/get","params":{"taskId":"t"}}`,
	`{"method":"tools/list","method":"tools/call"}`,
	`{"method":"tools/list","Method":"tools/call"}`,
	`{"method":"tools/list","method":"x","metho\u017f":"y"}`,
	`{"metho\u017f":"y","method":"x"}`,
	`{"method":"tools/call","params":{"name":"a"},"PARAMS":{"name":"b"}}`,
	`{"method":"tools/call","params":{"name":"a","name":"b"}}`,
	`{"method":"tools/call","params":{"name":"a","na_me":"b"}}`,
	`{"method":"tools/call","params":{"name":"a","-n-a-m-e-":"b"}}`,
	`{"method":"x","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/PROTOCOLVERSION":"2025-11-25"}}}`,
	`{"method":"x","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/client_capabilities":[]}}}`,
	`{"method":"tools/list","params":{"name":"a","name\u0000x":"b"}}`,
	`{"method":"tools/list","params":{"\u0000name":"b"}}`,
	"{\"method\":\"tools/list\",\"meth\xffod\":\"tools/call\"}",
	"{\"method\":\"tools/list\",\"meth\xef\xbf\xbdod\":\"tools/call\"}",
	`{"method":"tools/list","meth\ufffdod":"tools/call"}`,
	`{"method":"tools/list","meth\ud800od":"tools/call"}`,
	`{"m\u0065thod":"tools/list"}`,
	`{"\u006d\u0065\u0074\u0068\u006f\u0064":"tools/list","params":{"\u0074askId":"t"}}`,
	`{"method":"tools/call","params":{"name":"a\u0000b"}}`,
	`{"method":"tools/call","params":{"name":"a\ufffdb"}}`,
	`{"method":"resources/read","params":{"uri":"\ud800"}}`,
	`{"method":"resources/read","params":{"uri":"\ud83d\ude00 \ud83d\u0041 \ude00\ud83d"}}`,
	"{\"method\":\"tasks/get\",\"params\":{\"taskId\":\"\xff\"}}",
	"{\"method\":\"caf\xc3\xa9\",\"params\":{\"name\":\"\xe2\x82\xac\\n\\t\\\"\\\\\\/\\b\\f\\r\"}}",
	`{"method":"tools/call","params":{"name":1}}`,
	`{"method":null,"params":{"name":null,"uri":true,"taskId":[],"_meta":{"io.modelcontextprotocol/protocolVersion":7}}}`,
	`{"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":[]}}}`,
	`{"method":"tools/list","params":[{"name":"a","name":"b"}]}`,
	`{"method":"tools/list","params":{"_meta":[{"io.modelcontextprotocol/protocolVersion":1}]}}`,
	`{"method":"tools/list","params":"x","params":{}}`,
	`{"params":{"name":"a","name":"b"},"method":"m","method":"n"}`,
	`{"params":{"name":"a","name":"b"},"method":"\u0000"}`,
	`{"method":"\u0000","params":{"name":"a","name":"b"}}`,
	`{"method":"m","params":{"name":"\u0000","uri":"\ufffd","_meta":{"a":1,"A":2}}}`,
	`{"method":"m","params":{"uri":"\ufffd","name":"\u0000"}}`,
	`{"method":"m","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"\u0000","IO.modelcontextprotocol/protocolVersion":"x"},"name":"n"}}`,
	`{"method":"m","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"\u0000"},"arguments":{"x":1}}}`,
	`{"method":"m","params":{"_meta":{},"_META":{}}}`,
	`{"method":"m","params":{"arguments":null}}`,
	`{"method":"m","params":{"arguments":{"name":"a","name":"b"},"Arguments":{}}}`,
	`{"method":"m","params":{"taſkId":"t","taskId":"u"}}`,
	`{"method":"m","params":{"name":"a","na_m\u0065":"b"}}`,
	`{"method":"m","params":{"\u005fmeta":{"io.modelcontextprotocol/protocol-version\u0000":1}}}`,
	"{\"method\":\"m\",\"params\":{\"uri\":\"u\",\"-u-r-\xff-i\":\"v\"}}",
	`{"method":"m","params":{"tas\u212aId":"t"}}`,
	`{"method":"m","params":{"\u212a":"t","URİ":"x","urı":"y"}}`,
	` {"method" : "m" , "params" : { "name" : "n" , "_meta" : { } } } ` + "\r\n",
	`{}`,
	`{"a":{"b":{"c":[[[[{"method":"x"}]]]]}},"method":"y"}`,
	`{"a":"` + strings.Repeat("_", 100) + `method"}`,
	`{"` + strings.Repeat("-", 100) + `method":"x","method":"y"}`,
	`{"a":1e5,"b":-0.5E-3,"c":0,"d":[true,false,null],"method":"m"}`,
	`[{"method":"m"}]`,
	`"method"`,
	`1`,
	``,
	`{"method":"m"} {"method":"n"}`,
	`{"method":"m"}x`,
	`{"method":"m"`,
	`{"method":"m",`,
	`{"method":"m"]`,
	`{"method":"m" "x":1}`,
	`{"method":"m","params":{"name":"a"`,
	`{"method":"m","params":{"name":"a\x"}}`,
	"{\"method\":\"m\x01\"}",
	`{"method":01}`,
	`{"method":1.}`,
	`{"method":tru}`,
}

// deepSeeds are bodies at encoding/json's nesting limit and one past it,
// in arguments and inside params._meta (not fuzz seeds: the fuzzer's
// time goes to short bodies).
var deepSeeds = []string{
	`{"a":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`,
	`{"a":` + strings.Repeat("[", 9998) + strings.Repeat("]", 9998) + `,"method":"m"}`,
	`{"a":` + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + `,"method":"m"}`,
	`{"params":{"_meta":{"a":` + strings.Repeat(`{"b":`, 9997) + `1` + strings.Repeat("}", 9997) + `}},"method":"m"}`,
	`{"params":{"_meta":{"a":` + strings.Repeat(`{"b":`, 9998) + `1` + strings.Repeat("}", 9998) + `}},"method":"m"}`,
}

// TestReadViewSame: readView reads each seed as refReadView does.
func TestReadViewSame(t *testing.T) {
	for _, s := range append(viewSeeds, deepSeeds...) {
		checkSame(t, []byte(s))
	}
}

// FuzzReadViewSame: readView reads every line as refReadView does
// (checkSame).
func FuzzReadViewSame(f *testing.F) {
	for _, s := range viewSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		checkSame(t, []byte(line))
	})
}

// BenchmarkReadView reads the stateless tools/call of BenchmarkRoundTrip:
// readView ("one-pass") beside refReadView ("decoders"), in one binary.
func BenchmarkReadView(b *testing.B) {
	body := []byte(benchCallModern)
	for _, r := range []struct {
		name string
		read func([]byte) view
	}{{"one-pass", readView}, {"decoders", refReadView}} {
		b.Run(r.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for range b.N {
				if v := r.read(body); v.ambiguous != "" || !v.hasRevision {
					b.Fatalf("view %+v", v)
				}
			}
		})
	}
}
