package logview

import (
	"encoding/hex"
	"fmt"
	"strings"

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
