// Package logview is what aegis log shows of a log: its lines, a call
// or a session line each, in the order of the records they come from,
// built from the one model of calls (package calls) as records are read.
//
// A call is one line however many records it took: its first intent,
// the rounds that retried it (MRTR, each an intent and its outcome), and
// the task it became (the task records up to its end). Its status is the
// final one (the last round's outcome, or the task's end), its latency
// from the first request to that final answer; Call.Rounds and Call.Task
// link every record it took, by seq, each round with the policy's verdict
// on its intent (every round is judged as the call it is). A call is shown once nothing more
// will be added to it: its outcome is read (and is not input_required or
// task), its task ended, or its session closed; until then the lines
// after it wait (in record order), unless Options.Follow shows each as
// soon as it is done.
//
// A call an approve rule parked says so (Call.Approval): that it waited
// for approval and how that was decided, by whom and why, from its
// approval record; the approver's own text is shown quoted where it holds
// anything but graphic characters.
//
// A session has a line where it starts, where its protocol revision is
// settled (a protocol record), and where it ends, or a line saying it has
// no end.
//
// A Printer prints the lines a View shows, as aegis log's table or one
// JSON object each. Filter reads --tool and --since into Options;
// Summarize is a line of the list of servers aegis log shows with no
// FILE; Progress is the bar log and verify draw over a large log's bytes
// on a terminal.
//
// A View is used by one goroutine. It keeps the lines not yet shown and
// the model's tables; nothing else of the records.
//
// WriteServers prints the list of servers aegis log shows with no FILE,
// as a table or as JSON.
package logview
