package otelexport

import (
	"encoding/hex"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	"go.opentelemetry.io/otel/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// The field numbers of the OTLP messages a span is written with
// (opentelemetry/proto/trace/v1/trace.proto and common/v1/common.proto;
// protobuf never renumbers a field). TestWire checks them against the
// generated types.
const (
	fieldScopeSpansSpans = 2

	fieldSpanTraceID      = 1
	fieldSpanSpanID       = 2
	fieldSpanTraceState   = 3
	fieldSpanParentSpanID = 4
	fieldSpanName         = 5
	fieldSpanKind         = 6
	fieldSpanStart        = 7
	fieldSpanEnd          = 8
	fieldSpanAttributes   = 9
	fieldSpanEvents       = 11
	fieldSpanStatus       = 15
	fieldSpanFlags        = 16

	fieldStatusMessage = 2
	fieldStatusCode    = 3

	fieldKeyValueKey   = 1
	fieldKeyValueValue = 2

	fieldAnyValueString = 1
	fieldAnyValueInt    = 3
)

// pspan is one span being written in OTLP's protobuf encoding, with
// protowire (the protobuf module's own wire encoder), as proto.Marshal
// writes a tracepb.Span: a span costs a few appends to a buffer used
// again for the next span. Built as messages, a span with its ~20
// attributes is ~70 messages that proto.Marshal walks twice (sizes,
// then bytes), which cost more than everything else of a call's
// telemetry; and the SDK's own path (a read-only span converted at
// export into fresh messages) made garbage whose collections cost as
// much again.
type pspan struct {
	body []byte // the span's fields so far
	code tracepb.Status_StatusCode
	msg  string
}

// begin starts p as a span of sc, a child of parent when parent is
// valid, of kind and name, from start to end (Unix ns).
func (p *pspan) begin(sc, parent trace.SpanContext, kind tracepb.Span_SpanKind, name string, start, end int64) {
	b := p.body[:0]
	tid, sid := sc.TraceID(), sc.SpanID()
	b = appendBytes(b, fieldSpanTraceID, tid[:])
	b = appendBytes(b, fieldSpanSpanID, sid[:])
	if ts := sc.TraceState().String(); ts != "" {
		b = appendString(b, fieldSpanTraceState, ts)
	}
	// As the SDK's exporter says it: the W3C flags, and whether the
	// parent is remote (a client's span) is known.
	flags := uint32(sc.TraceFlags()) | uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK)
	if parent.IsValid() {
		psid := parent.SpanID()
		b = appendBytes(b, fieldSpanParentSpanID, psid[:])
		if parent.IsRemote() {
			flags |= uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK)
		}
	}
	if name != "" {
		b = appendString(b, fieldSpanName, name)
	}
	if kind != 0 {
		b = protowire.AppendTag(b, fieldSpanKind, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(kind))
	}
	if start > 0 {
		b = protowire.AppendTag(b, fieldSpanStart, protowire.Fixed64Type)
		b = protowire.AppendFixed64(b, uint64(start))
	}
	if end > 0 {
		b = protowire.AppendTag(b, fieldSpanEnd, protowire.Fixed64Type)
		b = protowire.AppendFixed64(b, uint64(end))
	}
	b = protowire.AppendTag(b, fieldSpanFlags, protowire.Fixed32Type)
	p.body = protowire.AppendFixed32(b, flags)
	p.code, p.msg = tracepb.Status_STATUS_CODE_UNSET, ""
}

// fail marks p's span an error, described by status.
func (p *pspan) fail(status string) {
	p.code, p.msg = tracepb.Status_STATUS_CODE_ERROR, status
}

// str adds a string attribute: a KeyValue whose AnyValue is a
// string_value.
func (p *pspan) str(k, v string) {
	anyLen := protowire.SizeTag(fieldAnyValueString) + protowire.SizeBytes(len(v))
	b := p.keyValue(k, anyLen)
	b = appendString(b, fieldAnyValueString, v)
	p.body = b
}

// bytes adds a string attribute whose value is v's bytes, as str of
// string(v) does.
func (p *pspan) bytes(k string, v []byte) {
	anyLen := protowire.SizeTag(fieldAnyValueString) + protowire.SizeBytes(len(v))
	b := p.keyValue(k, anyLen)
	p.body = appendBytes(b, fieldAnyValueString, v)
}

