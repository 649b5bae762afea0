package pin

import (
	"strings"
	"testing"
)

// TestReadMessage: what ReadMessage finds in a tools/list answer, and
// what it calls ambiguous. An answer whose result holds no tools member
// lists nothing to every reader, and is not ambiguous for that; a case
// variant of a member of the result is (Go's decoder takes it, JSON.parse
// does not).
func TestReadMessage(t *testing.T) {
	const clean = `{"name":"a","description":"A"}`
	tests := []struct {
		name      string
		result    string
		ambiguous string
		tools     []string // names; "name!" for an ambiguous tool
		next      bool
		others    []string // with a list ambiguous: other readings' names
	}{
		{"one tool", `{"tools":[` + clean + `]}`, "", []string{"a"}, false, nil},
		{"empty list", `{"tools":[]}`, "", nil, false, nil},
		{"next page", `{"tools":[` + clean + `],"nextCursor":"2"}`, "", []string{"a"}, true, nil},
		{"null cursor", `{"tools":[` + clean + `],"nextCursor":null}`, "", []string{"a"}, false, nil},
		{"no tools member", `{}`, "", nil, false, nil},
		{"another result", `{"content":[{"type":"text","text":"z"}]}`, "", nil, false, nil},
		{"tools null", `{"tools":null}`, "", nil, false, nil},
		{"result null", `null`, "", nil, false, nil},
		{"result a number", `5`, "", nil, false, nil},
		{"tools an object", `{"tools":{"a":` + clean + `}}`, ReasonShape, nil, false, nil},
		{"tools case variant alone", `{"Tools":[` + clean + `]}`, ReasonCaseKey, nil, false, []string{"a"}},
		{"tools and a case variant", `{"tools":[],"TOOLS":[` + clean + `]}`, ReasonCaseKey, nil, false, []string{"a"}},
		{"cursor case variant", `{"tools":[` + clean + `],"nextcursor":"2"}`, ReasonCaseKey, []string{"a!"}, false, nil},
		{"cursor variant, a tool ambiguous itself", `{"tools":[` + clean + `,{"name":"b","Title":"x"}],"NextCursor":"2"}`, ReasonCaseKey, []string{"a!", "b!"}, false, nil},
		{"tools twice", `{"tools":[` + clean + `],"tools":[]}`, ReasonDuplicateKey, []string{"a!"}, false, nil},
		{"tools twice, the first's tool ambiguous itself", `{"tools":[{"name":"a","Name":"x"}],"tools":[{"name":"b"}]}`, ReasonDuplicateKey, []string{"a!"}, false, []string{"b"}},
		{"tools and a case variant, names", `{"tools":[{"name":"a"}],"TOOLS":[{"name":"a"},{"NAME":"c"}]}`, ReasonCaseKey, []string{"a!"}, false, []string{"c"}},
		{"a result member twice", `{"tools":[` + clean + `],"_meta":{},"_meta":{}}`, ReasonDuplicateKey, []string{"a!"}, false, nil},
		{"cursor twice but for case", `{"tools":[` + clean + `,{"name":"b","Title":"x"}],"nextCursor":"2","NEXTCURSOR":null}`, ReasonCaseKey, []string{"a!", "b!"}, true, nil},
		{"result twice", `{"tools":[]},"result":{"tools":[` + clean + `]}`, ReasonDuplicateKey, nil, false, []string{"a"}},
		{"tools case variant alone, names", `{"Tools":[{"name":"b"}]}`, ReasonCaseKey, nil, false, []string{"b"}},
		{"tool without a name", `{"tools":[{"description":"A"},` + clean + `]}`, "", []string{"!", "a"}, false, nil},
		{"two tools one name", `{"tools":[` + clean + `,{"name":"a"}]}`, "", []string{"a!", "a!"}, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := ReadMessage([]byte(`{"jsonrpc":"2.0","id":1,"result":` + tt.result + `}`))
			if l.Ambiguous != tt.ambiguous {
				t.Errorf("Ambiguous %q; want %q", l.Ambiguous, tt.ambiguous)
			}
			if l.NextCursor != tt.next {
				t.Errorf("NextCursor %v; want %v", l.NextCursor, tt.next)
			}
			if strings.Join(l.Others, ",") != strings.Join(tt.others, ",") {
				t.Errorf("Others %q; want %q", l.Others, tt.others)
			}
			var got []string
			for _, d := range l.Tools {
				n := d.Name
				if d.Ambiguous != "" {
					n += "!"
					if d.Canonical != nil {
						t.Errorf("ambiguous tool %q has a canonical form", d.Name)
					}
				} else if d.Canonical == nil {
					t.Errorf("tool %q has no canonical form", d.Name)
				}
				got = append(got, n)
			}
			if len(got) != len(tt.tools) {
				t.Fatalf("tools %q; want %q", got, tt.tools)
			}
			for i := range got {
				if got[i] != tt.tools[i] {
					t.Fatalf("tools %q; want %q", got, tt.tools)
				}
			}
		})
	}
}

// TestReadMessageNames: a tool whose name readers read differently gives
// every name some reader takes.
func TestReadMessageNames(t *testing.T) {
	for _, tt := range []struct{ tool, want string }{
		{`{"name":"a","name":"b"}`, "a,b"},
		{`{"name":"a","NAME":"b","Name":5}`, "a,b"},
		{`{"Name":"b"}`, "b"},
		{`{"name":"a"}`, "a"},
	} {
		l := ReadMessage([]byte(`{"jsonrpc":"2.0","id":1,"result":{"tools":[` + tt.tool + `]}}`))
		if len(l.Tools) != 1 || strings.Join(l.Tools[0].Names, ",") != tt.want {
			t.Errorf("%s: %+v; want names %s", tt.tool, l.Tools, tt.want)
		}
	}
}
