package journal

import "github.com/aegisrelay/aegis/journal/record"

// Forwarding declarations for package relay, which still names the record
// format through package journal. They are the same types and values as
// record's; delete this file once relay imports journal/record.

type (
	Anomaly      = record.Anomaly
	Body         = record.Body
	Call         = record.Call
	Counts       = record.Counts
	Decoder      = record.Decoder
	Digest       = record.Digest
	Intent       = record.Intent
	Kind         = record.Kind
	Outcome      = record.Outcome
	PolicyReload = record.PolicyReload
	Record       = record.Record
	SessionEnd   = record.SessionEnd
	SessionStart = record.SessionStart
)

const (
	EndAuditIOError       = record.EndAuditIOError
	EndChildExit          = record.EndChildExit
	EndChildStartFailed   = record.EndChildStartFailed
	EndClientEOF          = record.EndClientEOF
	EndConfinementRefused = record.EndConfinementRefused
	EndFrameTooLarge      = record.EndFrameTooLarge
	EndSignal             = record.EndSignal
	IDNull                = record.IDNull
	IDNumber              = record.IDNumber
	IDString              = record.IDString
	KindIntent            = record.KindIntent
	KindPolicyReload      = record.KindPolicyReload
	MaxValueBytes         = record.MaxValueBytes
	PassThroughSet        = record.PassThroughSet
	StatusHostDenied      = record.StatusHostDenied
	StatusOK              = record.StatusOK
	StatusRPCError        = record.StatusRPCError
	StatusSeccompKilled   = record.StatusSeccompKilled
	StatusToolError       = record.StatusToolError
	StatusUnanswered      = record.StatusUnanswered
	VerdictDenied         = record.VerdictDenied
)
