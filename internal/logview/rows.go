package logview

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/aegisrelay/aegis/internal/exitcode"
	"github.com/aegisrelay/aegis/journal/calls"
	"github.com/aegisrelay/aegis/journal/record"
)

// Call is a call's line: its first intent and, once read, what answered
// it; as JSON, one object of aegis log --json.
type Call struct {
	Type string    `json:"type"` // "call"
	TS   time.Time `json:"ts"`
	SID  string    `json:"sid"`
	Seq  uint64    `json:"seq"` // the first intent's
	// OutcomeSeq is the seq of the last outcome read of the call (its
	// final round's; of a task, the outcome that made it); null: none.
	// Seq and OutcomeSeq are what aegis prove inclusion --seq takes.
	OutcomeSeq *uint64 `json:"outcome_seq"`
	Call       string  `json:"call"`
	Tool       *string `json:"tool"`
	Batch      string  `json:"batch,omitempty"`
	Malformed  string  `json:"malformed,omitempty"`
	Verdict    string  `json:"verdict"`
	Rule       string  `json:"rule,omitempty"`
	Status     string  `json:"status"` // "in flight" until the outcome is seen
	Reason     string  `json:"reason,omitempty"`
	// ResultType names the answer of status other (its resultType).
	ResultType string `json:"result_type,omitempty"`
	LatencyNS  *int64 `json:"latency_ns"`

	// Code is the refusal's code where the verdict does not say it
	// (TOOL_CHANGED), and Hint what a person runs about it (tools.go).
	Code string `json:"code,omitempty"`
	Hint string `json:"hint,omitempty"`

	// An abbreviated id or tool name (record.MaxValueBytes): Call or Tool
	// shows its prefix and length, these its digest.
	CallSHA256 string `json:"call_sha256,omitempty"`
	ToolSHA256 string `json:"tool_sha256,omitempty"`

	// Revision is the protocol revision the first intent declares, else
	// its session's as known when the call is shown.
	Revision  string `json:"revision,omitempty"`
	Principal string `json:"principal,omitempty"`
	// RoundBy: the first intent carries a round that links it to no
	// earlier call (unknown_state, reused_state, or a link to nothing).
	RoundBy string `json:"round_by,omitempty"`
	// Rounds are the call's rounds, the first included, when it has more
	// than one; RoundsMore counts those past the model's bound.
	Rounds     []Round `json:"rounds,omitempty"`
	RoundsMore int     `json:"rounds_more,omitempty"`
	// Task is the task the call became.
	Task *Task `json:"task,omitempty"`
	// Approval: an approve rule parked the call; what it waited for.
	Approval *Approval `json:"approval,omitempty"`

	done bool
	// rounds holds the verdict and rule of each later round's intent, by
	// its seq, as its line (discarded) read them.
	rounds map[uint64]*Call
}

// Round is one round of a call: the seqs of its intent and outcome.
type Round struct {
	N         int     `json:"n"`
	Intent    uint64  `json:"intent"`
	Outcome   *uint64 `json:"outcome"` // null: none read
	Status    string  `json:"status"`
	By        string  `json:"by,omitempty"` // how the round was linked (round.by)
	LatencyNS *int64  `json:"latency_ns,omitempty"`
	// Verdict and Rule are the policy's on the round's intent: each
	// round is judged as the call it is.
	Verdict string `json:"verdict"`
	Rule    string `json:"rule,omitempty"`
}

// Task is the task a call became: the seqs of the intent and outcome that
// made it and of its task records.
type Task struct {
	ID         string      `json:"id"`
	Intent     uint64      `json:"intent"`
	Outcome    uint64      `json:"outcome"`
	Status     string      `json:"status"` // the end's status, or "open"
	Events     []TaskEvent `json:"events"`
	EventsMore int         `json:"events_more,omitempty"`
}

