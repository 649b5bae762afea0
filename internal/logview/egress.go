package logview

import (
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/aegisrelay/aegis/journal/record"
)

// EgressJSON is an egress record as --json --sessions shows it (type
// "egress"): the record's fields under its own names.
type EgressJSON struct {
	Host       string   `json:"host"`
	Port       int      `json:"port"`
	Method     string   `json:"method"`
	Addr       string   `json:"addr,omitempty"`
	Decision   string   `json:"decision"`
	Grant      string   `json:"grant,omitempty"`
	Reason     string   `json:"reason,omitempty"`
	SNI        string   `json:"sni,omitempty"`
	BytesUp    int64    `json:"bytes_up"`
	BytesDown  int64    `json:"bytes_down"`
	DurationMS int64    `json:"duration_ms"`
	InFlight   []uint64 `json:"in_flight"`
	Conn       uint64   `json:"conn,omitempty"`
	Open       bool     `json:"open,omitempty"`
}

// egressLine is the line of an egress record: a connection the confined
// child opened through the proxy, where it went or why it was refused,
// and the calls in flight then (by their intents' seqs, as the call
// lines' --json shows them).
func egressLine(r *record.Record, b *record.Egress) *Session {
	sid := hex.EncodeToString(r.SID[:])
	ts, seq := r.TS, r.Seq
	target := fmt.Sprintf("%s %s:%d", b.Method, b.Host, b.Port)
	if b.Host == "" {
		target = "an unreadable request"
	}
	var what string
	if b.Decision == record.EgressAllowed {
		what = fmt.Sprintf("allowed by %s, to %s", b.Grant, b.Addr)
		if b.SNI != "" {
			what += " (TLS to " + b.SNI + ")"
		}
		if b.Open {
			what = "opened, " + what + fmt.Sprintf(", after %d ms", b.DurationMS)
		} else {
			what += fmt.Sprintf(", %d B up, %d B down, %d ms", b.BytesUp, b.BytesDown, b.DurationMS)
		}
		if b.Reason != "" {
			what += ", ended: " + b.Reason
		}
	} else {
		what = "refused: " + b.Reason
		if b.SNI != "" {
			what += " (it named " + b.SNI + ")"
		}
	}
	during := "no call in flight"
	if len(b.InFlight) > 0 {
		seqs := make([]string, len(b.InFlight))
		for i, s := range b.InFlight {
			seqs[i] = fmt.Sprint(s)
		}
		during = "calls in flight: intents " + strings.Join(seqs, ", ")
	}
	if b.Conn > 0 {
		during += fmt.Sprintf("; connection %d", b.Conn)
	}
	return &Session{
		JSON: &SessionJSON{Type: "egress", TS: &ts, SID: sid, Seq: &seq, Egress: &EgressJSON{
			Host: b.Host, Port: b.Port, Method: b.Method, Addr: b.Addr, Decision: b.Decision, Grant: b.Grant,
			Reason: b.Reason, SNI: b.SNI, BytesUp: b.BytesUp, BytesDown: b.BytesDown, DurationMS: b.DurationMS, InFlight: b.InFlight,
			Conn: b.Conn, Open: b.Open}},
		Text: fmt.Sprintf("session %s at %s: egress %s %s; %s", sid[:8], FormatTime(ts), target, what, during),
		TS:   ts,
	}
}
