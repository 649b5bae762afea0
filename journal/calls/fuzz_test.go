package calls

import (
	"testing"
	"time"

	"github.com/aegisrelay/aegis/journal/record"
)

// FuzzBook: no sequence of records, however its links point (a log
// verify reads may be anyone's), makes a Book panic, and every call it
// reports is one the records made: after Close, each call it returned is
// done, and no outcome is answered by two rounds. Each 4 bytes of the
// input are a record: its kind, its session (one of two), and two small
// numbers its links and ids are made of.
func FuzzBook(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 1, 0, 1, 0, 2, 0, 1, 1, 1, 0, 2, 0, 2, 0, 3, 0, 3, 0, 4, 0, 9, 0, 0, 0})
	f.Add([]byte{0, 0, 0, 0, 1, 0, 1, 0, 2, 0, 1, 2, 5, 0, 1, 7, 5, 0, 1, 7, 9, 0, 0, 0})
	f.Add([]byte{0, 0, 0, 0, 0, 1, 0, 0, 1, 1, 1, 0, 6, 0, 0, 0, 7, 0, 5, 0, 1, 1, 1, 3, 2, 1, 3, 1, 10, 0, 0, 0})
	// A call parked for approval, approved (its grant), then answered; a
	// second one denied with the wrong grant and answered ok.
	f.Add([]byte{0, 0, 0, 0, 11, 0, 0, 1, 12, 0, 1, 1, 3, 0, 2, 1, 11, 0, 0, 2, 12, 0, 1, 0x42, 3, 0, 2, 2, 9, 0, 0, 0})
	decisions := []string{record.ApprovalApproved, record.ApprovalDenied, record.ApprovalExpired, "x"}
	statuses := []string{record.StatusOK, record.StatusInputRequired, record.StatusTask, record.StatusToolError, record.StatusCancelled, record.StatusOther}
	bys := []string{record.RoundByState, record.RoundByMatch, record.RoundUnknownState, record.RoundReusedState, "", "x"}
	events := []string{record.TaskEnd, record.TaskInputRequired, record.TaskUpdate, record.TaskCancel}
	f.Fuzz(func(t *testing.T, data []byte) {
		b := New[struct{}, int](Options{Exclusive: data != nil && len(data)%2 == 0, Partial: len(data)%3 == 0})
		var reported []*Call[int]
		claims := map[[2]uint64]int{}
		for i := 0; i+4 <= len(data) && i < 4*512; i += 4 {
			kind, sid, x, y := data[i]%13, data[i+1]%2, uint64(data[i+2]), data[i+3]
			seq := uint64(i / 4)
			r := &record.Record{Seq: seq, SID: [16]byte{sid}, TS: time.Unix(int64(seq), 0)}
			id := record.Call{Type: record.IDNumber, Text: []byte{'0' + y%10}}
			of := seq - min(seq, x%8) // a recent record
			task := record.BoundedOf([]byte{'T', '0' + y%3})
			switch kind {
			case 0:
				r.Kind, r.Body = record.KindSessionStart, &record.SessionStart{}
			case 1:
				r.Kind, r.Body = record.KindIntent, &record.Intent{Call: id}
			case 2:
				r.Kind, r.Body = record.KindIntent, &record.Intent{Call: id, Round: record.Round{Of: of, HasOf: y&16 != 0, By: bys[int(y/32)%len(bys)], N: 2}}
			case 3:
				r.Kind, r.Body = record.KindOutcome, &record.Outcome{Call: id, Intent: of, HasResponse: true, Status: statuses[int(y/16)%len(statuses)], TaskID: task, HasTaskID: true}
			case 4:
				r.Kind, r.Body = record.KindTask, &record.Task{TaskID: task, Intent: of, Event: events[int(y/16)%len(events)], Status: record.StatusOK}
			case 5:
				r.Kind, r.Body = record.KindServerRequest, &record.ServerRequest{Calls: []uint64{of}}
			case 6:
				r.Kind, r.Body = record.KindClientAnswer, &record.ClientAnswer{Request: of}
			case 7:
				r.Kind, r.Body = record.KindProtocol, &record.Protocol{Revision: task}
			case 8:
				r.Kind, r.Body = record.KindRecovery, &record.Recovery{}
			case 9:
				r.Kind, r.Body = record.KindSessionEnd, &record.SessionEnd{}
			case 11:
				r.Kind, r.Body = record.KindIntent, &record.Intent{Call: id, Verdict: record.VerdictPendingApproval,
					Approval: &record.ApprovalTerms{ID: approvalID(y % 4), TimeoutMS: 1}}
			case 12:
				a := &record.Approval{ID: approvalID(y % 4), Intent: of, Decision: decisions[int(y/16)%len(decisions)], Grant: record.GrantDenyAll}
				if y&64 == 0 {
					a.Grant = record.GrantPrefix + a.ID
				}
				r.Kind, r.Body = record.KindApproval, a
			case 10:
				b.Missing(seq)
				continue
			}
			_, c := b.Add(r, int(seq))
			if c != nil {
				reported = append(reported, c)
				for _, rd := range c.Rounds() {
					if rd.HasOutcome {
						claims[[2]uint64{rd.Outcome, rd.Intent}]++
					}
				}
			}
		}
		b.Close()
		answered := map[uint64]uint64{}
		for key := range claims {
			if prev, ok := answered[key[0]]; ok && prev != key[1] {
				t.Fatalf("outcome seq %d is the outcome of rounds %d and %d", key[0], prev, key[1])
			}
			answered[key[0]] = key[1]
		}
		for _, c := range reported {
			if c.t != nil && !c.Done && c != &b.answered {
				t.Fatalf("call of intent %d is not done after Close: %+v", c.Intent, *c)
			}
		}
	})
}

// approvalID is one of FuzzBook's few approval ids.
func approvalID(n byte) string { return "000000000000000" + string(rune('0'+n)) }
