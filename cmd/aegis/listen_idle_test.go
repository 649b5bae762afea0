package main

import (
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/journal/record"
)

// TestListenIdleRecorded: wrap --listen says at start how long a session
// may go unused; a session its client leaves without DELETE ends after
// --idle-timeout with session_end reason idle, one ended by DELETE with
// client_eof, and aegis log shows each session's reason.
func TestListenIdleRecorded(t *testing.T) {
	f := newFixture(t)
	l := f.listen(t, []string{"--idle-timeout", "2s"}, child("echo")...)
	if want := "a session no request uses for 2s ends, --idle-timeout"; !strings.Contains(l.errText(), want) {
		t.Errorf("wrap --listen's start lines lack %q:\n%s", want, l.errText())
	}
	// The session to delete is deleted before the other starts, so that a
	// loaded machine's slow second start never lets it go idle first.
	deleted := l.initialize(t)
	if resp := l.request(t, "DELETE", deleted, ""); resp.StatusCode != 200 {
		t.Fatalf("DELETE = %d; want 200", resp.StatusCode)
	}
	l.initialize(t) // left to go idle
	for deadline := time.Now().Add(20 * time.Second); f.kinds(t)[record.KindSessionEnd] < 2; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("fewer than 2 session_ends 20s after one session's DELETE and the other's --idle-timeout 2s:\n%s", l.errText())
		}
	}
	l.stop(t)
	reasons := map[string]string{} // session id prefix → session_end reason
	for _, r := range f.records(t) {
		if end, ok := r.Body.(*record.SessionEnd); ok {
			reasons[hex.EncodeToString(r.SID[:])[:8]] = end.Reason
		}
	}
	var idle, eof int
	for _, reason := range reasons {
		switch reason {
		case record.EndIdle:
			idle++
		case record.EndClientEOF:
			eof++
		}
	}
	if idle != 1 || eof != 1 {
		t.Errorf("session_end reasons %v; want one %s (the session left unused) and one %s (DELETE)", reasons, record.EndIdle, record.EndClientEOF)
	}
	code, out, errOut := runLogCmd(t, f.audit)
	if code != 0 {
		t.Fatalf("aegis log = exit %d\n%s", code, errOut)
	}
	for sid, reason := range reasons {
		if reason != record.EndIdle {
			continue
		}
		_, rest, _ := strings.Cut(out, "session "+sid+" ended ")
		if line, _, _ := strings.Cut(rest, "\n"); !strings.Contains(line, reason+", exit 0") {
			t.Errorf("aegis log does not show session %s ended %s:\n%s", sid, reason, out)
		}
	}
}
