package calls

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aegisrelay/aegis/journal/record"
)

// step is a record of a test log, its seq its place: kind is "start"
// (stdio), "http" (a session_start over HTTP), "intent", "note" (an
// intent with a null id), "outcome" (of the intent at seq of, id its
// id), "end" (counts intents and outcomes) or "recovery"; sid is a
// letter.
type step struct {
	kind     string
	sid      byte
	id       string
	of       uint64
	intents  uint64
	outcomes uint64
}

// run feeds steps to a Book and traces what it reports: "close A how",
// "answer SEQ", "anomaly KIND@SEQ", "cut KIND@SEQ".
func run(opts Options, missing uint64, steps []step) string {
	b := New[string, int](opts)
	var trace []string
	b.OnClose = func(s *Session[string, int], how How) {
		trace = append(trace, fmt.Sprintf("close %s %s", s.Data, howName[how]))
	}
	b.OnAnomaly = func(a Anomaly) {
		w := "anomaly"
		if a.Cut {
			w = "cut"
		}
		trace = append(trace, fmt.Sprintf("%s %s@%d", w, kindName[a.Kind], a.Seq))
	}
	for i, st := range steps {
		seq := uint64(i)
		if missing > 0 && seq == missing {
			b.Missing(missing)
		}
		r := &record.Record{Seq: seq, SID: [16]byte{st.sid}}
		id := record.Call{Type: record.IDNumber, Text: []byte(st.id)}
		switch st.kind {
		case "start", "http":
			r.Kind, r.Body = record.KindSessionStart, &record.SessionStart{}
			if st.kind == "http" {
				r.Body = &record.SessionStart{Transport: "http"}
			}
		case "intent":
			r.Kind, r.Body = record.KindIntent, &record.Intent{Call: id}
		case "note":
			r.Kind, r.Body = record.KindIntent, &record.Intent{Call: record.Call{Type: record.IDNull}}
		case "outcome":
			r.Kind, r.Body = record.KindOutcome, &record.Outcome{Call: id, Intent: st.of}
		case "end":
			r.Kind, r.Body = record.KindSessionEnd, &record.SessionEnd{Counts: record.Counts{Intents: st.intents, Outcomes: st.outcomes}}
		case "recovery":
			r.Kind, r.Body = record.KindRecovery, &record.Recovery{}
		}
		s, answered := b.Add(r, int(seq))
		if s != nil && s.Data == "" {
			s.Data = string('A' + st.sid)
		}
		if answered != nil {
			trace = append(trace, fmt.Sprintf("answer %d", answered.Data))
		}
	}
	b.Close()
	return strings.Join(trace, "; ")
}

var howName = map[How]string{Ended: "ended", CutRecovery: "recovery", CutStart: "start", CutEnd: "end"}

var kindName = map[Kind]string{
	OutsideSession: "outside", AfterEnd: "after_end", ReusedSessionID: "reused", WrongSessionAfterRecovery: "wrong_sid",
	NoSessionAfterRecovery: "no_session", UnknownIntent: "unknown_intent", CallMismatch: "mismatch",
	CountsMismatch: "counts", Unanswered: "unanswered", NoEnd: "no_end",
	RoundUnlinked: "round_unlinked", RoundClaimedTwice: "claimed_twice", TaskWithoutCall: "task_without_call",
	TaskEndedTwice: "ended_twice", AnswerWithoutRequest: "answer_without_request", TaskWithoutEnd: "task_without_end",
	TaskIDReused: "task_id_reused", RequestOfNoCall: "request_of_no_call",
}

