package relay

import (
	"crypto/sha256"
	"slices"
	"time"

	"github.com/aegisrelay/aegis/frame"
	"github.com/aegisrelay/aegis/journal/record"
)

// Reasons of the anomalies and outcomes that rounds, tasks, server
// requests and cancellation add (package documentation, "How lines are
// judged"). Part of the format: they are written into records.
const (
	// ReasonTaskClaimed: an answer makes a call a task whose id names a
	// task still live; the table keeps the first, and the call stays in
	// flight.
	ReasonTaskClaimed = "response: its task id names a live task (a task claimed twice)"
	// ReasonTaskUnclear: a task notification that readers read
	// differently while tasks are live.
	ReasonTaskUnclear = "notification: a task status that readers read differently"
	// ReasonServerRequest: a request from the server in a session whose
	// revision is 2026-07-28 or later, where servers send none.
	ReasonServerRequest = "request from the server: the session's revision has servers send no requests"
	// ReasonAnswerAfterCancel: an answer to a call the client cancelled
	// (notifications/cancelled); relayed, as the client ignores it.
	ReasonAnswerAfterCancel = "response: answers a call the client cancelled"
	// ReasonCancelled is the reason of the outcome of a call the client
	// cancelled.
	ReasonCancelled = "the client cancelled it (notifications/cancelled)"
)

// The resultType values and task statuses the relay reads.
const (
	resultComplete      = "complete"
	resultInputRequired = "input_required"
	resultTask          = "task"

	taskWorking       = "working"
	taskInputRequired = "input_required"
	taskCompleted     = "completed"
	taskFailed        = "failed"
	taskCancelled     = "cancelled"
)

// statelessRevision is the first revision in which servers send no
// requests (multi round-trip requests replace them). Revisions are dates,
// which sort as strings.
const statelessRevision = "2026-07-28"

// stateless reports whether rev, a revision string, is statelessRevision
// or later.
func stateless(rev []byte) bool { return string(rev) >= statelessRevision }

// outcome fills r.out for the outcome of c and returns it, for the caller
// to complete and commit (commitOutcome). Called with mu held.
func (r *Relay) outcome(c *call, resp *lineDigest, status, reason string, now time.Time) *record.Outcome {
	o := &r.out
	*o = record.Outcome{Call: c.id, Intent: c.seq, Status: status, Reason: reason}
	if resp != nil {
		o.ResponseDigest, o.HasResponse = resp.get(), true
	}
	if !c.written.IsZero() && !now.IsZero() {
		o.LatencyNS = now.Sub(c.written).Nanoseconds()
	}
	return o
}

// commitOutcome appends r.out, the outcome of c, which then leaves the
// relay's memory. Called with mu held.
func (r *Relay) commitOutcome(c *call) (uint64, error) {
	seq, err := r.j.AppendHint(&r.out, answers(c.seq))
	if err != nil {
		return 0, err
	}
	r.counts.Outcomes++
	switch r.out.Status {
	case record.StatusUnanswered, record.StatusSeccompKilled, record.StatusTimeout:
		r.counts.Unanswered++
	}
	r.inFlight.release(c)
	return seq, nil
}

// callAnswered records the outcome of tools/call c, which m answers
// cleanly: its status says what the answer was (rpc_error; input_required,
// task or other by its resultType; ok or tool_error for a complete
// result). An input_required outcome issues a round (rounds.go); a task
// outcome enters the table of live tasks, unless its id names a live task
// already: then m is an anomaly (ReasonTaskClaimed) and c stays in flight.
func (r *Relay) callAnswered(c *call, m *frame.Message, st *downstream) (uint64, int, bool, string, error) {
	status := record.StatusOK
	switch rt := string(m.ResultType); {
	case m.IsError:
		status = record.StatusRPCError
	case m.HasResultType && rt == resultInputRequired:
		status = record.StatusInputRequired
	case m.HasResultType && rt == resultTask, !m.HasResultType && m.HasResultTaskID && m.ResultTaskNested:
		status = record.StatusTask
	case m.HasResultType && rt != resultComplete:
		status = record.StatusOther
	case m.ToolError:
		status = record.StatusToolError
	}
	var k *task
	if status == record.StatusTask && m.HasResultTaskID {
		if r.tasks.find(m.ResultTaskID) != nil {
			return 0, 0, false, ReasonTaskClaimed, nil
		}
		k = &task{key: string(taskKey(m.ResultTaskID)), id: boundedOf(m.ResultTaskID), intent: c.seq,
			written: c.written, v2025: !m.HasResultType}
	}
	r.inFlight.remove(c)
	round, match := c.round, c.match
	o := r.outcome(c, &st.dg, status, "", st.now)
	if m.HasResultType && !m.IsError {
		o.ResultType, o.HasResultType = record.BoundedOf(m.ResultType), true
	}
	var state [32]byte
	switch status {
	case record.StatusTask:
		if k != nil {
			o.TaskID, o.HasTaskID = k.id, true
		}
	case record.StatusInputRequired:
		if m.HasInputRequests {
			st.inputs = inputRequests(st.inputs, m)
			o.InputRequests, o.InputRequestsMore = st.inputs, m.InputRequestsN-len(m.InputRequests)
		}
		if m.HasResultState {
			state = sha256.Sum256(m.ResultState)
			o.RequestState, o.HasRequestState = state, true
		}
	}
	seq, err := r.commitOutcome(c)
	if err != nil {
		return 0, 0, false, "", err
	}
	recs := 1
	switch {
	case status == record.StatusInputRequired && m.HasResultState:
		r.rounds.add(state, true, seq, round, st.now)
	case status == record.StatusInputRequired && match != ([32]byte{}):
		r.rounds.add(match, false, seq, round, st.now)
	case k != nil:
		if ev := r.tasks.add(k); ev != nil {
			if seq, err = r.endTask(ev, record.ViaEvicted, nil, record.StatusUnfinished, st.now); err != nil {
				return 0, 0, false, "", err
			}
			recs++
		}
	}
	return seq, recs, true, "", nil
}

