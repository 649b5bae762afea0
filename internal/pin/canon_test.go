package pin

import "testing"

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
	}{
		{"one tool", `{"tools":[` + clean + `]}`, "", []string{"a"}, false},
		{"empty list", `{"tools":[]}`, "", nil, false},
		{"next page", `{"tools":[` + clean + `],"nextCursor":"2"}`, "", []string{"a"}, true},
		{"null cursor", `{"tools":[` + clean + `],"nextCursor":null}`, "", []string{"a"}, false},
		{"no tools member", `{}`, "", nil, false},
		{"another result", `{"content":[{"type":"text","text":"z"}]}`, "", nil, false},
		{"tools null", `{"tools":null}`, "", nil, false},
		{"result null", `null`, "", nil, false},
		{"result a number", `5`, "", nil, false},
		{"tools an object", `{"tools":{"a":` + clean + `}}`, ReasonShape, nil, false},
		{"tools case variant alone", `{"Tools":[` + clean + `]}`, ReasonCaseKey, nil, false},
		{"tools and a case variant", `{"tools":[],"TOOLS":[` + clean + `]}`, ReasonCaseKey, nil, false},
		{"cursor case variant", `{"tools":[` + clean + `],"nextcursor":"2"}`, ReasonCaseKey, []string{"a!"}, false},
		{"cursor variant, a tool ambiguous itself", `{"tools":[` + clean + `,{"name":"b","Title":"x"}],"NextCursor":"2"}`, ReasonCaseKey, []string{"a!", "b!"}, false},
		{"tools twice", `{"tools":[` + clean + `],"tools":[]}`, ReasonDuplicateKey, []string{"a!"}, false},
		{"tool without a name", `{"tools":[{"description":"A"},` + clean + `]}`, "", []string{"!", "a"}, false},
		{"two tools one name", `{"tools":[` + clean + `,{"name":"a"}]}`, "", []string{"a!", "a!"}, false},
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
