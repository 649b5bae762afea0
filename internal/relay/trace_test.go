package relay

import (
	"testing"
)

// TestTraceReader: a call's trace context is taken only where every
// reader reads the same: params, _meta and each key once and in no other
// case, each value of its W3C grammar; in a batch, each element's own.
func TestTraceReader(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	const tp2 = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	call := func(meta string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{` + meta + `}}}`
	}
	tests := []struct {
		name         string
		line         string
		batch        bool
		i            int
		parent, stat string
	}{
		{"both", call(`"traceparent":"` + tp + `","tracestate":"rojo=1"`), false, 0, tp, "rojo=1"},
		{"escaped", call(`"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b\u0037-01"`), false, 0, tp, ""},
		{"none", call(`"progressToken":1`), false, 0, "", ""},
		{"duplicate", call(`"traceparent":"` + tp + `","traceparent":"` + tp2 + `"`), false, 0, "", ""},
		{"case variant", call(`"traceparent":"` + tp + `","TraceParent":"` + tp2 + `"`), false, 0, "", ""},
		{"case only", call(`"TRACEPARENT":"` + tp + `"`), false, 0, "", ""},
		{"upper-case hex", call(`"traceparent":"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"`), false, 0, "", ""},
		{"not a string", call(`"traceparent":1`), false, 0, "", ""},
		{"bad tracestate", call(`"traceparent":"` + tp + `","tracestate":"Rojo=1"`), false, 0, tp, ""},
		{"tracestate twice", call(`"traceparent":"` + tp + `","tracestate":"a=1","tracestate":"b=1"`), false, 0, tp, ""},
		{"_meta twice", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"traceparent":"` + tp + `"},"_meta":{}}}`, false, 0, "", ""},
		{"params twice", `{"id":1,"params":{"_meta":{"traceparent":"` + tp + `"}},"params":{}}`, false, 0, "", ""},
		{"in a string elsewhere", `{"id":1,"params":{"name":"traceparent"}}`, false, 0, "", ""},
		{"batch element 1", "[" + call(`"traceparent":"`+tp+`"`) + "," + call(`"traceparent":"`+tp2+`"`) + "]", true, 1, tp2, ""},
		{"batch past its end", "[" + call(`"traceparent":"`+tp+`"`) + "]", true, 3, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tr traceReader
			tr.reset([]byte(tt.line))
			got := tr.of(tt.i, tt.batch)
			if string(got.Parent) != tt.parent || string(got.State) != tt.stat {
				t.Errorf("of(%d) = %q, %q; want %q, %q", tt.i, got.Parent, got.State, tt.parent, tt.stat)
			}
		})
	}
}
