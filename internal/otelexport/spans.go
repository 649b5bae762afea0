package otelexport

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/aegisrelay/aegis/journal/calls"
	"github.com/aegisrelay/aegis/journal/record"
	"github.com/aegisrelay/aegis/journal/tlog"
)

// maxRounds bounds the rounds, and the task events, one call keeps for
// its spans, as the model of calls bounds what it keeps: past it they
// are counted (aegis.rounds.more, aegis.task.events.more).
const maxRounds = 256

// Method is mcp.method.name of every span: the log records tools/call.
const Method = "tools/call"

// session is what a span needs of its session's records.
type session struct {
	transport  string // session_start's: "" (stdio) or "http"
	principal  string
	durability string
	name       string
	sid        string // aegis.session: the sid in hex, made once
}

// mark is one record a span names: its seq, ts and the SHA-256 of its
// line.
type mark struct {
	seq    uint64
	ts     time.Time
	digest [32]byte
	ok     bool
}

func (m mark) digestText() string { return digestPrefix + hex.EncodeToString(m.digest[:]) }

// round is one round of a call: its intent and outcome.
type round struct {
	intent, outcome mark
	n               int
	by              string
	status, reason  string
}

// taskEvent is one task record.
type taskEvent struct {
	mark
	event, via, status string
}

// callData is what the spans of one call are built from (the model's
// Call.Data).
type callData struct {
	tool         string
	id           []byte // jsonrpc.request.id; its storage used again with the call data
	hasID        bool
	verdict      string
	rule         string
	set          string
	policyReason string
	principal    string
	revision     string
	rounds       []round
	first        [1]round // rounds' storage for a call of one round
	roundsMore   int
	taskID       string
	taskStart    mark // the outcome that made the task
	events       []taskEvent
	eventsMore   int
	emitted      bool
	parent       trace.SpanContext // the client's span; not valid: none
}

// builder follows the calls of the lines it reads and builds their
// spans. Used by one goroutine.
//
// A span is built whole once its call is done, from the times the log
// recorded, in OTLP's own types (pspan), in storage the processor hands
// back once it is sent: a tracer would keep a live span, lock it,
// sample it, copy and deduplicate its attributes and snapshot it at its
// end, and the SDK's exporter would convert the snapshot into fresh
// messages, which is work and garbage without purpose for a span that
// is never live.
type builder struct {
	proc   *processor
	span   pspan             // the span being built, its buffer reused
	names  map[string]string // span names by tool, at most maxNames
	tools  map[string]string // tool names, at most maxNames: a call's tool is kept without a copy of its own
	free   []*callData       // the data of calls done and forgotten, at most maxFree, to use again
	ids    *rand.ChaCha8
	origin string
	// digests are the SHA-256 of the lines being read, in order, as
	// the journal handed them (Exporter.TapLines): each line read takes
	// the first, or, with none left (Exporter.Tap), is hashed.
	digests [][32]byte
	dec     record.Decoder
	slot    record.Slot // each line decodes into it: no allocation for intents and outcomes
	book    *calls.Book[*session, *callData]
	meters  *meters // nil: no metrics
}

// scopeName is the instrumentation scope of every span and metric.
const scopeName = "github.com/aegisrelay/aegis/internal/otelexport"

func newBuilder(proc *processor, origin string, m *meters) *builder {
	var seed [32]byte
	crand.Read(seed[:]) // never fails (crypto/rand)
	b := &builder{proc: proc, names: map[string]string{}, tools: map[string]string{}, ids: rand.NewChaCha8(seed), origin: origin, meters: m}
	// Partial: the records before this run are not read, and a group
	// the queue dropped is missing.
	b.book = calls.New[*session, *callData](calls.Options{Partial: true})
	b.book.OnClose = func(s *calls.Session[*session, *callData], _ calls.How) {
		// A call waiting for a retry or its task's end when its session
		// closes is done as it is.
		s.EachPending(func(c *calls.Call[*callData]) { b.emit(s, c) })
	}
	return b
}

// lines reads a run of whole lines.
func (b *builder) lines(buf []byte) {
	for len(buf) > 0 {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			i = len(buf) // the journal writes whole lines; kept for safety
		}
		line := buf[:i]
		buf = buf[min(i+1, len(buf)):]
		if len(line) > 0 {
			b.line(line)
		}
	}
}

// close ends the log: the sessions still live are cut.
func (b *builder) close() { b.book.Close() }