// digestPrefix starts a digest's text, as spans say it: "sha256:" and
// the hex of the SHA-256.
const digestPrefix = "sha256:"

// digest adds a digest attribute, its text (digestPrefix and hex)
// written straight into the span: what str of the text writes, with no
// string made for it.
func (p *pspan) digest(k string, d *[32]byte) {
	const n = len(digestPrefix) + 2*len(d)
	anyLen := protowire.SizeTag(fieldAnyValueString) + protowire.SizeBytes(n)
	b := p.keyValue(k, anyLen)
	b = protowire.AppendTag(b, fieldAnyValueString, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(n))
	b = append(b, digestPrefix...)
	p.body = hex.AppendEncode(b, d[:])
}

// int adds an integer attribute: an AnyValue int_value.
func (p *pspan) int(k string, v int64) {
	anyLen := protowire.SizeTag(fieldAnyValueInt) + protowire.SizeVarint(uint64(v))
	b := p.keyValue(k, anyLen)
	b = protowire.AppendTag(b, fieldAnyValueInt, protowire.VarintType)
	p.body = protowire.AppendVarint(b, uint64(v))
}

// keyValue appends an attribute's KeyValue up to its AnyValue's
// fields, which are anyLen bytes.
func (p *pspan) keyValue(k string, anyLen int) []byte {
	kvLen := protowire.SizeTag(fieldKeyValueValue) + protowire.SizeBytes(anyLen)
	if k != "" {
		kvLen += protowire.SizeTag(fieldKeyValueKey) + protowire.SizeBytes(len(k))
	}
	b := protowire.AppendTag(p.body, fieldSpanAttributes, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(kvLen))
	if k != "" {
		b = appendString(b, fieldKeyValueKey, k)
	}
	b = protowire.AppendTag(b, fieldKeyValueValue, protowire.BytesType)
	return protowire.AppendVarint(b, uint64(anyLen))
}

// event adds an event, made with the generated types (task events are
// rare).
func (p *pspan) event(e *tracepb.Span_Event) {
	raw, _ := proto.Marshal(e) // a message of the generated types marshals
	p.body = appendBytes(p.body, fieldSpanEvents, raw)
}

// lens are the lengths of p's status and of its span.
func (p *pspan) lens() (statusLen, spanLen int) {
	if p.msg != "" {
		statusLen += protowire.SizeTag(fieldStatusMessage) + protowire.SizeBytes(len(p.msg))
	}
	if p.code != 0 {
		statusLen += protowire.SizeTag(fieldStatusCode) + protowire.SizeVarint(uint64(p.code))
	}
	return statusLen, len(p.body) + protowire.SizeTag(fieldSpanStatus) + protowire.SizeBytes(statusLen)
}

// size is how many bytes appendTo appends.
func (p *pspan) size() int {
	_, spanLen := p.lens()
	return protowire.SizeTag(fieldScopeSpansSpans) + protowire.SizeBytes(spanLen)
}

// appendTo appends p's span to b as a ScopeSpans' spans field.
func (p *pspan) appendTo(b []byte) []byte {
	statusLen, spanLen := p.lens()
	b = protowire.AppendTag(b, fieldScopeSpansSpans, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(spanLen))
	b = append(b, p.body...)
	// The SDK's exporter always sends a status, unset by default.
	b = protowire.AppendTag(b, fieldSpanStatus, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(statusLen))
	if p.msg != "" {
		b = appendString(b, fieldStatusMessage, p.msg)
	}
	if p.code != 0 {
		b = protowire.AppendTag(b, fieldStatusCode, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(p.code))
	}
	return b
}

func appendBytes(b []byte, num protowire.Number, v []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), v)
}

func appendString(b []byte, num protowire.Number, v string) []byte {
	return protowire.AppendString(protowire.AppendTag(b, num, protowire.BytesType), v)
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

// protoAttrs is kvs in OTLP's types (task events, rare).
func protoAttrs(kvs ...attribute.KeyValue) []*commonpb.KeyValue {
	out := make([]*commonpb.KeyValue, len(kvs))
	for i, kv := range kvs {
		out[i] = &commonpb.KeyValue{Key: string(kv.Key), Value: anyValue(kv.Value)}
	}
	return out
}
