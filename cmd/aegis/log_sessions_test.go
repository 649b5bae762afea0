package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Tests of the session lines of aegis log, through the real binary.

// logSession is a session object of log --json --sessions.
type logSession struct {
	Type          string   `json:"type"`
	SID           string   `json:"sid"`
	Argv          []string `json:"argv"`
	PolicySet     string   `json:"policy_set"`
	Confine       *bool    `json:"confine"`
	Reason        string   `json:"reason"`
	ExitCode      *int     `json:"exit_code"`
	Signal        string   `json:"signal"`
	Exit          *int     `json:"exit"`
	SeccompKilled *bool    `json:"seccomp_killed"`
	Counts        *struct {
		Intents    uint64 `json:"intents"`
		Unanswered uint64 `json:"unanswered"`
	} `json:"counts"`
	Note string `json:"note"`
}

// jsonLines decodes log --json output, one object a line.
func jsonLines(t *testing.T, out string) []logSession {
	t.Helper()
	var rows []logSession
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l == "" {
			continue
		}
		var r logSession
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("log --json line %q: %v", l, err)
		}
		rows = append(rows, r)
	}
	return rows
}

// TestLogSessionNoCalls: a log whose only session's child died before any
// call shows the session, its start and its end, not an empty table.
func TestLogSessionNoCalls(t *testing.T) {
	f := newFixture(t)
	r := runEnd(t, f, nil, nil, "", "sh", "-c", "exit 3")
	if r.exit != 3 {
		t.Fatalf("wrap = exit %d; want 3\n%s", r.exit, r.stderr)
	}
	sid := r.sid[:8]
	lines := strings.Split(strings.TrimSuffix(r.log, "\n"), "\n")
	wantStart := "session " + sid + ` started `
	wantEnd := "session " + sid + " ended "
	if len(lines) != 2 || !strings.HasPrefix(lines[0], wantStart) || !strings.HasPrefix(lines[1], wantEnd) {
		t.Fatalf("aegis log = %q; want the session's start and end lines only", lines)
	}
	for _, w := range []string{`: server sh; child sh -c "exit 3"; `, "policy pass-through (no --policy: every call forwarded)", "confinement off"} {
		if !strings.Contains(lines[0], w) {
			t.Errorf("start line %q; want %q in it", lines[0], w)
		}
	}
	if !strings.HasSuffix(lines[1], ": "+r.end.Reason+", exit 3; 0 calls") {
		t.Errorf("end line %q; want it to end %q", lines[1], ": "+r.end.Reason+", exit 3; 0 calls")
	}

	// --json prints calls only, so none; --sessions adds the session.
	if code, out, _ := runLogCmd(t, "--json", f.audit); code != 0 || out != "" {
		t.Errorf("log --json = exit %d, %q; want 0 and no call", code, out)
	}
	code, out, _ := runLogCmd(t, "--json", "--sessions", f.audit)
	rows := jsonLines(t, out)
	if code != 0 || len(rows) != 2 {
		t.Fatalf("log --json --sessions = exit %d, %d objects; want 2:\n%s", code, len(rows), out)
	}
	s, e := rows[0], rows[1]
	if s.Type != "session_start" || s.SID != r.sid || strings.Join(s.Argv, " ") != "sh -c exit 3" || s.PolicySet != "pass-through" || s.Confine == nil || *s.Confine {
		t.Errorf("session_start object %+v; want the sid, argv, pass-through, confine false", s)
	}
	if e.Type != "session_end" || e.SID != r.sid || e.ExitCode == nil || *e.ExitCode != 3 || e.Exit == nil || *e.Exit != 3 ||
		e.SeccompKilled == nil || *e.SeccompKilled || e.Counts == nil || e.Counts.Intents != 0 || e.Signal != "" {
		t.Errorf("session_end object %+v; want exit_code 3, exit 3, seccomp_killed false, 0 intents", e)
	}
	if code, _, errOut := runLogCmd(t, "--sessions", f.audit); code != 2 {
		t.Errorf("log --sessions without --json = exit %d; want 2\n%s", code, errOut)
	}
}

