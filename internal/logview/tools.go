package logview

import (
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/aegisrelay/aegis/internal/gate"
	"github.com/aegisrelay/aegis/internal/pin"
	"github.com/aegisrelay/aegis/journal/record"
)

// toolsLine is the line of a tools record: what a tools/list answer
// listed against the server's pins, or who accepted a changed tool.
func toolsLine(r *record.Record, b *record.Tools) *Session {
	sid := hex.EncodeToString(r.SID[:])
	ts, seq := r.TS, r.Seq
	var text string
	if b.Event == record.ToolsAccept {
		text = fmt.Sprintf("session %s at %s: tool %s accepted (%s) by %s (uid %d)", sid[:8], FormatTime(ts), b.Tool.String(), b.Digest, b.User, b.UID)
	} else {
		var parts []string
		counts := map[string]int{}
		for _, e := range b.Tools {
			switch e.Pin {
			case record.PinSame, record.PinFirst:
				counts[e.Pin]++
			case record.PinRenamed:
				parts = append(parts, e.Name.String()+" renamed from "+e.From.String())
			default:
				parts = append(parts, e.Name.String()+" "+e.Pin)
			}
		}
		for _, rm := range b.Removed {
			parts = append(parts, rm.String()+" removed")
		}
		head := fmt.Sprintf("%d tools", len(b.Tools)+b.More)
		if n := counts[record.PinSame]; n > 0 {
			head += fmt.Sprintf(", %d as pinned", n)
		}
		if n := counts[record.PinFirst]; n > 0 {
			head += fmt.Sprintf(", %d pinned now", n)
		}
		if b.NextCursor {
			head += ", more on the next page"
		}
		text = fmt.Sprintf("session %s at %s: tools/list %s", sid[:8], FormatTime(ts), head)
		if len(parts) > 0 {
			text += ": " + strings.Join(parts, ", ")
		}
	}
	return &Session{
		JSON: &SessionJSON{Type: "tools", TS: &ts, SID: sid, Seq: &seq, Note: text},
		Text: text,
		TS:   ts,
	}
}

// refusalCode is the code a refusal gave the client that the intent's
// verdict does not say: TOOL_CHANGED, for a call refused because its
// tool changed since it was pinned (its policy reason is the pin's).
func refusalCode(b *record.Intent) string {
	if b.Verdict == record.VerdictDenied && b.PolicyReason == pin.ReasonChanged {
		return gate.CodeToolChanged
	}
	return ""
}

// hint says what a person runs about c's refusal: for TOOL_CHANGED, to
// see the change and accept it, with server the session's server's name
// (wrap's --name; SERVER when the log does not say).
func (c *Call) hint(server string) {
	if c.Code != gate.CodeToolChanged || c.Tool == nil || c.ToolSHA256 != "" {
		return
	}
	if server == "" {
		server = "SERVER"
	}
	c.Hint = "aegis pin diff " + shellWord(server) + " " + shellWord(*c.Tool) + "; aegis pin accept " + shellWord(server) + " " + shellWord(*c.Tool)
}

// codeWords is what the table's POLICY column adds for c's Code and Hint.
func (c *Call) codeWords() string {
	switch {
	case c.Code == gate.CodeToolChanged && c.Hint != "":
		return " " + c.Code + " (the tool changed since it was pinned: " + c.Hint + ")"
	case c.Code == gate.CodeToolChanged:
		return " " + c.Code + " (the tool changed since it was pinned: aegis pin diff, aegis pin accept)"
	case c.Code != "":
		return " " + c.Code
	}
	return ""
}

// shellWord is s as one word a POSIX shell reads back as s: as it is
// when it holds only letters, digits and ._-/:@, else single-quoted.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/:@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
