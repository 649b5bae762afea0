package journal

// Path marks: the steps of a record's way through the journal that a
// build with the tag aegispathtrace stamps (pathtrace_on.go), for the
// durability profile (bench/cmd/syncpath). In the product's build mark
// is empty (pathtrace_off.go) and costs nothing.

type pathMark uint8

const (
	markAppend pathMark = iota
	markWait
	markLead
	markEncoded
	markWritten
	markSynced
	markRelocked
	markReturn
	markSignStart
	markSignEnd
	markZeroStart
	markZeroEnd
	markCarried
	markAsk
	markAsked
)

var markNames = [...]string{"append", "wait", "lead", "encoded", "written", "synced", "relocked", "return", "sign-start", "sign-end", "zero-start", "zero-end", "carried", "ask", "asked"}