// line counts one record and emits the spans of the call it finishes.
func (b *builder) line(line []byte) {
	digest, hashed := [32]byte{}, len(b.digests) > 0
	if hashed {
		digest, b.digests = b.digests[0], b.digests[1:]
	}
	// The record aliases line and the slot until the next line: what a
	// call keeps is copied out (newCallData; the model copies its ids).
	if err := b.dec.DecodeInto(&b.slot, line); err != nil {
		return // the journal's own line: it decodes
	}
	if !hashed {
		digest = sha256.Sum256(line)
	}
	r := b.slot.Record()
	m := mark{seq: r.Seq, ts: r.TS, digest: digest, ok: true}
	if r.Seq == 0 && b.origin == "" {
		b.origin = tlog.Origin(line)
	}
	var data *callData
	if in, ok := r.Body.(*record.Intent); ok {
		data = b.newCallData(in, m)
	}
	s := b.book.Enter(r)
	if s == nil {
		b.recycle(data)
		return
	}
	if st, ok := r.Body.(*record.SessionStart); ok {
		s.Data = &session{transport: st.Transport, principal: st.Principal, durability: st.Durability, name: st.Name,
			sid: hex.EncodeToString(s.SID[:])}
	}
	c := b.book.Count(r, data)
	if c != nil && c.Data != nil {
		d := c.Data
		switch body := r.Body.(type) {
		case *record.Intent:
			// A retry: the call it continues.
			if len(d.rounds) < maxRounds {
				d.rounds = append(d.rounds, round{intent: m, n: body.Round.N, by: body.Round.By})
			} else {
				d.roundsMore++
			}
		case *record.Outcome:
			if d.roundsMore == 0 && len(d.rounds) > 0 {
				last := &d.rounds[len(d.rounds)-1]
				last.outcome, last.status, last.reason = m, body.Status, body.Reason
			}
			if body.Status == record.StatusTask {
				d.taskID, d.taskStart = body.TaskID.String(), m
			}
		case *record.Task:
			if len(d.events) < maxRounds {
				d.events = append(d.events, taskEvent{mark: m, event: body.Event, via: body.Via, status: body.Status})
			} else {
				d.eventsMore++
			}
		}
		if c.Done {
			b.emit(s, c)
			if len(d.rounds) == 1 && d.roundsMore == 0 && d.taskID == "" && len(d.events) == 0 {
				// A call of one round and no task, done: the model
				// forgets it (it keeps only the calls a retry or a task
				// record can still reach), so its data is no one's.
				b.recycle(d)
			}
		}
	}
	if in, ok := r.Body.(*record.Intent); ok && (in.Call.Type == record.IDNull || c != nil && c.Data != data) {
		// An intent with no id opens no call, and a retry continues its
		// call, whose data is the first intent's: the model keeps none
		// of this intent's data.
		b.recycle(data)
	}
	b.book.Settle()
}

// maxFree bounds the call data a builder keeps to use again: calls are
// done in about the order they open, so a few cover a busy log.
const maxFree = 256

// recycle keeps d, which no call refers to, for a later intent's
// call: a call's data is the largest allocation of its telemetry, and
// the collections its garbage causes cost more than making it.
func (b *builder) recycle(d *callData) {
	if d != nil && len(b.free) < maxFree {
		b.free = append(b.free, d)
	}
}

// newCallData is the data of the call intent in opens, in storage used
// again when there is some.
func (b *builder) newCallData(in *record.Intent, m mark) *callData {
	var d *callData
	if n := len(b.free); n > 0 {
		d, b.free = b.free[n-1], b.free[:n-1]
	} else {
		d = new(callData)
	}
	id := d.id[:0]
	*d = callData{id: id, verdict: in.Verdict, rule: in.Rule, set: in.Set, policyReason: in.PolicyReason, principal: in.Principal,
		first: [1]round{{intent: m, n: 1}}}
	d.rounds = d.first[:]
	if d.verdict == "" {
		d.verdict = record.VerdictPassThrough
	}
	if in.HasTool {
		d.tool = b.toolName(in.Tool, in.ToolLen > 0)
	}
	if in.RuleLen > 0 {
		d.rule += "…"
	}
	if in.HasRevision {
		d.revision = in.Revision.String()
	}
	if in.Trace.Parent != nil {
		carrier := propagation.MapCarrier{"traceparent": string(in.Trace.Parent)}
		if in.Trace.State != nil {
			carrier["tracestate"] = string(in.Trace.State)
		}
		d.parent = trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), carrier))
	}
	switch in.Call.Type {
	case record.IDNumber, record.IDString:
		d.id, d.hasID = append(d.id, in.Call.Text...), true
		if in.Call.Len > 0 {
			d.id = append(d.id, "…"...)
		}
	}
	return d
}

