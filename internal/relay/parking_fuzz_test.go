package relay_test

import (
	"bytes"
	"io"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/internal/approval"
	"github.com/aegisrelay/aegis/internal/gate"
	"github.com/aegisrelay/aegis/internal/policy"
	"github.com/aegisrelay/aegis/internal/relay"
	"github.com/aegisrelay/aegis/journal/record"
)

// parkingPolicy parks write_file, refuses delete_* and allows the rest.
const parkingPolicy = "version: 1\ndefault: allow\nrules:\n  - tool: write_file\n    action: approve\n  - tool: \"delete_*\"\n    action: deny\n"

// FuzzParking: over a scripted session of a client's calls and an
// approver's decisions (each two bytes of the input a step: a call the
// policy parks, allows or refuses, an approval or denial of one of the
// calls waiting, a second decision of an id already decided), no line
// reaches the child unless a recorded decision allowed exactly its bytes:
// an allowed intent with its digest, or an approved approval record
// whose request_digest is its digest and whose intent is the parked
// intent of that digest; each decision releases one line at most; a
// decided id cannot be decided again; and every parked intent has its
// outcome once the session ends.
func FuzzParking(f *testing.F) {
	f.Add([]byte{0, 0, 1, 0, 3, 0})
	f.Add([]byte{0, 1, 0, 2, 4, 1, 3, 0, 5, 0, 2, 0})
	f.Add([]byte{0, 7, 0, 7, 3, 0, 3, 0, 5, 0, 0, 9})
	fj := openFuzzJournal(f, "FuzzParking")
	pol := mustPolicy(f, parkingPolicy)
	f.Fuzz(func(t *testing.T, prog []byte) {
		if len(prog) > 2*64 {
			return
		}
		tab := approval.NewTable(time.Hour)
		var child, client lockedBuffer
		r := relay.New(relay.Config{Journal: fj.j, Gate: policy.NewGate(pol), Client: &client, Approvals: tab, Server: "s",
			Caller: gate.Caller{Principal: "uid:7"}, Clock: func() time.Time { return fuzzEpoch }})
		pr, pw := io.Pipe()
		done := make(chan error, 1)
		go func() { done <- r.Upstream(pr, &child) }()
		// send writes a line and then a blank one: io.Pipe's Write returns
		// once the relay has read it, which it does only when it has
		// handled the line before.
		send := func(line string) {
			io.WriteString(pw, line+"\n")
			io.WriteString(pw, "\n")
		}
		var decided []string
		for i := 0; i+1 < len(prog); i += 2 {
			op, arg := prog[i]%6, prog[i+1]
			id := strconv.Itoa(i)
			switch op {
			case 0:
				sep := ""
				if arg&1 != 0 {
					sep = " "
				}
				send(`{"jsonrpc":"2.0","id":` + id + `,` + sep + `"method":"tools/call","params":{"name":"write_file","arguments":{"n":` + strconv.Itoa(int(arg/2)) + `}}}`)
			case 1:
				send(tcall(id, "echo"))
			case 2:
				send(tcall(id, "delete_x"))
			case 3, 4:
				ps := tab.List()
				if len(ps) == 0 {
					break
				}
				slices.SortFunc(ps, func(a, b approval.Pending) int { return bytes.Compare([]byte(a.ID), []byte(b.ID)) })
				p := ps[int(arg)%len(ps)]
				d := approval.Decision{Verdict: record.ApprovalApproved, HasBy: true, UID: 7, User: "ann"}
				if op == 4 {
					d.Verdict, d.Reason = record.ApprovalDenied, "no"
				}
				if err := tab.Decide(p.ID, d); err != nil {
					t.Fatalf("Decide(%s, %s) = %v; want it decided", p.ID, d.Verdict, err)
				}
				decided = append(decided, p.ID)
			case 5:
				if len(decided) == 0 {
					break
				}
				again := decided[int(arg)%len(decided)]
				if err := tab.Decide(again, approval.Decision{Verdict: record.ApprovalApproved, HasBy: true, UID: 7}); err == nil {
					t.Fatalf("a second Decide of %s succeeded", again)
				}
			}
		}
		pw.Close()
		if err := <-done; err != nil {
			t.Fatalf("Upstream = %v", err)
		}
		if _, err := r.End(record.StatusUnanswered, "session ended"); err != nil {
			t.Fatalf("End = %v", err)
		}
		recs, err := fj.records()
		if err != nil {
			t.Fatalf("reading the journal back: %v", err)
		}
		allowed := map[record.Digest]int{} // lines a decision lets through, by digest
		parked := map[uint64]record.Digest{}
		answered := map[uint64]bool{}
		for _, rec := range recs {
			switch b := rec.Body.(type) {
			case *record.Intent:
				switch {
				case b.Approval != nil:
					parked[rec.Seq] = b.RequestDigest
				case b.Verdict == record.VerdictAllowed && !b.Refused:
					allowed[b.RequestDigest]++
				}
			case *record.Approval:
				if b.Decision != record.ApprovalApproved {
					break
				}
				if d, ok := parked[b.Intent]; !ok || d != b.RequestDigest || b.Grant != record.GrantPrefix+b.ID {
					t.Fatalf("approval record %+v: want the digest of parked intent seq %d and its grant", b, b.Intent)
				}
				allowed[b.RequestDigest]++
			case *record.Outcome:
				answered[b.Intent] = true
			}
		}
		for _, line := range bytes.Split([]byte(child.String()), []byte("\n")) {
			if len(line) == 0 {
				continue
			}
			d := digest(line)
			if allowed[d] == 0 {
				t.Fatalf("the child read %q, which no recorded decision allowed (or allowed fewer times)", line)
			}
			allowed[d]--
		}
		for seq := range parked {
			if !answered[seq] {
				t.Fatalf("parked intent seq %d has no outcome after End", seq)
			}
		}
	})
}
