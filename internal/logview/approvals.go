package logview

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/aegisrelay/aegis/journal/record"
)

// Approval is what a call an approve rule parked waited for: its
// approval id and, once its approval record is read, the decision, who
// made it and why. Decision is "" when no decision was recorded (the
// session ended first, or the log is cut).
type Approval struct {
	ID       string  `json:"id"`
	Seq      *uint64 `json:"seq"` // the approval record's; null: none read
	Decision string  `json:"decision,omitempty"`
	By       *By     `json:"by"` // null: no approver (an expiry, or no decision)
	Reason   string  `json:"reason,omitempty"`
}

// By is an approval's approver, as the approvals socket's peer
// credentials named them (UID, User), or as the HTTP front's approver
// token proved (Principal, set alone).
type By struct {
	UID       uint64 `json:"uid"`
	User      string `json:"user"`
	Principal string `json:"-"`
}

// MarshalJSON writes b as the record names the approver: {"uid","user"},
// or {"principal"} alone, so that a token's approver never reads as uid 0.
func (b By) MarshalJSON() ([]byte, error) {
	if b.Principal != "" {
		return json.Marshal(struct {
			Principal string `json:"principal"`
		}{b.Principal})
	}
	type plain By
	return json.Marshal(plain(b))
}

// decided takes the approval record a into the call's line.
func (a *Approval) decided(r *record.Record, b *record.Approval) {
	seq := r.Seq
	a.Seq, a.Decision, a.Reason = &seq, b.Decision, b.Reason
	if b.HasBy {
		a.By = &By{UID: b.UID, User: b.User, Principal: b.Principal}
	}
}

// mark is the approval's words in the call's STATUS column: that the call
// waited for approval, and how it was decided. The approver's name and
// reason are their own text, shown quoted when they hold anything but
// graphic characters, so that they cannot act on the terminal.
func (a *Approval) mark() string {
	s := "waited for approval: "
	switch a.Decision {
	case "":
		return s + "no decision"
	case record.ApprovalExpired:
		s += "expired"
	default:
		s += a.Decision
	}
	if a.By != nil && a.By.Principal != "" {
		s += " by " + safeText(a.By.Principal)
	} else if a.By != nil {
		s += fmt.Sprintf(" by %s (uid %d)", safeText(a.By.User), a.By.UID)
	}
	if a.Reason != "" {
		s += ": " + strconv.Quote(a.Reason)
	}
	return s
}

// safeText is s as it is when it is a plain word, else quoted.
func safeText(s string) string {
	if s == "" || strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsGraphic(r) || unicode.IsSpace(r) || r == '"' || r == '\\' }) {
		return strconv.Quote(s)
	}
	return s
}
