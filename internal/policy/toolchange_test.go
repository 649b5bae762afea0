package policy

import (
	"strings"
	"testing"
	"time"
)

func TestOnToolChange(t *testing.T) {
	for _, tt := range []struct {
		name, file, want, diag string
	}{
		{"absent", "version: 1\ndefault: allow\n", DefaultToolChange, ""},
		{"block", "version: 1\ndefault: allow\non_tool_change: block\n", ToolChangeBlock, ""},
		{"warn", "version: 1\ndefault: allow\non_tool_change: warn\n", ToolChangeWarn, ""},
		{"allow", "version: 1\ndefault: allow\non_tool_change: allow\n", ToolChangeAllow, ""},
		{"other", "version: 1\ndefault: allow\non_tool_change: refuse\n", "", `3:17: on_tool_change: "refuse"; want block, warn or allow`},
		{"not a string", "version: 1\ndefault: allow\non_tool_change: [block]\n", "", "on_tool_change: want a string"},
		{"twice", "version: 1\ndefault: allow\non_tool_change: allow\non_tool_change: block\n", "", "duplicate"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse("p.yaml", []byte(tt.file))
			if tt.diag != "" {
				if err == nil || !strings.Contains(err.Error(), tt.diag) {
					t.Fatalf("Parse = %v; want an error with %q", err, tt.diag)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := p.OnToolChange(); got != tt.want {
				t.Errorf("OnToolChange() = %q; want %q", got, tt.want)
			}
			if got := NewGate(p).Begin(time.Time{}).(interface{ OnToolChange() string }).OnToolChange(); got != tt.want {
				t.Errorf("decider's OnToolChange() = %q; want %q", got, tt.want)
			}
		})
	}
}