// inputRequests is m's inputRequests as an outcome or a task record
// writes them, in buf.
func inputRequests(buf []record.InputRequest, m *frame.Message) []record.InputRequest {
	buf = buf[:0]
	if buf == nil {
		buf = []record.InputRequest{} // present, if empty
	}
	for _, in := range m.InputRequests {
		e := record.InputRequest{Key: record.BoundedOf(in.Key)}
		if in.HasValue {
			e.Method, e.HasMethod = record.BoundedOf(in.Value), true
		}
		buf = append(buf, e)
	}
	return buf
}

// requestAnswered records what m, the clean answer to c, a request the
// relay follows without an intent, says: initialize's settles the
// session's revision (a protocol record); tasks/get's, tasks/result's and
// tasks/cancel's may end their task or say it needs input. Called with mu
// held.
func (r *Relay) requestAnswered(c *call, m *frame.Message, st *downstream) (uint64, int, error) {
	r.inFlight.remove(c)
	defer r.inFlight.release(c)
	if m.IsError && c.op != frame.OpTasksResult {
		return 0, 0, nil
	}
	switch c.op {
	case frame.OpInitialize:
		if !m.HasProtocolVersion {
			return 0, 0, nil
		}
		seq, err := r.j.Append(&record.Protocol{Revision: record.BoundedOf(m.ProtocolVersion)})
		if err != nil {
			return 0, 0, err
		}
		r.settled, r.stateless = true, stateless(m.ProtocolVersion)
		return seq, 1, nil
	case frame.OpTasksGet:
		k := r.tasks.byKey[string(c.task)]
		if k == nil || !m.HasResultStatus {
			return 0, 0, nil
		}
		return r.taskStatus(k, m.ResultStatus, m, "tasks/get", st)
	case frame.OpTasksResult:
		k := r.tasks.byKey[string(c.task)]
		if k == nil {
			return 0, 0, nil
		}
		status := record.StatusOK
		switch {
		case m.IsError:
			status = record.StatusRPCError
		case m.ToolError:
			status = record.StatusToolError
		}
		seq, err := r.endTask(k, "tasks/result", &st.dg, status, st.now)
		return seq, 1, err
	case frame.OpTasksCancel:
		k := r.tasks.byKey[string(c.task)]
		if k == nil || !m.HasResultStatus || string(m.ResultStatus) != taskCancelled {
			return 0, 0, nil
		}
		seq, err := r.endTask(k, "tasks/cancel", &st.dg, record.StatusCancelled, st.now)
		return seq, 1, err
	case opToolsList:
		return r.toolsAnswered(c, m, st)
	}
	return 0, 0, nil
}