func TestBook(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		missing uint64 // Missing(missing) before the record of that seq
		steps   []step
		want    string
	}{
		{"a call", Options{}, 0, []step{{kind: "start"}, {kind: "intent", id: "1"}, {kind: "outcome", id: "1", of: 1}, {kind: "end", intents: 1, outcomes: 1}},
			"answer 1; close A ended"},
		{"a notification opens no call", Options{}, 0, []step{{kind: "start"}, {kind: "note"}, {kind: "end", intents: 1}},
			"close A ended"},
		{"an outcome of another id", Options{}, 0, []step{{kind: "start"}, {kind: "intent", id: "1"}, {kind: "outcome", id: "2", of: 1}, {kind: "end", intents: 1, outcomes: 1}},
			"anomaly mismatch@2; answer 1; close A ended"},
		{"an outcome of no intent", Options{}, 0, []step{{kind: "start"}, {kind: "outcome", id: "1", of: 7}, {kind: "end", outcomes: 1}},
			"anomaly unknown_intent@1; close A ended"},
		{"an outcome answers once", Options{}, 0, []step{{kind: "start"}, {kind: "intent", id: "1"}, {kind: "outcome", id: "1", of: 1}, {kind: "outcome", id: "1", of: 1}, {kind: "end", intents: 1, outcomes: 2}},
			"answer 1; anomaly unknown_intent@3; close A ended"},
		{"an outcome of another session's intent", Options{}, 0, []step{{kind: "http"}, {kind: "http", sid: 1}, {kind: "intent", id: "1"}, {kind: "outcome", sid: 1, id: "1", of: 2}, {kind: "outcome", id: "1", of: 2}, {kind: "end", intents: 1, outcomes: 1}, {kind: "end", sid: 1, outcomes: 1}},
			"anomaly unknown_intent@3; answer 2; close A ended; close B ended"},
		{"counts that are not the log's", Options{}, 0, []step{{kind: "start"}, {kind: "intent", id: "1"}, {kind: "outcome", id: "1", of: 1}, {kind: "end", intents: 2, outcomes: 1}},
			"answer 1; anomaly counts@3; close A ended"},
		{"an intent unanswered at the end", Options{}, 0, []step{{kind: "start"}, {kind: "intent", id: "1"}, {kind: "end", intents: 1}},
			"anomaly unanswered@2; close A ended"},
		{"a cut session", Options{}, 0, []step{{kind: "start"}, {kind: "intent", id: "1"}},
			"close A end; cut no_end@1"},
		{"records after the end", Options{}, 0, []step{{kind: "start"}, {kind: "end"}, {kind: "intent", id: "1"}, {kind: "outcome", id: "1", of: 2}},
			"close A ended; anomaly after_end@2; anomaly after_end@3; answer 2"},
		{"a record of no session", Options{}, 0, []step{{kind: "intent", sid: 3, id: "1"}},
			"anomaly outside@0"},
		{"a reused session id", Options{}, 0, []step{{kind: "start"}, {kind: "end"}, {kind: "start"}, {kind: "end"}},
			"close A ended; anomaly reused@2; close A ended"},
		{"a recovery cuts every live session", Options{}, 0, []step{{kind: "http"}, {kind: "http", sid: 1}, {kind: "intent", sid: 1, id: "1"}, {kind: "recovery", sid: 2}, {kind: "start", sid: 2}, {kind: "outcome", sid: 1, id: "1", of: 2}, {kind: "end", sid: 2}},
			"close A recovery; cut no_end@0; close B recovery; cut no_end@2; anomaly outside@5; close C ended"},
		{"a recovery names the next session", Options{}, 0, []step{{kind: "recovery", sid: 2}, {kind: "start", sid: 1}, {kind: "end", sid: 1}},
			"anomaly wrong_sid@1; close B ended"},
		{"a recovery followed by no session_start", Options{}, 0, []step{{kind: "start"}, {kind: "end"}, {kind: "recovery", sid: 2}, {kind: "intent", sid: 2, id: "1"}},
			"close A ended; anomaly no_session@3; anomaly outside@3"},
		{"a log ending after a recovery", Options{}, 0, []step{{kind: "start"}, {kind: "end"}, {kind: "recovery", sid: 2}},
			"close A ended; cut no_session@0"},
		{"sessions over HTTP interleave", Options{Exclusive: true}, 0, []step{{kind: "http"}, {kind: "http", sid: 1}, {kind: "intent", id: "1"}, {kind: "end", sid: 1}, {kind: "outcome", id: "1", of: 2}, {kind: "end", intents: 1, outcomes: 1}},
			"close B ended; answer 2; close A ended"},
		{"a stdio start leaves sessions live, not exclusive", Options{}, 0, []step{{kind: "start"}, {kind: "start", sid: 1}, {kind: "intent", id: "1"}, {kind: "end", sid: 1}},
			"close B ended; close A end; cut no_end@2"},
		{"a stdio start cuts the sessions live, exclusive", Options{Exclusive: true}, 0, []step{{kind: "start"}, {kind: "intent", id: "1"}, {kind: "start", sid: 1}, {kind: "intent", id: "2"}, {kind: "end", sid: 1}},
			"close A start; cut no_end@1; anomaly outside@3; close B ended"},
		{"an HTTP start cuts nothing, exclusive", Options{Exclusive: true}, 0, []step{{kind: "start"}, {kind: "http", sid: 1}, {kind: "end"}, {kind: "end", sid: 1}},
			"close A ended; close B ended"},
		{"a session begun in missing records", Options{}, 2, []step{{kind: "start", sid: 1}, {kind: "end", sid: 1}, {kind: "outcome", id: "1", of: 1}, {kind: "end", intents: 9, outcomes: 9}},
			"close B ended; close A ended"},
		{"an intent after missing records still needs its outcome", Options{}, 2, []step{{kind: "start", sid: 1}, {kind: "end", sid: 1}, {kind: "intent", id: "1"}, {kind: "end", intents: 9, outcomes: 9}},
			"close B ended; anomaly unanswered@3; close A ended"},
		{"a partial read opens the sessions it did not start", Options{Partial: true}, 0, []step{{kind: "intent", id: "1"}, {kind: "outcome", id: "1", of: 0}, {kind: "outcome", id: "7", of: 7}},
			"answer 0; close A end; cut no_end@2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := run(tt.opts, tt.missing, tt.steps); got != tt.want {
				t.Errorf("Book(%s) = %q; want %q", tt.name, got, tt.want)
			}
		})
	}
}

