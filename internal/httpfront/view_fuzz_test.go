package httpfront

import (
	"encoding/json"
	"testing"
)

// FuzzReadView: a body readView finds clear is read alike by the other
// decoders: encoding/json binding keys without case (last wins) and a
// reader of exact keys (last wins, as JSON.parse and Python's json): each
// member a header mirrors has one value for all of them.
func FuzzReadView(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
		`{"method":"tools/call","params":{"name":"a","Name":"b"}}`,
		`{"method":"resources/read","params":{"uri":"file:///a","URI":"x"}}`,
		`{"method":"tasks/get","params":{"taskId":"t","task_id":"u"}}`,
		`{"method":"tools/list","METHOD":"tools/call"}`,
		`{"method":"tools/call","params":{"name":"\u0065cho"},"params":{"name":"rm"}}`,
		`{"method":"x","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"a","io.modelcontextprotocol/protocolversion":"b"}}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		if !json.Valid([]byte(line)) {
			return
		}
		v := readView([]byte(line))
		if v.ambiguous != "" {
			return
		}
		// encoding/json: keys bound without case, the last one winning.
		var folded struct {
			Method any `json:"method"`
			Params *struct {
				Name   any                        `json:"name"`
				URI    any                        `json:"uri"`
				TaskID any                        `json:"taskId"`
				Meta   map[string]json.RawMessage `json:"_meta"`
			} `json:"params"`
		}
		// Exact keys, the last one winning.
		var exact map[string]json.RawMessage
		if json.Unmarshal([]byte(line), &exact) != nil {
			return // not an object: readView had nothing to read
		}
		foldedOK := json.Unmarshal([]byte(line), &folded) == nil
		str := func(raw json.RawMessage) (string, bool) {
			var s string
			if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
				return "", false
			}
			return s, true
		}
		check := func(what string, has bool, got string, exactRaw json.RawMessage, foldedVal any) {
			es, eok := str(exactRaw)
			if has != eok || has && es != got {
				t.Fatalf("%s: readView %q (%v), exact keys %q (%v)", what, got, has, es, eok)
			}
			if foldedOK {
				fs, fok := foldedVal.(string)
				if has != fok || has && fs != got {
					t.Fatalf("%s: readView %q (%v), encoding/json %q (%v)", what, got, has, fs, fok)
				}
			}
		}
		check("method", v.hasMethod, v.method, exact["method"], folded.Method)
		var params map[string]json.RawMessage
		if json.Unmarshal(exact["params"], &params) != nil {
			return
		}
		if folded.Params == nil {
			foldedOK = false
		}
		var fp struct{ Name, URI, TaskID any }
		if foldedOK {
			fp.Name, fp.URI, fp.TaskID = folded.Params.Name, folded.Params.URI, folded.Params.TaskID
		}
		check("params.name", v.hasName, v.name, params["name"], fp.Name)
		check("params.uri", v.hasURI, v.uri, params["uri"], fp.URI)
		check("params.taskId", v.hasTaskID, v.taskID, params["taskId"], fp.TaskID)
		var meta map[string]json.RawMessage
		if json.Unmarshal(params["_meta"], &meta) == nil {
			es, eok := str(meta[revisionKey])
			if v.hasRevision != eok || eok && es != v.revision {
				t.Fatalf("revision: readView %q (%v), exact keys %q (%v)", v.revision, v.hasRevision, es, eok)
			}
		}
	})
}