// taskStatus records what status, a task's status that m carries (a
// tasks/get answer, a task notification), says of live task k: its end
// (on 2026-07-28 completed, failed or cancelled; on 2025-11-25 failed or
// cancelled, the result coming by tasks/result), or that it needs input
// (first seen, or with new keys). A status that changes nothing adds no
// record. Called with mu held.
func (r *Relay) taskStatus(k *task, status []byte, m *frame.Message, via string, st *downstream) (uint64, int, error) {
	if st.now.IsZero() {
		st.now = r.cfg.Clock()
	}
	end := ""
	switch string(status) {
	case taskCompleted:
		if k.v2025 {
			k.waiting = false
			return 0, 0, nil
		}
		end = record.StatusOK
		switch {
		case m.TaskHasError:
			end = record.StatusRPCError
		case m.TaskResultIsError:
			end = record.StatusToolError
		}
	case taskFailed:
		end = record.StatusFailed
	case taskCancelled:
		end = record.StatusCancelled
	case taskInputRequired:
		st.keys = st.keys[:0]
		for _, in := range m.InputRequests {
			st.keys = append(st.keys, in.Key)
		}
		fresh := k.newKeys(st.keys)
		if k.waiting && !fresh {
			return 0, 0, nil
		}
		k.waiting = true
		t := &r.tk
		*t = record.Task{TaskID: k.id, Intent: k.intent, Event: record.TaskInputRequired, Via: via,
			Digest: st.dg.get(), HasDigest: true}
		st.inputs = inputRequests(st.inputs, m)
		t.InputRequests, t.InputRequestsMore = st.inputs, m.InputRequestsN-len(m.InputRequests)
		seq, err := r.j.Append(t)
		return seq, 1, err
	default:
		k.waiting = false
		return 0, 0, nil
	}
	seq, err := r.endTask(k, via, &st.dg, end, st.now)
	return seq, 1, err
}

// endTask appends the end of live task k, carried by via (a line, whose
// digest d is, or nil for an unfinished task), and forgets k. Called with
// mu held.
func (r *Relay) endTask(k *task, via string, d *lineDigest, status string, now time.Time) (uint64, error) {
	if k.prev != nil || k.next != nil || r.tasks.head == k {
		r.tasks.remove(k)
	}
	t := &r.tk
	*t = record.Task{TaskID: k.id, Intent: k.intent, Event: record.TaskEnd, Via: via, Status: status}
	if d != nil {
		t.Digest, t.HasDigest = d.get(), true
	}
	if !k.written.IsZero() && !now.IsZero() {
		t.LatencyNS = now.Sub(k.written).Nanoseconds()
	}
	return r.j.Append(t)
}

// taskNotice records what a task notification from the child
// (notifications/tasks, notifications/tasks/status) says of a live task.
// One that readers read differently while tasks are live is an anomaly.
// Called with mu held.
func (r *Relay) taskNotice(m *frame.Message, clean bool, st *downstream) (uint64, int, string, error) {
	if r.tasks.n == 0 {
		return 0, 0, "", nil
	}
	if !clean || m.Malformed != "" {
		if m.Malformed != "" {
			return 0, 0, m.Malformed, nil
		}
		return 0, 0, ReasonTaskUnclear, nil
	}
	if !m.HasTaskID || !m.HasStatus {
		return 0, 0, "", nil
	}
	k := r.tasks.find(m.TaskID)
	if k == nil {
		return 0, 0, "", nil
	}
	via := "notifications/tasks"
	if m.Op == frame.OpTaskStatus {
		via = "notifications/tasks/status"
	}
	seq, n, err := r.taskStatus(k, m.Status, m, via, st)
	return seq, n, "", err
}

// serverRequest records a request from the child (a server_request, with
// the tools/calls then in flight) and remembers it for the client's
// answer. Under a revision where servers send no requests it is an
// anomaly too (ReasonServerRequest). Called with mu held.
func (r *Relay) serverRequest(m *frame.Message, st *downstream) (uint64, int, string, error) {
	s := &record.ServerRequest{Call: callOf(m), Method: record.BoundedOf(m.Method), ResponseDigest: st.dg.get()}
	s.Calls, s.CallsMore = r.callsInFlight()
	seq, err := r.j.Append(s)
	if err != nil {
		return 0, 0, "", err
	}
	if m.HasID && m.ID.Key != nil {
		c, evicted := r.srv.add(m.ID.Key, record.Call{}, seq)
		c.op = m.Op
		if evicted != nil {
			r.srv.release(evicted)
		}
	}
	why := ""
	if r.stateless {
		why = ReasonServerRequest
	}
	return seq, 1, why, nil
}

// callsInFlight returns the seqs of the intents of the calls in flight:
// the tools/calls awaiting their answer and those whose task is live, in
// the order of their intents, at most record.MaxListEntries, and how many
// more there are.
func (r *Relay) callsInFlight() ([]uint64, int) {
	var all []uint64
	for _, list := range r.inFlight.byKey {
		for _, c := range list {
			if c.op == frame.OpToolsCall {
				all = append(all, c.seq)
			}
		}
	}
	for k := r.tasks.head; k != nil; k = k.next {
		all = append(all, k.intent)
	}
	slices.Sort(all)
	n := min(len(all), record.MaxListEntries)
	return slices.Clip(all[:n]), len(all) - n
}

// actionOf is an elicitation answer's action as records write it: one of
// the three MCP names, else "" (null).
func actionOf(v []byte) string {
	switch string(v) {
	case record.ActionAccept:
		return record.ActionAccept
	case record.ActionDecline:
		return record.ActionDecline
	case record.ActionCancel:
		return record.ActionCancel
	}
	return ""
}

