package otelexport

import (
	"math"
	"testing"

	"go.opentelemetry.io/otel/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
)

// TestWire: a span pspan writes reads back, with the generated types,
// as the same span made of messages: the field numbers and encodings
// are OTLP's. Each case writes into the buffer the one before used.
func TestWire(t *testing.T) {
	tid := trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	ts, err := trace.ParseTraceState("vendor=x,other=y")
	if err != nil {
		t.Fatal(err)
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{9, 9, 9, 9, 9, 9, 9, 9}, TraceFlags: trace.FlagsSampled, TraceState: ts})
	remote := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{7, 7, 7, 7, 7, 7, 7, 7}, TraceFlags: trace.FlagsSampled, Remote: true})
	local := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{5, 5, 5, 5, 5, 5, 5, 5}, TraceFlags: trace.FlagsSampled})
	str := func(k, v string) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
	}
	num := func(k string, v int64) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v}}}
	}
	long := string(make([]byte, 300)) // a length of two varint bytes
	ev := &tracepb.Span_Event{Name: "end", TimeUnixNano: 42, Attributes: []*commonpb.KeyValue{num("aegis.record.seq", 3)}}
	var p pspan
	for _, tc := range []struct {
		name   string
		parent trace.SpanContext
		kind   tracepb.Span_SpanKind
		start  int64
		build  func(p *pspan)
		want   *tracepb.Span
	}{
		{"root, error", trace.SpanContext{}, tracepb.Span_SPAN_KIND_SERVER, 1e18, func(p *pspan) {
			p.str("mcp.method.name", "tools/call")
			p.int("aegis.record.seq", 0)
			p.int("big", math.MaxInt64)
			p.int("negative", -1)
			p.str("empty", "")
			p.str("long", long)
			p.fail("host_denied")
		}, &tracepb.Span{
			Kind: tracepb.Span_SPAN_KIND_SERVER, StartTimeUnixNano: 1e18, TraceState: "vendor=x,other=y",
			Flags:      0x101,
			Attributes: []*commonpb.KeyValue{str("mcp.method.name", "tools/call"), num("aegis.record.seq", 0), num("big", math.MaxInt64), num("negative", -1), str("empty", ""), str("long", long)},
			Status:     &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: "host_denied"},
		}},
		{"remote parent", remote, tracepb.Span_SPAN_KIND_SERVER, 5, func(p *pspan) {
			p.str("gen_ai.tool.name", "read_file")
		}, &tracepb.Span{
			Kind: tracepb.Span_SPAN_KIND_SERVER, StartTimeUnixNano: 5, TraceState: "vendor=x,other=y", ParentSpanId: []byte{7, 7, 7, 7, 7, 7, 7, 7},
			Flags: 0x301, Attributes: []*commonpb.KeyValue{str("gen_ai.tool.name", "read_file")}, Status: &tracepb.Status{},
		}},
		{"local parent, event", local, tracepb.Span_SPAN_KIND_INTERNAL, 0, func(p *pspan) {
			p.event(ev)
		}, &tracepb.Span{
			Kind: tracepb.Span_SPAN_KIND_INTERNAL, TraceState: "vendor=x,other=y", ParentSpanId: []byte{5, 5, 5, 5, 5, 5, 5, 5},
			Flags: 0x101, Events: []*tracepb.Span_Event{ev}, Status: &tracepb.Status{},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p.begin(sc, tc.parent, tc.kind, "tools/call read_file", tc.start, tc.start+7)
			tc.build(&p)
			var got tracepb.ScopeSpans
			if err := proto.Unmarshal(p.appendTo(nil), &got); err != nil {
				t.Fatal(err)
			}
			want := tc.want
			want.TraceId, want.SpanId, want.Name, want.EndTimeUnixNano = tid[:], []byte{9, 9, 9, 9, 9, 9, 9, 9}, "tools/call read_file", uint64(tc.start+7)
			if len(got.Spans) != 1 {
				t.Fatalf("%d spans; want 1", len(got.Spans))
			}
			if !proto.Equal(want, got.Spans[0]) {
				t.Fatalf("span read back:\n%s\nwant:\n%s", prototext.Format(got.Spans[0]), prototext.Format(want))
			}
			if len(got.ProtoReflect().GetUnknown()) != 0 || len(got.Spans[0].ProtoReflect().GetUnknown()) != 0 {
				t.Fatal("fields OTLP does not have")
			}
		})
	}
}
