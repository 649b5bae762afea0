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
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

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

func (m mark) digestText() string { return "sha256:" + hex.EncodeToString(m.digest[:]) }

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
	id           string
	hasID        bool
	verdict      string
	rule         string
	set          string
	policyReason string
	principal    string
	revision     string
	rounds       []round
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
// recorded, and handed to the processor as the SDK's read-only span
// (tracetest.SpanStub's snapshot): a tracer would keep a live span,
// lock it, sample it, copy and deduplicate its attributes and snapshot
// it at its end, which is work without purpose for a span that is
// never live and costs more than the rest of its export.
type builder struct {
	res    *resource.Resource
	scope  instrumentation.Scope
	out    func(sdktrace.ReadOnlySpan)
	ids    *rand.ChaCha8
	origin string
	dec    record.Decoder
	slot   record.Slot // each line decodes into it: no allocation for intents and outcomes
	book   *calls.Book[*session, *callData]
	meters *meters // nil: no metrics
}

// scopeName is the instrumentation scope of every span and metric.
const scopeName = "github.com/aegisrelay/aegis/internal/otelexport"

func newBuilder(res *resource.Resource, out func(sdktrace.ReadOnlySpan), origin string, m *meters) *builder {
	var seed [32]byte
	crand.Read(seed[:]) // never fails (crypto/rand)
	b := &builder{res: res, scope: instrumentation.Scope{Name: scopeName}, out: out, ids: rand.NewChaCha8(seed),
		origin: origin, meters: m}
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
	// The record aliases line and the slot until the next line: what a
	// call keeps is copied out (newCallData; the model copies its ids).
	if err := b.dec.DecodeInto(&b.slot, line); err != nil {
		return // the journal's own line: it decodes
	}
	r := b.slot.Record()
	m := mark{seq: r.Seq, ts: r.TS, digest: sha256.Sum256(line), ok: true}
	if r.Seq == 0 && b.origin == "" {
		b.origin = tlog.Origin(line)
	}
	var data *callData
	if in, ok := r.Body.(*record.Intent); ok {
		data = newCallData(in, m)
	}
	s := b.book.Enter(r)
	if s == nil {
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
		}
	}
	b.book.Settle()
}