// TaskEvent is one task record.
type TaskEvent struct {
	Seq    uint64 `json:"seq"`
	Event  string `json:"event"`
	Via    string `json:"via"`
	Status string `json:"status,omitempty"`
}

// intentCall is the line of an intent's call, in flight until its
// outcome is read; a notification's is done.
func intentCall(r *record.Record, b *record.Intent) *Call {
	c := &Call{Type: "call", TS: r.TS, SID: hex.EncodeToString(r.SID[:]), Seq: r.Seq, Call: callString(b.Call), Malformed: b.Malformed,
		Verdict: b.Verdict, Rule: abbreviated(b.Rule, b.RuleLen), Status: "in flight", Principal: b.Principal, RoundBy: b.Round.By}
	if b.Call.Abbreviated() {
		c.CallSHA256 = b.Call.Sum.String()
	}
	if b.HasTool {
		t := abbreviated(string(b.Tool), b.ToolLen)
		c.Tool = &t
		if b.ToolLen > 0 {
			c.ToolSHA256 = b.ToolSum.String()
		}
	}
	if b.HasRevision {
		c.Revision = b.Revision.String()
	}
	if b.BatchSize > 0 {
		c.Batch = fmt.Sprintf("%d/%d", b.BatchIndex+1, b.BatchSize)
	}
	if b.Call.Type == record.IDNull {
		c.Status, c.done = "notification", true
	}
	if b.Approval != nil {
		c.Approval = &Approval{ID: b.Approval.ID}
	}
	c.Code = refusalCode(b)
	return c
}

// update takes what the model knows of the call m into its line.
func (c *Call) update(m *calls.Call[*Call]) {
	c.Status, c.Reason, c.ResultType, c.done = m.Status, m.Reason, m.ResultType, m.Done
	c.LatencyNS = nil
	if m.HasLatency {
		l := m.LatencyNS
		c.LatencyNS = &l
	}
	c.Rounds, c.RoundsMore = c.Rounds[:0], m.RoundsMore()
	for _, r := range m.Rounds() {
		x := Round{N: r.N, Intent: r.Intent, Status: r.Status, By: r.By, Verdict: c.Verdict, Rule: c.Rule}
		if rc := c.rounds[r.Intent]; rc != nil {
			x.Verdict, x.Rule = rc.Verdict, rc.Rule
		}
		if r.HasOutcome {
			o := r.Outcome
			x.Outcome = &o
		}
		if r.HasLatency {
			l := r.LatencyNS
			x.LatencyNS = &l
		}
		c.Rounds = append(c.Rounds, x)
	}
	if len(c.Rounds) == 0 {
		c.Rounds = nil
	}
	if k := m.Task(); k != nil {
		t := &Task{ID: k.ID, Intent: k.Intent, Outcome: k.Outcome, Status: "open", EventsMore: k.EventsMore, Events: []TaskEvent{}}
		if k.Ended {
			t.Status = k.End.Status
		}
		for _, e := range k.Events {
			t.Events = append(t.Events, TaskEvent{Seq: e.Seq, Event: e.Event, Via: e.Via, Status: e.Status})
		}
		c.Task = t
	}
}