// recordRequestsOther records what the messages of a client's line, one
// JSON value every reader reads alike and relayed, say besides its
// tools/calls: a declared revision; initialize and the task requests
// naming a live task, followed to their answers; tasks/update and
// tasks/cancel (task records); notifications/cancelled naming a
// tools/call in flight (its cancelled outcome, before the notification
// reaches the child); the client's answer to a server request. r.mu is
// held.
func (r *Relay) recordRequestsOther(line []byte, st *upstream, last uint64, n int) (uint64, int, error) {
	f := &st.f
	var d record.Digest
	hashed := false
	dg := func() record.Digest {
		if !hashed {
			d, hashed = digest(line), true
		}
		return d
	}
	for i := range f.Msgs {
		m := &f.Msgs[i]
		if m.Malformed != "" || m.Op == frame.OpToolsCall && m.Type == frame.Request && !m.HasRevision {
			continue
		}
		if m.HasRevision && m.Type == frame.Request && !r.settled {
			r.stateless = stateless(m.Revision)
		}
		var (
			seq uint64
			rec bool
			err error
		)
		if r.followsTools(m) {
			if last, n, err = r.followTools(m, line, st, last, n); err != nil {
				return 0, 0, err
			}
			continue
		}
		switch m.Op {
		case frame.OpInitialize:
			if m.Type == frame.Request && m.ID.Key != nil {
				last, n, err = r.follow(m, st, nil, last, n)
			}
		case frame.OpTasksGet, frame.OpTasksResult, frame.OpTasksUpdate, frame.OpTasksCancel:
			if !m.HasTaskID || r.tasks.n == 0 {
				continue
			}
			k := r.tasks.find(m.TaskID)
			if k == nil {
				continue
			}
			switch m.Op {
			case frame.OpTasksUpdate:
				t := &r.tk
				*t = record.Task{TaskID: k.id, Intent: k.intent, Event: record.TaskUpdate, Via: "tasks/update", Digest: dg(), HasDigest: true}
				st.responses = inputResponses(st.responses, m)
				t.InputResponses, t.InputResponsesMore = st.responses, m.InputResponsesN-len(m.InputResponses)
				seq, err = r.j.Append(t)
				rec = true
			case frame.OpTasksCancel:
				t := &r.tk
				*t = record.Task{TaskID: k.id, Intent: k.intent, Event: record.TaskCancel, Via: "tasks/cancel", Digest: dg(), HasDigest: true}
				seq, err = r.j.Append(t)
				rec = true
			}
			if err == nil && rec {
				last, n, rec = seq, n+1, false
			}
			if err == nil && m.Type == frame.Request && m.ID.Key != nil && m.Op != frame.OpTasksUpdate {
				last, n, err = r.follow(m, st, k, last, n)
			}
		case frame.OpCancelled:
			if m.Type != frame.Notification || !m.HasCancelID || m.CancelID.Key == nil {
				continue
			}
			c := r.inFlight.find(m.CancelID.Key)
			if c == nil || c.op != frame.OpToolsCall {
				continue
			}
			r.inFlight.remove(c)
			lc, evicted := r.late.add(c.key, record.Call{}, c.seq)
			lc.cancelled = true
			if evicted != nil {
				r.late.release(evicted)
			}
			r.outcome(c, nil, record.StatusCancelled, ReasonCancelled, r.cfg.Clock())
			seq, err = r.commitOutcome(c)
			rec = true
		default:
			if m.Type != frame.Response || r.srv.n == 0 {
				continue
			}
			c := r.srv.find(m.ID.Key)
			if c == nil {
				continue
			}
			a := &record.ClientAnswer{Call: callOf(m), Request: c.seq, RequestDigest: dg(), Status: record.StatusOK}
			switch {
			case m.IsError:
				a.Status = record.StatusRPCError
			case c.op == frame.OpElicit && m.HasResultAction:
				a.Action = actionOf(m.ResultAction)
			}
			r.srv.remove(c)
			r.srv.release(c)
			seq, err = r.j.Append(a)
			rec = true
		}
		if err != nil {
			return 0, 0, err
		}
		if rec {
			last, n = seq, n+1
		}
	}
	return last, n, nil
}

// follow enters request m, which has no intent, in the table of calls in
// flight, so that its answer is judged as a call's is (answer) and read
// for what it says (requestAnswered): initialize, or a task request naming
// live task k. Called with mu held.
func (r *Relay) follow(m *frame.Message, st *upstream, k *task, last uint64, n int) (uint64, int, error) {
	c, l, err := r.enter(m, st, record.Call{}, 0, last)
	if err != nil {
		return 0, 0, err
	}
	c.op = m.Op
	if k != nil {
		c.task = append(c.task[:0], k.key...)
	}
	if l != last {
		n++ // the outcome of a call evicted to make room
	}
	return l, n, nil
}
