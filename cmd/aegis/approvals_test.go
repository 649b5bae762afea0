package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/internal/approval"
	"github.com/aegisrelay/aegis/internal/relay"
	"github.com/aegisrelay/aegis/journal/record"
)

const approvePolicy = "version: 1\ndefault: allow\nrules:\n  - tool: write_file\n    action: approve\n"

// approvals runs an approvals command against the socket of the wrap
// recording to f.audit and returns its exit code, stdout and stderr.
func (f *fixture) approvals(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(aegisBin, append(args, "--socket", approval.SocketPath(f.audit))...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	runBounded(t, cmd, 30*time.Second)
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

// waiting returns the one call aegis approvals --json lists.
func (f *fixture) waiting(t *testing.T) approval.Pending {
	t.Helper()
	code, out, errs := f.approvals(t, "approvals", "--json")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 1 {
		t.Fatalf("aegis approvals --json = exit %d\n%s%s; want one waiting call", code, out, errs)
	}
	var p approval.Pending
	if err := json.Unmarshal([]byte(lines[0]), &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestApprovals drives approvals through the real binary over stdio: an
// approve rule parks a call while a later allowed call is answered; aegis
// approvals lists it with its arguments escaped; aegis approve releases
// exactly the parked bytes to the child, once (a second approve or a deny
// of the same id fails); aegis deny refuses the client APPROVAL_DENIED with
// the reason; a call still parked when the session ends gets an outcome
// that says so; the records name the approver and the grant, and verify
// says VALID.
func TestApprovals(t *testing.T) {
	f := newFixture(t)
	path, set := f.writePolicy(t, "policy.yaml", approvePolicy)
	childLog := f.dir + "/child.log"
	s := f.start(t, []string{"--policy", path, "--name", "files", "--approval-timeout", "10m"}, []string{"AEGIS_TEST_LOG=" + childLog}, policyChildArgv()...)

	// Spacing and escapes the relay must not touch; a right-to-left
	// override, raw, that a terminal would obey if printed as it is.
	first := `{"jsonrpc":"2.0", "id":1,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"/srv/a","text":"\u0061\u001b[2J\u00e9 ‮txt.exe"}}}`
	s.send(first)
	s.send(call("2", "echo"))
	if got := s.recv(); got != ran("2", "echo") {
		t.Fatalf("a later allowed call: client read %s; want it answered while 1 waits", got)
	}
	code, table, errs := f.approvals(t, "approvals")
	if code != 0 || !strings.Contains(table, `"write_file"`) || !strings.Contains(table, "files") || strings.Contains(table, "\u202e") ||
		!strings.Contains(table, `\u202e`) || !strings.Contains(table, "uid:"+strconv.Itoa(os.Getuid())) {
		t.Fatalf("aegis approvals = exit %d\n%s%s\nwant the call listed with its server, caller and escaped arguments", code, table, errs)
	}
	p := f.waiting(t)
	if code, out, errs := f.approvals(t, "approve", p.ID); code != 0 {
		t.Fatalf("aegis approve = exit %d: %s%s", code, out, errs)
	}
	if got := s.recv(); got != ran("1", "write_file") {
		t.Fatalf("after approve: client read %s; want the child's answer to 1", got)
	}
	for _, op := range []string{"approve", "deny"} {
		if code, _, errs := f.approvals(t, op, p.ID); code != 1 || !strings.Contains(errs, "already decided") {
			t.Errorf("a second %s of %s = exit %d (%s); want 1, already decided", op, p.ID, code, errs)
		}
	}

	third := call("3", "write_file")
	s.send(third)
	s.send(call("4", "echo"))
	if got := s.recv(); got != ran("4", "echo") {
		t.Fatalf("client read %s; want 4 answered while 3 waits", got)
	}
	denied := f.waiting(t)
	if code, out, errs := f.approvals(t, "deny", denied.ID, "--reason", `not on "prod"`); code != 0 {
		t.Fatalf("aegis deny = exit %d: %s%s", code, out, errs)
	}
	if got, want := s.recv(), refusal("3", relay.CodeApprovalDenied, "rules[0] write_file", `,"reason":"not on \"prod\""`); got != want {
		t.Fatalf("after deny: client read\n%s\nwant\n%s", got, want)
	}
	if code, _, errs := f.approvals(t, "approve", denied.ID); code != 1 {
		t.Errorf("approve after deny = exit %d (%s); want 1", code, errs)
	}

	fifth := call("5", "write_file")
	s.send(fifth)
	s.send(call("6", "echo"))
	if got := s.recv(); got != ran("6", "echo") {
		t.Fatalf("client read %s; want 6", got)
	}
	s.stdin.Close()
	if code := s.wait(30 * time.Second); code != 0 {
		t.Fatalf("wrap exit %d (%s)", code, s.stderr)
	}
	if _, err := os.Lstat(approval.SocketPath(f.audit)); err == nil {
		t.Errorf("the approvals socket is left after wrap exited")
	}

	// The child received the parked line byte for byte, and nothing of
	// the denied or the ended one.
	got, _ := os.ReadFile(childLog)
	if !strings.Contains(string(got), first+"\n") || strings.Contains(string(got), third) || strings.Contains(string(got), fifth) {
		t.Fatalf("child read\n%s\nwant the first line whole and neither 3 nor 5", got)
	}

	recs := f.records(t)
	var parked []*record.Intent
	seqOf := map[*record.Intent]uint64{}
	var decisions []*record.Approval
	approvalSeq := map[string]uint64{}
	for _, r := range recs {
		switch b := r.Body.(type) {
		case *record.Intent:
			if b.Approval != nil {
				parked = append(parked, b)
				seqOf[b] = r.Seq
			}
		case *record.Approval:
			decisions = append(decisions, b)
			approvalSeq[b.ID] = r.Seq
		}
	}
	if len(parked) != 3 || len(decisions) != 2 {
		t.Fatalf("%d parked intents and %d approval records; want 3 and 2", len(parked), len(decisions))
	}
	for _, in := range parked {
		a := in.Approval
		if in.Verdict != record.VerdictPendingApproval || in.Refused || in.Set != set || a.Server != "files" ||
			a.Caller != "uid:"+strconv.Itoa(os.Getuid()) || a.TimeoutMS != 600000 || len(a.ID) != 16 {
			t.Errorf("parked intent %+v terms %+v", in, a)
		}
	}
	uid := uint64(os.Getuid())
	ok := decisions[0].ID == p.ID && decisions[0].Decision == record.ApprovalApproved && decisions[0].Grant == record.GrantPrefix+p.ID &&
		decisions[0].HasBy && decisions[0].UID == uid && decisions[0].Intent == seqOf[parked[0]] && decisions[0].RequestDigest == lineDigest(first)
	if !ok {
		t.Errorf("approval record %+v; want approved by uid %d, grant approval:%s, for intent %d", decisions[0], uid, p.ID, seqOf[parked[0]])
	}
	if d := decisions[1]; d.ID != denied.ID || d.Decision != record.ApprovalDenied || d.Grant != record.GrantDenyAll || d.Reason != `not on "prod"` || d.UID != uid {
		t.Errorf("denial record %+v", d)
	}
	out1, out3, out5 := outcomeOf(recs, seqOf[parked[0]]), outcomeOf(recs, seqOf[parked[1]]), outcomeOf(recs, seqOf[parked[2]])
	if out1 == nil || out1.Status != record.StatusOK {
		t.Errorf("approved call's outcome %+v; want ok", out1)
	}
	if out3 == nil || out3.Status != record.StatusHostDenied || out3.Reason != relay.ReasonApprovalDenied {
		t.Errorf("denied call's outcome %+v", out3)
	}
	if out5 == nil || out5.Status != record.StatusHostDenied || out5.Reason != relay.ReasonApprovalEnded {
		t.Errorf("ended call's outcome %+v", out5)
	}
	for _, r := range recs {
		if o, isOut := r.Body.(*record.Outcome); isOut && o.Intent == seqOf[parked[0]] && r.Seq < approvalSeq[p.ID] {
			t.Errorf("the approved call's outcome (seq %d) comes before its approval (seq %d)", r.Seq, approvalSeq[p.ID])
		}
	}
	f.mustVerify(t, 0)

	// aegis log says which calls waited for approval and how each was
	// decided, and by whom.
	logOut, err := exec.Command(aegisBin, "log", f.audit).CombinedOutput()
	if err != nil {
		t.Fatalf("aegis log: %v\n%s", err, logOut)
	}
	by := fmt.Sprintf(" by %s (uid %d)", decisions[0].User, uid)
	for _, w := range []string{
		"ok [waited for approval: approved" + by + "]",
		"host_denied (not executed: approval denied) [waited for approval: denied" + by + `: "not on \"prod\""]`,
		"host_denied (not executed: the session ended awaiting approval) [waited for approval: no decision]",
	} {
		if !strings.Contains(string(logOut), w) {
			t.Errorf("aegis log:\n%s\nwant a call saying %s", logOut, w)
		}
	}
}

// TestApprovalTimeout: a parked call nobody decides is refused
// APPROVAL_TIMEOUT once --approval-timeout passes, recorded expired with
// no approver, and verify says VALID.
func TestApprovalTimeout(t *testing.T) {
	f := newFixture(t)
	path, _ := f.writePolicy(t, "policy.yaml", approvePolicy)
	childLog := f.dir + "/child.log"
	s := f.start(t, []string{"--policy", path, "--approval-timeout", "300ms"}, []string{"AEGIS_TEST_LOG=" + childLog}, policyChildArgv()...)
	s.send(call("1", "write_file"))
	if got, want := s.recv(), refusal("1", relay.CodeApprovalTimeout, "rules[0] write_file"); got != want {
		t.Fatalf("client read\n%s\nwant\n%s", got, want)
	}
	s.send(call("2", "echo"))
	if got := s.recv(); got != ran("2", "echo") {
		t.Fatalf("client read %s; want 2", got)
	}
	s.stdin.Close()
	if code := s.wait(30 * time.Second); code != 0 {
		t.Fatalf("wrap exit %d (%s)", code, s.stderr)
	}
	if got, _ := os.ReadFile(childLog); strings.Contains(string(got), "write_file") {
		t.Fatalf("the expired call reached the child:\n%s", got)
	}
	var expired *record.Approval
	var out *record.Outcome
	for _, r := range f.records(t) {
		switch b := r.Body.(type) {
		case *record.Approval:
			expired = b
		case *record.Outcome:
			if b.Status == record.StatusHostDenied {
				out = b
			}
		}
	}
	if expired == nil || expired.Decision != record.ApprovalExpired || expired.HasBy || expired.Grant != record.GrantDenyAll {
		t.Fatalf("approval record %+v; want expired, no approver, deny_all", expired)
	}
	if out == nil || out.Reason != relay.ReasonApprovalExpired {
		t.Fatalf("outcome %+v; want host_denied, approval expired", out)
	}
	f.mustVerify(t, 0)
}

// TestApprovalsBounded: a client cannot make wrap keep its frames without
// end: past 1024 parked calls, an approve rule's call is refused at once
// PENDING_APPROVAL; the parked ones end with the session, and verify says
// VALID.
func TestApprovalsBounded(t *testing.T) {
	f := newFixture(t)
	path, _ := f.writePolicy(t, "policy.yaml", approvePolicy)
	s := f.start(t, []string{"--policy", path, "--durability", "none", "--approval-timeout", "10m"}, nil, policyChildArgv()...)
	var b strings.Builder
	for i := 1; i <= 1025; i++ {
		b.WriteString(call(strconv.Itoa(i), "write_file") + "\n")
	}
	s.send(strings.TrimSuffix(b.String(), "\n"))
	if got, want := s.recv(), refusal("1025", relay.CodePendingApproval, "rules[0] write_file"); got != want {
		t.Fatalf("client read\n%s\nwant\n%s", got, want)
	}
	s.stdin.Close()
	if code := s.wait(60 * time.Second); code != 0 {
		t.Fatalf("wrap exit %d (%s)", code, s.stderr)
	}
	ended := 0
	for _, r := range f.records(t) {
		if o, ok := r.Body.(*record.Outcome); ok && o.Reason == relay.ReasonApprovalEnded {
			ended++
		}
	}
	if ended != 1024 {
		t.Fatalf("%d calls ended parked; want 1024", ended)
	}
	f.mustVerify(t, 0)
}

// TestApprovalPolicyReload: an approval is bound to the rule set that
// parked the call: a reload that applies another one expires the call at
// once (APPROVAL_TIMEOUT, the record says why), and a later approve of its
// id releases nothing; the same call sent again parks under the new set.
func TestApprovalPolicyReload(t *testing.T) {
	f := newFixture(t)
	path, _ := f.writePolicy(t, "policy.yaml", approvePolicy)
	childLog := f.dir + "/child.log"
	s := f.start(t, []string{"--policy", path, "--approval-timeout", "10m"}, []string{"AEGIS_TEST_LOG=" + childLog}, policyChildArgv()...)
	s.send(call("1", "write_file"))
	s.send(call("2", "echo"))
	if got := s.recv(); got != ran("2", "echo") {
		t.Fatalf("client read %s; want 2", got)
	}
	p := f.waiting(t)
	newSet := replacePolicy(t, path, approvePolicy+"  - tool: search\n    action: deny\n")
	if got, want := s.recv(), refusal("1", relay.CodeApprovalTimeout, "rules[0] write_file"); got != want {
		t.Fatalf("after the reload: client read\n%s\nwant\n%s", got, want)
	}
	if code, _, errs := f.approvals(t, "approve", p.ID); code != 1 {
		t.Errorf("approve after the reload = exit %d (%s); want 1", code, errs)
	}
	s.send(call("3", "write_file"))
	s.send(call("4", "echo"))
	if got := s.recv(); got != ran("4", "echo") {
		t.Fatalf("client read %s; want 4", got)
	}
	again := f.waiting(t)
	if code, _, errs := f.approvals(t, "approve", again.ID); code != 0 {
		t.Fatalf("approve under the new set = exit %d (%s)", code, errs)
	}
	if got := s.recv(); got != ran("3", "write_file") {
		t.Fatalf("client read %s; want 3 run", got)
	}
	s.stdin.Close()
	if code := s.wait(30 * time.Second); code != 0 {
		t.Fatalf("wrap exit %d (%s)", code, s.stderr)
	}
	var reasons []string
	for _, r := range f.records(t) {
		switch b := r.Body.(type) {
		case *record.Approval:
			reasons = append(reasons, b.Decision+": "+b.Reason)
		case *record.Intent:
			if b.Approval != nil && b.Approval.ID == again.ID && b.Set != newSet {
				t.Errorf("the call sent again parked under %s; want %s", b.Set, newSet)
			}
		}
	}
	want := "expired: the policy was reloaded: the call needs a decision under the new rule set\napproved: "
	if strings.Join(reasons, "\n") != want {
		t.Errorf("approval records:\n%s\nwant\n%s", strings.Join(reasons, "\n"), want)
	}
	if got, _ := os.ReadFile(childLog); strings.Count(string(got), "write_file") != 1 {
		t.Errorf("child read\n%s\nwant write_file once (3)", got)
	}
	f.mustVerify(t, 0)
}

// TestApprovalOtherUID: an approver of another uid (nobody, 65534) cannot
// release a parked call, whichever guard stops it first: the state
// folder it cannot enter, then the socket's mode 0600, then — with the
// socket's mode opened to everyone, as a mistaken chmod would — the
// peer's uid, which the server reads with SO_PEERCRED and refuses. Each
// time the call stays parked, and the child has not seen it; root then
// approves it, and the child reads it once.
func TestApprovalOtherUID(t *testing.T) {
	if os.Getuid() != 0 {
		t.Fatal("running a command as another uid needs root: run the tests as root, as CI does")
	}
	f := newFixture(t)
	// A copy of the binary that nobody may run; the test's temporary
	// root, which holds it and f.dir, is made traversable.
	root := filepath.Dir(f.dir)
	binDir := t.TempDir()
	bin := filepath.Join(binDir, "aegis")
	data, err := os.ReadFile(aegisBin)
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{os.WriteFile(bin, data, 0o755), os.Chmod(bin, 0o755), os.Chmod(binDir, 0o755), os.Chmod(root, 0o711), os.Chmod(f.dir, 0o700)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	path, _ := f.writePolicy(t, "policy.yaml", approvePolicy)
	childLog := f.dir + "/child.log"
	line := call("1", "write_file")
	s := f.start(t, []string{"--policy", path, "--approval-timeout", "10m"}, []string{"AEGIS_TEST_LOG=" + childLog}, policyChildArgv()...)
	s.send(line)
	s.send(call("2", "echo"))
	if got := s.recv(); got != ran("2", "echo") {
		t.Fatalf("client read %s; want 2 answered while 1 waits", got)
	}
	p := f.waiting(t)
	sock := approval.SocketPath(f.audit)

	asNobody := func() (int, string) {
		cmd := exec.Command(bin, "approve", p.ID, "--socket", sock)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		runBounded(t, cmd, 30*time.Second)
		return cmd.ProcessState.ExitCode(), out.String()
	}
	for _, step := range []struct {
		guard string
		setup func() error
		want  string
	}{
		{"the state folder (0700)", func() error { return nil }, "permission denied"},
		{"the socket's mode (0600)", func() error { return os.Chmod(f.dir, 0o711) }, "permission denied"},
		{"the peer's uid (SO_PEERCRED)", func() error { return os.Chmod(sock, 0o666) }, "uid 65534 may not decide approvals here"},
	} {
		if err := step.setup(); err != nil {
			t.Fatal(err)
		}
		if code, out := asNobody(); code == 0 || !strings.Contains(out, step.want) {
			t.Fatalf("%s: aegis approve as uid 65534 = exit %d\n%s\nwant it refused: %s", step.guard, code, out, step.want)
		}
		if still := f.waiting(t); still.ID != p.ID {
			t.Fatalf("%s: after the refused approve, %s waits; want %s still parked", step.guard, still.ID, p.ID)
		}
		if got, _ := os.ReadFile(childLog); strings.Contains(string(got), "write_file") {
			t.Fatalf("%s: the child read the parked call:\n%s", step.guard, got)
		}
	}
	if !strings.Contains(s.stderr.String(), "refused a peer of uid 65534") {
		t.Errorf("wrap's stderr does not say it refused uid 65534:\n%s", s.stderr)
	}
	if code, out, errs := f.approvals(t, "approve", p.ID); code != 0 {
		t.Fatalf("aegis approve as root = exit %d: %s%s", code, out, errs)
	}
	if got := s.recv(); got != ran("1", "write_file") {
		t.Fatalf("after root's approve: client read %s; want the child's answer to 1", got)
	}
	s.stdin.Close()
	if code := s.wait(30 * time.Second); code != 0 {
		t.Fatalf("wrap exit %d (%s)", code, s.stderr)
	}
	if got, _ := os.ReadFile(childLog); strings.Count(string(got), line+"\n") != 1 {
		t.Fatalf("child read\n%s\nwant the parked line once", got)
	}
	var by []uint64
	for _, r := range f.records(t) {
		if a, ok := r.Body.(*record.Approval); ok {
			by = append(by, a.UID)
		}
	}
	if len(by) != 1 || by[0] != 0 {
		t.Fatalf("approval records by uids %v; want one, by root", by)
	}
	f.mustVerify(t, 0)
}

// TestApprovalBatch: a JSON-RPC batch holding a call an approve rule
// decides is not parked (one approval binds one call; a batch moves as
// one line): it is refused whole at once, the rule's call PENDING_APPROVAL
// and its neighbour HOST_DENIED as a refused call's sibling; nothing of it
// reaches the child; both calls' intents and outcomes are recorded, no
// intent names an approval, nothing waits, and verify says VALID.
func TestApprovalBatch(t *testing.T) {
	f := newFixture(t)
	path, _ := f.writePolicy(t, "policy.yaml", approvePolicy)
	childLog := f.dir + "/child.log"
	s := f.start(t, []string{"--policy", path, "--approval-timeout", "10m"}, []string{"AEGIS_TEST_LOG=" + childLog}, policyChildArgv()...)
	s.send("[" + call("1", "echo") + "," + call("2", "write_file") + "]")
	want := "[" + refusal("1", "HOST_DENIED", "") + "," + refusal("2", relay.CodePendingApproval, "rules[0] write_file") + "]"
	if got := s.recv(); got != want {
		t.Fatalf("the batch: client read\n%s\nwant\n%s", got, want)
	}
	s.send(call("3", "echo"))
	if got := s.recv(); got != ran("3", "echo") {
		t.Fatalf("client read %s; want 3 answered after the batch", got)
	}
	if code, out, _ := f.approvals(t, "approvals", "--json"); code != 0 || strings.TrimSpace(out) != "" {
		t.Errorf("aegis approvals --json = exit %d %q; want nothing waiting", code, out)
	}
	s.stdin.Close()
	if code := s.wait(30 * time.Second); code != 0 {
		t.Fatalf("wrap exit %d (%s)", code, s.stderr)
	}
	if b, _ := os.ReadFile(childLog); strings.Contains(string(b), "write_file") || strings.Contains(string(b), `"id":1,`) {
		t.Fatalf("the batch reached the child:\n%s", b)
	}
	recs := f.records(t)
	var verdicts, statuses []string
	for _, r := range recs {
		switch b := r.Body.(type) {
		case *record.Intent:
			if b.Approval != nil {
				t.Errorf("intent %d names an approval: a batch's call is not parked", r.Seq)
			}
			verdicts = append(verdicts, string(b.Tool)+" "+b.Verdict)
		case *record.Outcome:
			statuses = append(statuses, b.Status+" "+b.Reason)
		case *record.Approval:
			t.Errorf("an approval record (seq %d) for a batch", r.Seq)
		}
	}
	t.Logf("intents %q, outcomes %q", verdicts, statuses)
	if len(verdicts) != 3 || len(statuses) != 3 || !strings.HasPrefix(statuses[0], record.StatusHostDenied) || !strings.HasPrefix(statuses[1], record.StatusHostDenied) {
		t.Errorf("intents %q, outcomes %q; want three calls, the batch's two host_denied", verdicts, statuses)
	}
	f.mustVerify(t, 0)
}