// Cells are the call's columns in the table (header), and, with expand,
// one more row per round and per task event, indented under it.
func (c *Call) Cells(expand bool) [][]string {
	tool := "(none)"
	if c.Tool != nil {
		tool = *c.Tool
	}
	if c.Batch != "" {
		tool += " [batch " + c.Batch + "]"
	}
	if c.Malformed != "" {
		tool += " [malformed: " + c.Malformed + "]"
	}
	if c.RoundBy != "" {
		tool += " [round: " + c.RoundBy + "]"
	}
	status := c.Status
	if c.ResultType != "" {
		status += " (resultType " + c.ResultType + ")"
	}
	if c.Reason != "" {
		status += " (" + c.Reason + ")"
	}
	var marks []string
	if n := len(c.Rounds) + c.RoundsMore; n > 0 {
		marks = append(marks, fmt.Sprintf("rounds %d", n))
	}
	if c.Task != nil {
		marks = append(marks, "task")
	}
	if c.Approval != nil {
		marks = append(marks, c.Approval.mark())
	}
	if len(marks) > 0 {
		status += " [" + strings.Join(marks, ", ") + "]"
	}
	verdict := c.Verdict
	if c.Rule != "" {
		verdict += " (" + c.Rule + ")"
	}
	verdict += c.codeWords()
	rows := [][]string{{FormatTime(c.TS), c.SID[:8], c.Seqs(), c.Call, tool, status, latency(c.LatencyNS), verdict}}
	if !expand {
		return rows
	}
	for _, r := range c.Rounds {
		what := fmt.Sprintf("  round %d: intent seq %d", r.N, r.Intent)
		if r.By != "" {
			what += " (by " + r.By + ")"
		}
		st := r.Status
		if r.Outcome != nil {
			st += fmt.Sprintf(" (outcome seq %d)", *r.Outcome)
		} else {
			st = "no outcome"
		}
		verdict := r.Verdict
		if r.Rule != "" {
			verdict += " (" + r.Rule + ")"
		}
		rows = append(rows, []string{"", "", "", "", what, st, latency(r.LatencyNS), verdict})
	}
	if t := c.Task; t != nil {
		rows = append(rows, []string{"", "", "", "", fmt.Sprintf("  task %s: outcome seq %d", t.ID, t.Outcome), "task", "", ""})
		for _, e := range t.Events {
			st := e.Event
			if e.Status != "" {
				st += " " + e.Status
			}
			rows = append(rows, []string{"", "", "", "", fmt.Sprintf("  task %s: seq %d via %s", t.ID, e.Seq, e.Via), st, "", ""})
		}
		if t.EventsMore > 0 {
			rows = append(rows, []string{"", "", "", "", fmt.Sprintf("  task %s: %d more records", t.ID, t.EventsMore), "", "", ""})
		}
	}
	return rows
}

// header is the table's column header.
var header = []string{"TIME", "SESSION", "SEQ", "CALL", "TOOL", "STATUS", "LATENCY", "POLICY"}

// Seqs is the call's SEQ column: its first intent's seq, and its last
// outcome's after an arrow (5→6), the seqs aegis prove inclusion takes.
func (c *Call) Seqs() string {
	if c.OutcomeSeq == nil {
		return strconv.FormatUint(c.Seq, 10)
	}
	return strconv.FormatUint(c.Seq, 10) + "→" + strconv.FormatUint(*c.OutcomeSeq, 10)
}

func latency(ns *int64) string {
	if ns == nil {
		return "-"
	}
	return FormatLatency(time.Duration(*ns))
}

// Session is a line about a session: its start, its revision, its end,
// or that it has no end. JSON is what --json --sessions prints, Text the
// table's line; End, on a session_end's line, is the record, whose
// summary (supervise.Summary) Printer adds to Text.
type Session struct {
	JSON *SessionJSON
	Text string
	End  *record.SessionEnd
	TS   time.Time // zero: shown whatever Options.Since says
}

