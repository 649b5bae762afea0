package policy

import "go.yaml.in/yaml/v3"

// What on_tool_change says to do with a call to a tool whose definition
// differs from its pin (package pin). Part of the file format.
const (
	ToolChangeBlock = "block" // refuse it TOOL_CHANGED until aegis pin accept
	ToolChangeWarn  = "warn"  // relay it; record the change and say it on stderr
	ToolChangeAllow = "allow" // relay it; record the change
)

// DefaultToolChange is on_tool_change when the policy does not say, and
// without a policy.
const DefaultToolChange = ToolChangeWarn

// OnToolChange is the policy's on_tool_change: block, warn or allow
// (DefaultToolChange when the file does not say).
func (p *Policy) OnToolChange() string {
	if p == nil || p.onTool == "" {
		return DefaultToolChange
	}
	return p.onTool
}

// OnToolChange is the on_tool_change of the rule set the frame is decided
// under, so that a package deciding beside the policy (pin) decides the
// frame under the same file.
func (fd *frameDecider) OnToolChange() string { return fd.p.OnToolChange() }

func (p *parser) onToolChange(v *yaml.Node, pol *Policy) {
	if v == nil || pol == nil {
		return
	}
	switch s, _ := p.str(v, "on_tool_change"); s {
	case ToolChangeBlock, ToolChangeWarn, ToolChangeAllow:
		pol.onTool = s
	case "":
	default:
		p.errf(v, "on_tool_change: %q; want block, warn or allow", s)
	}
}
