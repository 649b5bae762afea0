package otelexport

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	"go.opentelemetry.io/otel/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// spanAttrs is how many attributes a pspan holds without allocating:
// a call's span has at most 23.
const spanAttrs = 24

// pspan is one span in OTLP's own message types (the official
// generated ones the SDK's exporters send), with the storage of its
// attributes, ids and status beside it, so that a span built again in
// the same pspan allocates nothing: the processor hands pspans back once
// their batch is sent. The SDK's own path (a read-only span, converted
// at export into fresh messages, three or more per attribute) made the
// garbage collections telemetry cost a call more than building the span.
type pspan struct {
	s      tracepb.Span
	status tracepb.Status
	ids    [32]byte // trace id, span id, parent span id
	kvs    [spanAttrs]*commonpb.KeyValue
	kv     [spanAttrs]commonpb.KeyValue
	av     [spanAttrs]commonpb.AnyValue
	sv     [spanAttrs]commonpb.AnyValue_StringValue
	iv     [spanAttrs]commonpb.AnyValue_IntValue
}

// begin empties p for a span of sc, a child of parent when parent is
// valid, kind and name, from start to end (Unix ns).
func (p *pspan) begin(sc, parent trace.SpanContext, kind tracepb.Span_SpanKind, name string, start, end int64) {
	s := &p.s
	tid, sid := sc.TraceID(), sc.SpanID()
	copy(p.ids[:16], tid[:])
	copy(p.ids[16:24], sid[:])
	s.TraceId, s.SpanId, s.ParentSpanId = p.ids[:16], p.ids[16:24], nil
	s.TraceState = sc.TraceState().String()
	// As the SDK's exporter says it: the W3C flags, and whether the
	// parent is remote (a client's span) is known.
	s.Flags = uint32(sc.TraceFlags()) | uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK)
	if parent.IsValid() {
		psid := parent.SpanID()
		copy(p.ids[24:], psid[:])
		s.ParentSpanId = p.ids[24:]
		if parent.IsRemote() {
			s.Flags |= uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK)
		}
	}
	s.Kind, s.Name = kind, name
	s.StartTimeUnixNano, s.EndTimeUnixNano = uint64(max(0, start)), uint64(max(0, end))
	s.Attributes = p.kvs[:0]
	s.Events = nil
	p.status.Code, p.status.Message = tracepb.Status_STATUS_CODE_UNSET, ""
	s.Status = &p.status
}

// fail marks p's span an error, described by status.
func (p *pspan) fail(status string) {
	p.status.Code, p.status.Message = tracepb.Status_STATUS_CODE_ERROR, status
}

// str adds a string attribute.
func (p *pspan) str(k, v string) {
	i := len(p.s.Attributes)
	if i >= spanAttrs {
		p.s.Attributes = append(p.s.Attributes, &commonpb.KeyValue{Key: k,
			Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}})
		return
	}
	p.sv[i].StringValue = v
	p.av[i].Value = &p.sv[i]
	p.add(i, k)
}

// int adds an integer attribute.
func (p *pspan) int(k string, v int64) {
	i := len(p.s.Attributes)
	if i >= spanAttrs {
		p.s.Attributes = append(p.s.Attributes, &commonpb.KeyValue{Key: k,
			Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v}}})
		return
	}
	p.iv[i].IntValue = v
	p.av[i].Value = &p.iv[i]
	p.add(i, k)
}

func (p *pspan) add(i int, k string) {
	p.kv[i].Key, p.kv[i].Value = k, &p.av[i]
	p.kvs[i] = &p.kv[i]
	p.s.Attributes = p.kvs[:i+1]
}

// resourceProto is res in OTLP's types, made once.
func resourceProto(res *resource.Resource) *resourcepb.Resource {
	r := &resourcepb.Resource{}
	for it := res.Iter(); it.Next(); {
		kv := it.Attribute()
		r.Attributes = append(r.Attributes, &commonpb.KeyValue{Key: string(kv.Key), Value: anyValue(kv.Value)})
	}
	return r
}

// anyValue is v in OTLP's types, as the SDK's exporter converts it.
func anyValue(v attribute.Value) *commonpb.AnyValue {
	a := &commonpb.AnyValue{}
	switch v.Type() {
	case attribute.BOOL:
		a.Value = &commonpb.AnyValue_BoolValue{BoolValue: v.AsBool()}
	case attribute.INT64:
		a.Value = &commonpb.AnyValue_IntValue{IntValue: v.AsInt64()}
	case attribute.FLOAT64:
		a.Value = &commonpb.AnyValue_DoubleValue{DoubleValue: v.AsFloat64()}
	case attribute.BOOLSLICE:
		a.Value = &commonpb.AnyValue_ArrayValue{ArrayValue: arrayValue(v.AsBoolSlice(), attribute.BoolValue)}
	case attribute.INT64SLICE:
		a.Value = &commonpb.AnyValue_ArrayValue{ArrayValue: arrayValue(v.AsInt64Slice(), attribute.Int64Value)}
	case attribute.FLOAT64SLICE:
		a.Value = &commonpb.AnyValue_ArrayValue{ArrayValue: arrayValue(v.AsFloat64Slice(), attribute.Float64Value)}
	case attribute.STRINGSLICE:
		a.Value = &commonpb.AnyValue_ArrayValue{ArrayValue: arrayValue(v.AsStringSlice(), attribute.StringValue)}
	default:
		a.Value = &commonpb.AnyValue_StringValue{StringValue: v.Emit()}
	}
	return a
}

func arrayValue[T any](vs []T, value func(T) attribute.Value) *commonpb.ArrayValue {
	a := &commonpb.ArrayValue{}
	for _, v := range vs {
		a.Values = append(a.Values, anyValue(value(v)))
	}
	return a
}

// protoAttrs is kvs in OTLP's types (task events, rare: not reused).
func protoAttrs(kvs ...attribute.KeyValue) []*commonpb.KeyValue {
	out := make([]*commonpb.KeyValue, len(kvs))
	for i, kv := range kvs {
		out[i] = &commonpb.KeyValue{Key: string(kv.Key), Value: anyValue(kv.Value)}
	}
	return out
}