// SessionJSON is a session object of --json --sessions. Type says which
// fields it has: session_start the command, policy and confinement;
// protocol the revision its initialize settled; session_end how it ended
// (reason, the child's exit code or signal, wrap's exit status,
// seccomp_killed, counts, the revision if known); session_open, a
// session with no session_end at the end of what was read, only a note.
type SessionJSON struct {
	Type string     `json:"type"`
	TS   *time.Time `json:"ts,omitempty"`
	SID  string     `json:"sid"`
	Seq  *uint64    `json:"seq,omitempty"`

	Argv []string `json:"argv,omitempty"`
	// Name and Client are session_start's: the server's name (the one
	// its default log is named for) and the MCP client whose
	// configuration ran it (wrap --client); absent when not recorded.
	Name      string `json:"name,omitempty"`
	Client    string `json:"client,omitempty"`
	PolicySet string `json:"policy_set,omitempty"` // "pass-through": no --policy, every call forwarded
	Confine   *bool  `json:"confine,omitempty"`

	Revision string `json:"revision,omitempty"`

	Reason        string  `json:"reason,omitempty"`
	Detail        string  `json:"detail,omitempty"`
	ExitCode      *int    `json:"exit_code,omitempty"`
	Signal        string  `json:"signal,omitempty"`
	Exit          *int    `json:"exit,omitempty"` // wrap's exit status
	SeccompKilled *bool   `json:"seccomp_killed,omitempty"`
	Counts        *Counts `json:"counts,omitempty"`

	Note string `json:"note,omitempty"`

	Egress *EgressJSON `json:"egress,omitempty"` // egress.go
}

// Counts is session_end's counts, under the record's own names.
type Counts struct {
	FramesIn   uint64 `json:"frames_in"`
	FramesOut  uint64 `json:"frames_out"`
	Intents    uint64 `json:"intents"`
	Outcomes   uint64 `json:"outcomes"`
	Unanswered uint64 `json:"unanswered"`
	Refused    uint64 `json:"refused"`
	Anomalies  uint64 `json:"anomalies"`
}

// startLine is the line of a session_start: when, the server's name and
// its client when recorded, the child's command, the policy and the
// confinement.
func startLine(r *record.Record, b *record.SessionStart) *Session {
	sid := hex.EncodeToString(r.SID[:])
	ts, seq, confined := r.TS, r.Seq, b.Confine != nil
	policy := "policy " + b.PolicySet + " (--policy: each call judged by its rules)"
	if b.PolicySet == record.PassThroughSet {
		policy = "policy pass-through (no --policy: every call forwarded)"
	}
	confinement := "confinement off"
	if confined {
		confinement = "confinement on (--confine)"
	}
	if b.Transport != "" { // wrap --listen: who called
		confinement += fmt.Sprintf("; over %s, peer %s, principal %s", b.Transport, b.Peer, b.Principal)
	}
	return &Session{
		JSON: &SessionJSON{Type: "session_start", TS: &ts, SID: sid, Seq: &seq, Argv: b.Argv, Name: b.Name, Client: b.Client, PolicySet: b.PolicySet, Confine: &confined},
		Text: fmt.Sprintf("session %s started %s: %schild %s; %s; %s", sid[:8], FormatTime(ts), serverClient(b), ShortArgv(b.Argv), policy, confinement),
		TS:   ts,
	}
}

// serverClient is a start line's words on the server's name and its
// client, each when recorded: "server NAME (client CLIENT); ".
func serverClient(b *record.SessionStart) string {
	s := ""
	if b.Name != "" {
		s = "server " + b.Name
	}
	if b.Client != "" {
		if s != "" {
			s += " "
		}
		s += "(client " + b.Client + ")"
	}
	if s != "" {
		s += "; "
	}
	return s
}

// protocolLine is the line of a protocol record: the revision the
// session's initialize settled.
func protocolLine(r *record.Record, b *record.Protocol) *Session {
	sid := hex.EncodeToString(r.SID[:])
	ts, seq := r.TS, r.Seq
	return &Session{
		JSON: &SessionJSON{Type: "protocol", TS: &ts, SID: sid, Seq: &seq, Revision: b.Revision.String()},
		Text: fmt.Sprintf("session %s at %s: revision %s (settled by initialize)", sid[:8], FormatTime(ts), b.Revision.String()),
		TS:   ts,
	}
}

