package tlog

import "fmt"

// Report says what CheckFiles found, in the lines verify --checkpoint
// prints: one saying what the log extends (every checkpoint, or every
// whole one when a history's torn last checkpoint is all that is wrong,
// tornOnly), then one per finding. With res nil (a file that could not
// be read) the one line is err.
func Report(res *Result, err error) (lines []string, tornOnly bool) {
	if res == nil {
		return []string{fmt.Sprintf("checkpoints: %v", err)}, false
	}
	if err == nil {
		return []string{fmt.Sprintf("checkpoints: the log (%s, %d records) extends all %d", res.Origin, res.Records, res.Checkpoints)}, false
	}
	errs, torn := Findings(err)
	if torn {
		lines = append(lines, fmt.Sprintf("checkpoints: the log (%s, %d records) extends every whole checkpoint (%d)", res.Origin, res.Records, res.Checkpoints))
	}
	for _, e := range errs {
		lines = append(lines, "checkpoints: "+e.Error())
	}
	return lines, torn
}