// emit builds the spans of a done call, once.
func (b *builder) emit(s *calls.Session[*session, *callData], c *calls.Call[*callData]) {
	d := c.Data
	if d == nil || d.emitted || len(d.rounds) == 0 {
		return
	}
	d.emitted = true
	// The call's outcome is its last round's (aegis log's outcome_seq);
	// it ends there, or at its task's end.
	first := d.rounds[0].intent
	final := d.rounds[len(d.rounds)-1].outcome
	end := first.ts
	if final.ok {
		end = final.ts
	}
	if n := len(d.events); n > 0 && d.events[n-1].event == record.TaskEnd {
		end = d.events[n-1].ts
	}
	name := b.spanName(d.tool)
	sc := b.spanContext(d.parent)
	if len(d.rounds) > 1 {
		for _, r := range d.rounds {
			b.roundSpan(sc, name, r)
		}
	}
	if d.taskID != "" {
		b.taskSpan(sc, name, d)
	}
	sid := ""
	if s.Data != nil {
		sid = s.Data.sid
	} else {
		sid = hex.EncodeToString(s.SID[:])
	}
	p := &b.span
	p.begin(sc, d.parent, tracepb.Span_SPAN_KIND_SERVER, name, first.ts.UnixNano(), end.UnixNano())
	p.str("mcp.method.name", Method)
	p.str("gen_ai.operation.name", "execute_tool")
	p.str("aegis.session", sid)
	p.int("aegis.record.seq", int64(first.seq))
	p.digest("aegis.record.digest", &first.digest)
	p.str("aegis.status", c.Status)
	p.str("aegis.policy.verdict", d.verdict)
	if d.tool != "" {
		p.str("gen_ai.tool.name", d.tool)
	}
	if d.hasID {
		p.bytes("jsonrpc.request.id", d.id)
	}
	rev := d.revision
	if rev == "" {
		rev = s.Revision
	}
	if rev != "" {
		p.str("mcp.protocol.version", rev)
	}
	if final.ok {
		p.int("aegis.outcome.seq", int64(final.seq))
		p.digest("aegis.outcome.digest", &final.digest)
	}
	if c.Reason != "" {
		p.str("aegis.reason", c.Reason)
	}
	if d.rule != "" {
		p.str("aegis.policy.rule", d.rule)
	}
	if d.set != "" {
		p.str("aegis.policy.set", d.set)
	}
	if b.origin != "" {
		p.str("aegis.log.origin", b.origin)
	}
	if ss := s.Data; ss != nil {
		transport := "pipe"
		if ss.transport == record.TransportHTTP {
			transport = "tcp"
			p.str("network.protocol.name", "http")
		}
		p.str("network.transport", transport)
		p.str("aegis.durability", ss.durability)
		if ss.name != "" {
			p.str("aegis.server", ss.name)
		}
		if d.principal == "" {
			d.principal = ss.principal
		}
	}
	if d.principal != "" {
		p.str("aegis.principal", d.principal)
	}
	if len(d.rounds) > 1 || d.roundsMore > 0 {
		p.int("aegis.rounds", int64(len(d.rounds)+d.roundsMore))
	}
	if et := errorType(c.Status); et != "" {
		p.str("error.type", et)
		p.fail(c.Status)
	}
	b.proc.OnEnd(p)
	b.meters.call(d, c, end.Sub(first.ts))
}

// maxNames bounds the span names, and the tool names, a builder keeps.
const maxNames = 1024

// toolName is tool as a string, "…" after it when it is abbreviated:
// made once per tool, as tools repeat.
func (b *builder) toolName(tool []byte, abbreviated bool) string {
	if !abbreviated {
		if t, ok := b.tools[string(tool)]; ok {
			return t
		}
	}
	t := string(tool)
	if abbreviated {
		return t + "…"
	}
	if len(b.tools) < maxNames {
		b.tools[t] = t
	}
	return t
}

// spanName is the name of the span of a call of tool: made once per
// tool, as tools repeat.
func (b *builder) spanName(tool string) string {
	if tool == "" {
		return Method
	}
	if n, ok := b.names[tool]; ok {
		return n
	}
	n := Method + " " + tool
	if len(b.names) < maxNames {
		b.names[tool] = n
	}
	return n
}