// TestLogSessionUnended: a session cut off before its session_end is shown
// as such, with its call still in flight as "no outcome", at the end of
// the log and when another session follows it.
func TestLogSessionUnended(t *testing.T) {
	f := newFixture(t)
	f.wrapCalls(t, toolsCall("1", "echo"))
	// The log as a crash of aegis after the intent leaves it: session_start
	// and the intent.
	data := readAudit(f.audit)
	lines := bytes.SplitAfter(data, []byte("\n"))
	if len(lines) < 4 || !bytes.Contains(lines[1], []byte(`"kind":"intent"`)) {
		t.Fatalf("log lines %q; want session_start, intent, …", lines)
	}
	if err := os.WriteFile(f.audit, bytes.Join(lines[:2], nil), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runLogCmd(t, f.audit)
	if code != 0 {
		t.Fatalf("aegis log = exit %d", code)
	}
	first := strings.Fields(out)[1]
	for _, w := range []string{
		"session " + first + " started ",
		first + "  1    1     echo  no outcome",
		"session " + first + " has no session_end: it is still running, or aegis was killed, or the log was cut",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("aegis log of a cut session lacks %q:\n%s", w, out)
		}
	}

	// The next wrap continues the log with a session of its own.
	r := runEnd(t, f, nil, nil, "", child("echo")...)
	if r.exit != 0 {
		t.Fatalf("wrap on the cut log = exit %d\n%s", r.exit, r.stderr)
	}
	second := r.sid[:8]
	order := []string{
		"session " + first + " started ",
		"no outcome",
		"session " + first + " has no session_end: aegis stopped without ending it",
		"session " + second + " started ",
		"session " + second + " ended ",
	}
	rest := r.log
	for _, w := range order {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Fatalf("aegis log lacks %q after what came before it:\n%s", w, r.log)
		}
		rest = rest[i+len(w):]
	}
	_, js, _ := runLogCmd(t, "--json", "--sessions", f.audit)
	var types []string
	for _, row := range jsonLines(t, js) {
		types = append(types, row.Type)
		if row.Type == "session_open" && !strings.HasPrefix(row.Note, "no session_end: aegis stopped without ending it") {
			t.Errorf("session_open note %q", row.Note)
		}
	}
	if got, want := strings.Join(types, " "), "session_start call session_open session_start session_end"; got != want {
		t.Errorf("log --json --sessions types = %s; want %s", got, want)
	}
}

// TestLogFollowSessions: log -f shows a session's start while it runs and
// its end once it ends.
func TestLogFollowSessions(t *testing.T) {
	f := newFixture(t)
	wrap := f.wrapCmd(nil, child("echo")...)
	stdin, err := wrap.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := wrap.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := wrap.Start(); err != nil {
		t.Fatal(err)
	}
	defer wrap.Process.Kill()
	fmt.Fprintln(stdin, toolsCall("1", "echo"))
	if _, err := bufio.NewReader(stdout).ReadString('\n'); err != nil {
		t.Fatal(err)
	}

	follow := exec.Command(aegisBin, "log", "-f", f.audit)
	out, err := follow.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		follow.Process.Kill()
		follow.Wait()
	}()
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	next := func(prefix string) string {
		t.Helper()
		deadline := time.After(20 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("log -f ended before a line %q", prefix)
				}
				if strings.HasPrefix(l, prefix) || strings.Contains(l, prefix) {
					return l
				}
			case <-deadline:
				t.Fatalf("log -f printed no line %q within 20s", prefix)
			}
		}
	}
	start := next(" started ")
	sid := strings.Fields(start)[1]
	next(sid + "  1→")
	stdin.Close()
	if err := wrap.Wait(); err != nil {
		t.Fatalf("wrap: %v", err)
	}
	if end := next("session " + sid + " ended "); !strings.Contains(end, "client_eof, exit 0; 1 call") {
		t.Errorf("log -f end line %q; want client_eof, exit 0, 1 call", end)
	}
}

