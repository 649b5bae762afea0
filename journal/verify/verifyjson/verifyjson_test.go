package verifyjson

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/aegisrelay/aegis/journal/verify"
)

// TestDoc: the document's fields as scripts read them: arrays never
// null, files only for a log of more than its one file, seqs only for a
// file with records.
func TestDoc(t *testing.T) {
	tests := []struct {
		name string
		doc  Doc
		want string
	}{
		{"unreadable", Unreadable("a.jsonl", false, errors.New("boom")),
			`{"file":"a.jsonl","status":"unreadable","pinned":false,"records":0,"sessions":[],"problems":[],"incomplete":[],"error":"boom"}`},
		{"one file", New("a.jsonl", true, &verify.Report{Status: verify.Valid, Records: 2, Files: []verify.FileReport{{Path: "a.jsonl", Records: 2, First: 0, Last: 1}},
			Sessions: []*verify.SessionReport{{SID: "s", Key: "k", LastSeq: 1, Records: 2, Ended: true, EndReason: "client_eof"}}}),
			`{"file":"a.jsonl","status":"valid","pinned":true,"records":2,"sessions":[{"sid":"s","key":"k","first_seq":0,"last_seq":1,"records":2,"intents":0,"outcomes":0,"ended":true,"end_reason":"client_eof","unsigned":0}],"problems":[],"incomplete":[]}`},
		{"segments", New("a.jsonl", false, &verify.Report{Status: verify.Incomplete, Files: []verify.FileReport{{Path: "a.jsonl.0-1.jsonl", Records: 2, First: 0, Last: 1}, {Path: "a.jsonl"}},
			Gaps: []verify.Problem{{Msg: "no session_end"}}, Dropped: 3, Notes: []string{"n"}}),
			`{"file":"a.jsonl","files":[{"path":"a.jsonl.0-1.jsonl","records":2,"first_seq":0,"last_seq":1},{"path":"a.jsonl","records":0}],"status":"incomplete","pinned":false,"records":0,"sessions":[],"problems":[],"incomplete":[{"line":0,"seq":0,"msg":"no session_end"}],"notes":["n"],"more_problems":3}`},
	}
	for _, tt := range tests {
		got, err := json.Marshal(tt.doc)
		if err != nil || string(got) != tt.want {
			t.Errorf("%s: json = %s, %v; want %s", tt.name, got, err, tt.want)
		}
	}
}