// endLine is the line of a session_end (the caller adds its summary to
// Text); revision is the session's, if known.
func endLine(r *record.Record, b *record.SessionEnd, revision string) *Session {
	sid := hex.EncodeToString(r.SID[:])
	ts, seq, killed := r.TS, r.Seq, b.SeccompKilled
	exit := WrapExit(b)
	c := b.Counts
	j := &SessionJSON{Type: "session_end", TS: &ts, SID: sid, Seq: &seq, Reason: b.Reason, Detail: b.Detail,
		Signal: b.ExitSignal, Exit: &exit, SeccompKilled: &killed, Revision: revision,
		Counts: &Counts{c.FramesIn, c.FramesOut, c.Intents, c.Outcomes, c.Unanswered, c.Refused, c.Anomalies}}
	if b.ExitSignal == "" {
		code := b.ExitCode
		j.ExitCode = &code
	}
	text := fmt.Sprintf("session %s ended %s: ", sid[:8], FormatTime(ts))
	if revision != "" {
		text = fmt.Sprintf("session %s (revision %s) ended %s: ", sid[:8], revision, FormatTime(ts))
	}
	return &Session{JSON: j, Text: text, End: b, TS: ts}
}

// openLine says that a session whose start was read is over without its
// session_end, and why.
func openLine(sid [16]byte, how calls.How) *Session {
	why := "aegis stopped without ending it (it was killed, or the machine stopped); the next session follows"
	if how == calls.CutEnd {
		why = "it is still running, or aegis was killed, or the log was cut"
	}
	s := hex.EncodeToString(sid[:])
	return &Session{
		JSON: &SessionJSON{Type: "session_open", SID: s, Note: "no session_end: " + why},
		Text: fmt.Sprintf("session %s has no session_end: %s", s[:8], why),
	}
}

// WrapExit is the exit status wrap gave for a session that ended so
// (relay's exitStatus): a failure's own, else the child's, 128+N for
// signal N.
func WrapExit(e *record.SessionEnd) int {
	switch {
	case e.Reason == record.EndFrameTooLarge:
		return exitcode.FrameTooLarge
	case e.Reason == record.EndAuditIOError:
		return exitcode.AuditIO
	case e.ExitSignal != "":
		return 128 + int(unix.SignalNum(e.ExitSignal))
	}
	return e.ExitCode
}

// ShortArgv is the child's command for a line: each argument Go-quoted if
// it holds a space, a quote or a control character, the whole cut at 80
// characters.
func ShortArgv(argv []string) string {
	const max = 80
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = a
		if a == "" || strings.ContainsFunc(a, func(r rune) bool { return r <= ' ' || r == '"' || r == '\'' || r == '\\' || r == 0x7f }) {
			q[i] = strconv.Quote(a)
		}
	}
	s := []rune(strings.Join(q, " "))
	if len(s) > max {
		return string(s[:max-1]) + "…"
	}
	return string(s)
}

// FormatTime is a ts as the table shows it, in local time.
func FormatTime(t time.Time) string { return t.Local().Format("2006-01-02 15:04:05.000") }

// FormatLatency is a latency as the table shows it.
func FormatLatency(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%.1fµs", float64(d)/1e3)
	case d < time.Second:
		return fmt.Sprintf("%.2fms", float64(d)/1e6)
	}
	return fmt.Sprintf("%.2fs", d.Seconds())
}

func callString(c record.Call) string {
	switch c.Type {
	case record.IDNumber:
		return abbreviated(string(c.Text), c.Len)
	case record.IDString:
		if c.Abbreviated() {
			b, _ := json.Marshal(string(c.Text) + "…")
			return fmt.Sprintf("%s (%d bytes)", b, c.Len)
		}
		b, _ := json.Marshal(string(c.Text))
		return string(b)
	}
	return "null"
}

// abbreviated shows a value the record holds the prefix of (n > 0: its
// whole length) as the prefix, an ellipsis and the length.
func abbreviated(prefix string, n int) string {
	if n <= 0 {
		return prefix
	}
	return fmt.Sprintf("%s… (%d bytes)", prefix, n)
}
