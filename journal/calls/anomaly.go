package calls

import "github.com/aegisrelay/aegis/journal/record"

// Kind classifies an anomaly.
type Kind int

// The anomalies a Book reports.
const (
	OutsideSession            Kind = iota // a record of no live session, nor of one that ended
	AfterEnd                              // a record of a session after its session_end
	ReusedSessionID                       // a session_start with the sid of an earlier session
	WrongSessionAfterRecovery             // a session_start after a recovery with another sid
	NoSessionAfterRecovery                // a recovery not followed by a session_start (Cut at the end of the log)
	UnknownIntent                         // an outcome for a seq that is no call of its session waiting
	CallMismatch                          // an outcome whose id is not its intent's
	CountsMismatch                        // a session_end whose counts are not the session's records
	Unanswered                            // an intent without an outcome in a session that ended
	NoEnd                                 // a session cut off without its session_end (Cut)
	RoundUnlinked                         // an intent's round.of that names no input_required outcome of its session
	RoundClaimedTwice                     // an intent's round.of that names an outcome an earlier round answers
	TaskWithoutCall                       // a task record whose intent is no call of its session that became that task
	TaskEndedTwice                        // a second end of one task
	AnswerWithoutRequest                  // a client_answer whose request is no server_request of its session
	TaskWithoutEnd                        // a task without its end at its session's session_end
	TaskIDReused                          // an outcome of status task naming the task_id of a task of its session not ended
	RequestOfNoCall                       // a server_request naming a seq that is no call of its session in flight
	ApprovalUnparked                      // an approval record naming no parked intent of its session
	ApprovalMismatch                      // an approval record whose id or request_digest is not its intent's
	ApprovalTwice                         // a second approval record of one parked call
	ApprovalReused                        // an intent parked under an approval id an earlier intent of its session holds
	ApprovalGrant                         // an approval record whose grant is not the one its decision mints
	ApprovalSkipped                       // a parked call's outcome its decision does not allow
	EgressUngranted                       // an egress record in a session whose session_start grants no egress
	EgressReused                          // an egress record whose conn an earlier one opened or ended
	EgressUnopened                        // a closing egress record whose conn no opening record of its session opened
	EgressMismatch                        // a closing egress record that does not match its opening record
	EgressInFlight                        // an egress record's in_flight naming no intent of a call of its session
	EgressUnclosed                        // an egress connection opened and not closed at its session's session_end
)

// Anomaly is a place where the records break the rules of sessions and
// calls (doc.go).
type Anomaly struct {
	Kind Kind
	// Rec is the record where it is found; nil for one found as a
	// session is cut off or the log ends. Rec is valid only during
	// OnAnomaly.
	Rec *record.Record
	// Seq is what it is about: Rec's seq, or the last seq of the session
	// cut off. HasSeq is false for one about the log as a whole.
	Seq    uint64
	HasSeq bool
	// Cut: a cut or torn tail leaves it; no other fault need be.
	Cut bool
	// Msg says what is wrong, for a person.
	Msg string
}

func (a Anomaly) String() string { return a.Msg }