func newCallData(in *record.Intent, m mark) *callData {
	d := &callData{verdict: in.Verdict, rule: in.Rule, set: in.Set, policyReason: in.PolicyReason, principal: in.Principal,
		rounds: []round{{intent: m, n: 1}}}
	if d.verdict == "" {
		d.verdict = record.VerdictPassThrough
	}
	if in.HasTool {
		d.tool = string(in.Tool)
		if in.ToolLen > 0 {
			d.tool += "…"
		}
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
		d.id, d.hasID = string(in.Call.Text), true
		if in.Call.Len > 0 {
			d.id += "…"
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
	name := Method
	if d.tool != "" {
		name += " " + d.tool
	}
	sid := ""
	if s.Data != nil {
		sid = s.Data.sid
	} else {
		sid = hex.EncodeToString(s.SID[:])
	}
	attrs := append(make([]attribute.KeyValue, 0, 24),
		attribute.String("mcp.method.name", Method),
		attribute.String("gen_ai.operation.name", "execute_tool"),
		attribute.String("aegis.session", sid),
		attribute.Int64("aegis.record.seq", int64(first.seq)),
		attribute.String("aegis.record.digest", first.digestText()),
		attribute.String("aegis.status", c.Status),
		attribute.String("aegis.policy.verdict", d.verdict),
	)
	if d.tool != "" {
		attrs = append(attrs, attribute.String("gen_ai.tool.name", d.tool))
	}
	if d.hasID {
		attrs = append(attrs, attribute.String("jsonrpc.request.id", d.id))
	}
	rev := d.revision
	if rev == "" {
		rev = s.Revision
	}
	if rev != "" {
		attrs = append(attrs, attribute.String("mcp.protocol.version", rev))
	}
	if final.ok {
		attrs = append(attrs, attribute.Int64("aegis.outcome.seq", int64(final.seq)), attribute.String("aegis.outcome.digest", final.digestText()))
	}
	if c.Reason != "" {
		attrs = append(attrs, attribute.String("aegis.reason", c.Reason))
	}
	if d.rule != "" {
		attrs = append(attrs, attribute.String("aegis.policy.rule", d.rule))
	}
	if d.set != "" {
		attrs = append(attrs, attribute.String("aegis.policy.set", d.set))
	}
	if b.origin != "" {
		attrs = append(attrs, attribute.String("aegis.log.origin", b.origin))
	}
	if ss := s.Data; ss != nil {
		transport := "pipe"
		if ss.transport == record.TransportHTTP {
			transport = "tcp"
			attrs = append(attrs, attribute.String("network.protocol.name", "http"))
		}
		attrs = append(attrs, attribute.String("network.transport", transport), attribute.String("aegis.durability", ss.durability))
		if ss.name != "" {
			attrs = append(attrs, attribute.String("aegis.server", ss.name))
		}
		if d.principal == "" {
			d.principal = ss.principal
		}
	}
	if d.principal != "" {
		attrs = append(attrs, attribute.String("aegis.principal", d.principal))
	}
	if len(d.rounds) > 1 || d.roundsMore > 0 {
		attrs = append(attrs, attribute.Int("aegis.rounds", len(d.rounds)+d.roundsMore))
	}
	et := errorType(c.Status)
	if et != "" {
		attrs = append(attrs, attribute.String("error.type", et))
	}
	sc := b.spanContext(d.parent)
	children := 0
	if len(d.rounds) > 1 {
		for _, r := range d.rounds {
			b.roundSpan(sc, name, r)
			children++
		}
	}
	if d.taskID != "" {
		b.taskSpan(sc, name, d)
		children++
	}
	b.out(tracetest.SpanStub{Name: name, SpanContext: sc, Parent: d.parent, SpanKind: trace.SpanKindServer,
		StartTime: first.ts, EndTime: end, Attributes: attrs, Status: spanStatus(et, c.Status),
		ChildSpanCount: children, Resource: b.res, InstrumentationScope: b.scope}.Snapshot())
	b.meters.call(d, c, end.Sub(first.ts))
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

// spanStatus is the status of a span whose error.type is et.
func spanStatus(et, status string) sdktrace.Status {
	if et == "" {
		return sdktrace.Status{}
	}
	return sdktrace.Status{Code: codes.Error, Description: status}
}

// roundSpan is one round's child span of the call's span parent.
func (b *builder) roundSpan(parent trace.SpanContext, name string, r round) {
	attrs := []attribute.KeyValue{
		attribute.Int("aegis.round.n", r.n),
		attribute.Int64("aegis.record.seq", int64(r.intent.seq)),
		attribute.String("aegis.record.digest", r.intent.digestText()),
	}
	if r.by != "" {
		attrs = append(attrs, attribute.String("aegis.round.by", r.by))
	}
	end := r.intent.ts
	if r.outcome.ok {
		end = r.outcome.ts
		attrs = append(attrs, attribute.Int64("aegis.outcome.seq", int64(r.outcome.seq)),
			attribute.String("aegis.outcome.digest", r.outcome.digestText()), attribute.String("aegis.status", r.status))
	}
	et := errorType(r.status)
	if et != "" {
		attrs = append(attrs, attribute.String("error.type", et))
	}
	b.out(tracetest.SpanStub{Name: name + " round " + strconv.Itoa(r.n), SpanContext: b.spanContext(parent), Parent: parent,
		SpanKind: trace.SpanKindInternal, StartTime: r.intent.ts, EndTime: end, Attributes: attrs,
		Status: spanStatus(et, r.status), Resource: b.res, InstrumentationScope: b.scope}.Snapshot())
}

// taskSpan is the child span of the task a call became, from the
// outcome that made it to its end, an event per task record.
func (b *builder) taskSpan(parent trace.SpanContext, name string, d *callData) {
	attrs := []attribute.KeyValue{
		attribute.String("aegis.task.id", d.taskID),
		attribute.Int64("aegis.record.seq", int64(d.taskStart.seq)),
		attribute.String("aegis.record.digest", d.taskStart.digestText()),
	}
	end := d.taskStart.ts
	status := ""
	if n := len(d.events); n > 0 && d.events[n-1].event == record.TaskEnd {
		e := d.events[n-1]
		end, status = e.ts, e.status
		attrs = append(attrs, attribute.Int64("aegis.outcome.seq", int64(e.seq)),
			attribute.String("aegis.outcome.digest", e.digestText()), attribute.String("aegis.status", status))
	}
	if d.eventsMore > 0 {
		attrs = append(attrs, attribute.Int("aegis.task.events.more", d.eventsMore))
	}
	events := make([]sdktrace.Event, 0, len(d.events))
	for _, e := range d.events {
		ea := []attribute.KeyValue{attribute.Int64("aegis.record.seq", int64(e.seq)), attribute.String("aegis.record.digest", e.digestText())}
		if e.via != "" {
			ea = append(ea, attribute.String("aegis.task.via", e.via))
		}
		if e.status != "" {
			ea = append(ea, attribute.String("aegis.status", e.status))
		}
		events = append(events, sdktrace.Event{Name: e.event, Time: e.ts, Attributes: ea})
	}
	et := errorType(status)
	if et != "" {
		attrs = append(attrs, attribute.String("error.type", et))
	}
	b.out(tracetest.SpanStub{Name: "task " + name, SpanContext: b.spanContext(parent), Parent: parent,
		SpanKind: trace.SpanKindInternal, StartTime: d.taskStart.ts, EndTime: end, Attributes: attrs, Events: events,
		Status: spanStatus(et, status), Resource: b.res, InstrumentationScope: b.scope}.Snapshot())
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