// TestLogSessionPolicy: a session under --policy names its policy set;
// --tool keeps the session lines and only the calls it names.
func TestLogSessionPolicy(t *testing.T) {
	f := newFixture(t)
	pol, set := f.writePolicy(t, "policy.yaml", "version: 1\ndefault: deny\nrules:\n  - tool: echo\n    action: allow\n")
	cmd := f.wrapCmd([]string{"--policy", pol}, child("echo")...)
	cmd.Stdin = strings.NewReader(toolsCall("1", "echo") + "\n" + toolsCall("2", "rm") + "\n")
	runBounded(t, cmd, 60*time.Second)
	code, out, _ := runLogCmd(t, "--tool", "rm", f.audit)
	if code != 0 {
		t.Fatalf("aegis log = exit %d", code)
	}
	for _, w := range []string{"; policy " + set + " (--policy: each call judged by its rules); confinement off", "rm    host_denied", "; 2 calls, 1 refused"} {
		if !strings.Contains(out, w) {
			t.Errorf("aegis log --tool rm lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "  echo  ") || strings.Contains(out, "pass-through") {
		t.Errorf("aegis log --tool rm shows another call, or pass-through:\n%s", out)
	}
}

// TestLogSessionRecovery: a recovery ends every session live before it
// (the crash it answers ended them), whichever transport the session
// after it uses: a session cut off there is shown as over at the
// recovery, with its calls in flight as "no outcome", not as still
// running at the end of the log. The log is record/testdata's, whose
// second session, over HTTP, follows a recovery; the first session's
// session_end is taken out, or that and its last outcome.
func TestLogSessionRecovery(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "journal", "record", "testdata", "genuine.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	without := func(drop ...string) []byte {
		var kept [][]byte
	next:
		for _, l := range lines {
			for _, d := range drop {
				if bytes.Contains(l, []byte(d)) {
					continue next
				}
			}
			kept = append(kept, l)
		}
		return bytes.Join(kept, nil)
	}
	tests := []struct {
		name  string
		log   []byte
		want  string // in the table, before the recovery's cut
		types string // of log --json --sessions
	}{
		{"no session_end", without(`"seq":13,`), "  ok  ", "session_start call call call call call session_open session_start call session_end"},
		{"no session_end, a call in flight", without(`"seq":13,`, `"seq":12,`), "  no outcome  ", "session_start call call call call call session_open session_start call session_end"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			audit := filepath.Join(t.TempDir(), "audit.jsonl")
			if err := os.WriteFile(audit, tt.log, 0o600); err != nil {
				t.Fatal(err)
			}
			code, out, errOut := runLogCmd(t, audit)
			if code != 0 {
				t.Fatalf("aegis log = exit %d\n%s", code, errOut)
			}
			cut := "session a1010203 has no session_end: aegis stopped without ending it"
			i, j := strings.Index(out, cut), strings.Index(out, "session b2010203 started ")
			if i < 0 || j < 0 || i > j {
				t.Errorf("aegis log = %q at %d, b2010203's start at %d; want the first before the second\n%s", cut, i, j, out)
			}
			if k := strings.Index(out, tt.want); k < 0 || k > i {
				t.Errorf("aegis log = %q at %d, the cut at %d; want it before the cut\n%s", tt.want, k, i, out)
			}
			if strings.Contains(out, "still running") || strings.Contains(out, "in flight") {
				t.Errorf("aegis log shows a session still running or a call in flight:\n%s", out)
			}
			_, js, _ := runLogCmd(t, "--json", "--sessions", audit)
			var types []string
			for _, row := range jsonLines(t, js) {
				types = append(types, row.Type)
			}
			if got := strings.Join(types, " "); got != tt.types {
				t.Errorf("log --json --sessions types = %s; want %s", got, tt.types)
			}
		})
	}
}