// spanContext is a new span's: a child's of parent when it is valid
// (the client's trace, its trace state kept), else the root of a new
// trace. The ids are random, as the SDK's are (W3C Trace Context's
// randomness), from a generator seeded by crypto/rand.
func (b *builder) spanContext(parent trace.SpanContext) trace.SpanContext {
	cfg := trace.SpanContextConfig{TraceFlags: trace.FlagsSampled}
	if parent.IsValid() {
		cfg.TraceID, cfg.TraceState = parent.TraceID(), parent.TraceState()
	} else {
		for !cfg.TraceID.IsValid() {
			binary.LittleEndian.PutUint64(cfg.TraceID[:8], b.ids.Uint64())
			binary.LittleEndian.PutUint64(cfg.TraceID[8:], b.ids.Uint64())
		}
	}
	for !cfg.SpanID.IsValid() {
		binary.LittleEndian.PutUint64(cfg.SpanID[:], b.ids.Uint64())
	}
	return trace.NewSpanContext(cfg)
}

// roundSpan is one round's child span of the call's span parent.
func (b *builder) roundSpan(parent trace.SpanContext, name string, r round) {
	end := r.intent.ts
	if r.outcome.ok {
		end = r.outcome.ts
	}
	p := &b.span
	p.begin(b.spanContext(parent), parent, tracepb.Span_SPAN_KIND_INTERNAL, name+" round "+strconv.Itoa(r.n),
		r.intent.ts.UnixNano(), end.UnixNano())
	p.int("aegis.round.n", int64(r.n))
	p.int("aegis.record.seq", int64(r.intent.seq))
	p.digest("aegis.record.digest", &r.intent.digest)
	if r.by != "" {
		p.str("aegis.round.by", r.by)
	}
	if r.outcome.ok {
		p.int("aegis.outcome.seq", int64(r.outcome.seq))
		p.digest("aegis.outcome.digest", &r.outcome.digest)
		p.str("aegis.status", r.status)
	}
	if et := errorType(r.status); et != "" {
		p.str("error.type", et)
		p.fail(r.status)
	}
	b.proc.OnEnd(p)
}

// taskSpan is the child span of the task a call became, from the
// outcome that made it to its end, an event per task record.
func (b *builder) taskSpan(parent trace.SpanContext, name string, d *callData) {
	end := d.taskStart.ts
	var last *taskEvent
	if n := len(d.events); n > 0 && d.events[n-1].event == record.TaskEnd {
		last = &d.events[n-1]
		end = last.ts
	}
	p := &b.span
	p.begin(b.spanContext(parent), parent, tracepb.Span_SPAN_KIND_INTERNAL, "task "+name, d.taskStart.ts.UnixNano(), end.UnixNano())
	p.str("aegis.task.id", d.taskID)
	p.int("aegis.record.seq", int64(d.taskStart.seq))
	p.str("aegis.record.digest", d.taskStart.digestText())
	status := ""
	if last != nil {
		status = last.status
		p.int("aegis.outcome.seq", int64(last.seq))
		p.str("aegis.outcome.digest", last.digestText())
		p.str("aegis.status", status)
	}
	if d.eventsMore > 0 {
		p.int("aegis.task.events.more", int64(d.eventsMore))
	}
	for _, e := range d.events {
		ea := []attribute.KeyValue{attribute.Int64("aegis.record.seq", int64(e.seq)), attribute.String("aegis.record.digest", e.digestText())}
		if e.via != "" {
			ea = append(ea, attribute.String("aegis.task.via", e.via))
		}
		if e.status != "" {
			ea = append(ea, attribute.String("aegis.status", e.status))
		}
		p.event(&tracepb.Span_Event{Name: e.event, TimeUnixNano: uint64(max(0, e.ts.UnixNano())), Attributes: protoAttrs(ea...)})
	}
	if et := errorType(status); et != "" {
		p.str("error.type", et)
		p.fail(status)
	}
	b.proc.OnEnd(p)
}

// errorType is error.type of a call of status: none for ok and the
// statuses of a call not over (input_required, task), tool_error as the
// conventions name it, else the status itself (the log keeps no JSON-RPC
// error code).
func errorType(status string) string {
	switch status {
	case "", record.StatusOK, record.StatusInputRequired, record.StatusTask:
		return ""
	}
	return status
}