// TestCallIDs: an outcome answers its intent's call only with the same
// id as recorded, short (kept inline) or long or abbreviated (copied).
func TestCallIDs(t *testing.T) {
	long := strings.Repeat("x", 40)
	tests := []struct {
		name    string
		intent  record.Call
		outcome record.Call
		want    bool
	}{
		{"short", record.Call{Type: record.IDString, Text: []byte("a")}, record.Call{Type: record.IDString, Text: []byte("a")}, true},
		{"short, another type", record.Call{Type: record.IDString, Text: []byte("1")}, record.Call{Type: record.IDNumber, Text: []byte("1")}, false},
		{"short, another id", record.Call{Type: record.IDString, Text: []byte("a")}, record.Call{Type: record.IDString, Text: []byte("b")}, false},
		{"long", record.Call{Type: record.IDString, Text: []byte(long)}, record.Call{Type: record.IDString, Text: []byte(long)}, true},
		{"long, another id", record.Call{Type: record.IDString, Text: []byte(long)}, record.Call{Type: record.IDString, Text: []byte(long[1:] + "y")}, false},
		{"abbreviated", record.Call{Type: record.IDString, Text: []byte("a"), Len: 300, Sum: record.Digest{1}}, record.Call{Type: record.IDString, Text: []byte("a"), Len: 300, Sum: record.Digest{1}}, true},
		{"abbreviated, another digest", record.Call{Type: record.IDString, Text: []byte("a"), Len: 300, Sum: record.Digest{1}}, record.Call{Type: record.IDString, Text: []byte("a"), Len: 300, Sum: record.Digest{2}}, false},
		{"whole against abbreviated", record.Call{Type: record.IDString, Text: []byte("a")}, record.Call{Type: record.IDString, Text: []byte("a"), Len: 300, Sum: record.Digest{1}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := append([]byte(nil), tt.intent.Text...)
			c := makeCall(1, tt.intent, struct{}{})
			clear(tt.intent.Text) // the decoder's line is recycled
			tt.intent.Text = text
			if got := c.matches(tt.outcome); got != tt.want {
				t.Errorf("call %s matches(%s) = %v; want %v", callText(tt.intent), callText(tt.outcome), got, tt.want)
			}
			if got, want := callText(c.ID()), callText(tt.intent); got != want {
				t.Errorf("call %s ID() = %s; want %s", want, got, want)
			}
		})
	}
}

// TestCountAllocs: counting a call's intent and outcome allocates nothing
// once the session's table has room.
func TestCountAllocs(t *testing.T) {
	b := New[struct{}, struct{}](Options{})
	start := &record.Record{Kind: record.KindSessionStart, Body: &record.SessionStart{}}
	b.Add(start, struct{}{})
	in := &record.Record{Kind: record.KindIntent, Body: &record.Intent{Call: record.Call{Type: record.IDNumber, Text: []byte("12345")}}}
	out := &record.Record{Kind: record.KindOutcome, Body: &record.Outcome{Call: record.Call{Type: record.IDNumber, Text: []byte("12345")}}}
	seq := uint64(1)
	if n := testing.AllocsPerRun(1000, func() {
		in.Seq, out.Seq, out.Body.(*record.Outcome).Intent = seq, seq+1, seq
		seq += 2
		b.Add(in, struct{}{})
		if _, c := b.Add(out, struct{}{}); c == nil {
			t.Fatal("outcome answered no call")
		}
	}); n != 0 {
		t.Errorf("Add(intent), Add(outcome) = %v allocations; want 0", n)
	}
}
