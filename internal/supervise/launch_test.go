package supervise_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/internal/exitcode"
	"github.com/aegisrelay/aegis/internal/relay"
	"github.com/aegisrelay/aegis/internal/supervise"
	"github.com/aegisrelay/aegis/journal"
	"github.com/aegisrelay/aegis/journal/record"
)

// fakeLauncher runs sh -c script and reports rep (or err) as a
// confining launcher's helper would; refuse makes Command itself refuse.
type fakeLauncher struct {
	script  string
	missing bool // the command names no file: it does not start
	refuse  error
	rep     supervise.Report
	err     error
	// What the session did with the launch.
	started, closed bool
	commands        int
}

func (l *fakeLauncher) Command(argv, env []string) (*exec.Cmd, supervise.Launch, error) {
	l.commands++
	if l.refuse != nil {
		return nil, nil, l.refuse
	}
	if l.missing {
		return exec.Command(filepath.Join(os.TempDir(), "aegis-no-such-server")), l, nil
	}
	return exec.Command("sh", "-c", l.script), l, nil
}

func (l *fakeLauncher) Started()                          { l.started = true }
func (l *fakeLauncher) Close()                            { l.closed = true }
func (l *fakeLauncher) Report() (supervise.Report, error) { return l.rep, l.err }

var errNoKernel = errors.New("confinement refused: no such kernel")

// TestLauncher: the session starts its child through the Launcher it is
// given and acts on what the launch reports, as under --confine: a
// refusal ends the session with exit 69 before anything is relayed; an
// enforcement record is durable before the first byte moves; a launch
// that cannot say what it enforced has its child killed; a seccomp filter
// makes a SIGSYS death seccomp_killed.
func TestLauncher(t *testing.T) {
	const echo = `read -r l; printf '%s\n' "$l"`
	enforced := &record.Enforcement{LandlockABI: 4, TCP: "denied", UDP: "denied", SeccompApplied: true, SeccompNetworkDenied: true}
	tests := []struct {
		name       string
		l          *fakeLauncher
		wantExit   int
		wantReason string
		// orReason: another reason as good. A child that exits on its own
		// right after reading the call races the client's EOF (a reader
		// at its end): whichever the session sees first names the end.
		orReason    string
		wantDetail  string // a part of session_end's detail
		wantKinds   string // the records after session_start
		wantRelayed bool   // the call reached the child and its answer the client
		wantSeccomp bool
	}{
		{
			name: "command refused", l: &fakeLauncher{refuse: errNoKernel},
			wantExit: exitcode.Confinement, wantReason: record.EndConfinementRefused, wantDetail: errNoKernel.Error(),
			wantKinds: "session_end",
		},
		{
			name: "command does not start", l: &fakeLauncher{missing: true},
			wantExit: exitcode.CannotStart, wantReason: record.EndChildStartFailed, wantDetail: "no such file",
			wantKinds: "session_end",
		},
		{
			name: "launch refused", l: &fakeLauncher{script: "exit 69", rep: supervise.Report{Refused: "landlock ABI 3 < 4"}},
			wantExit: exitcode.Confinement, wantReason: record.EndConfinementRefused, wantDetail: "landlock ABI 3 < 4",
			wantKinds: "session_end",
		},
		{
			name: "launch cannot tell: the child is killed", l: &fakeLauncher{script: "exec sleep 30", err: errors.New("the helper did not report")},
			wantExit: exitcode.Confinement, wantReason: record.EndConfinementRefused, wantDetail: "(helper: signal: killed)",
			wantKinds: "session_end",
		},
		{
			name: "nothing enforced", l: &fakeLauncher{script: "exit 0"},
			wantExit: exitcode.CannotStart, wantReason: record.EndChildStartFailed, wantDetail: "reported nothing enforced",
			wantKinds: "session_end",
		},
		{
			name: "enforced, then exec failed", l: &fakeLauncher{script: "exit 126", rep: supervise.Report{Enforcement: enforced, ExecError: "exec ./x: permission denied"}},
			wantExit: 126, wantReason: record.EndChildStartFailed, wantDetail: "permission denied",
			wantKinds: "enforcement session_end",
		},
		{
			name: "enforced", l: &fakeLauncher{script: echo, rep: supervise.Report{Enforcement: enforced}},
			wantExit: 0, wantReason: record.EndClientEOF, orReason: record.EndChildExit,
			// The child echoes the call: a request from the server while
			// the call runs (relay's "Server requests").
			wantKinds: "enforcement intent server_request outcome session_end", wantRelayed: true,
		},
		{
			name: "SIGSYS under a seccomp filter", l: &fakeLauncher{script: `read -r l; kill -SYS $$`, rep: supervise.Report{Enforcement: enforced, Seccomp: true}},
			wantExit: 128 + 31, wantReason: record.EndClientEOF, orReason: record.EndChildExit, wantDetail: supervise.SIGSYSFiltered, wantSeccomp: true,
			wantKinds: "enforcement intent outcome session_end",
		},
		{
			name: "SIGSYS without one", l: &fakeLauncher{script: `read -r l; kill -SYS $$`, rep: supervise.Report{Enforcement: enforced}},
			wantExit: 128 + 31, wantReason: record.EndClientEOF, orReason: record.EndChildExit, wantDetail: supervise.SIGSYSUnfiltered,
			wantKinds: "enforcement intent outcome session_end",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			seed := sha256.Sum256([]byte("aegis launcher test"))
			j, err := journal.Open(path, journal.Options{Durability: journal.Durability{Level: journal.None}, Key: ed25519.NewKeyFromSeed(seed[:])})
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			if _, err := j.Append(&record.SessionStart{Aegis: "test", Argv: []string{"sh"}, Durability: "none", PolicySet: "pass-through"}); err != nil {
				t.Fatal(err)
			}
			devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer devnull.Close()
			var client bytes.Buffer
			s := &supervise.Session{
				Relay: relay.New(relay.Config{Journal: j}), Journal: j, Launcher: tt.l,
				Argv: []string{"server"}, Grace: 5 * time.Second,
				Stdin: strings.NewReader(tcall("1", "echo") + "\n"), Stdout: &client, Stderr: devnull,
			}
			res := s.Run()
			reasonOK := res.End.Reason == tt.wantReason || tt.orReason != "" && res.End.Reason == tt.orReason
			if res.Exit != tt.wantExit || !reasonOK || !strings.Contains(res.End.Detail, tt.wantDetail) || res.End.SeccompKilled != tt.wantSeccomp {
				t.Errorf("Run() = exit %d, session_end %+v; want %d, reason %s, detail with %q, seccomp_killed %v",
					res.Exit, res.End, tt.wantExit, tt.wantReason, tt.wantDetail, tt.wantSeccomp)
			}
			runs := tt.l.refuse == nil && !tt.l.missing
			if tt.l.commands != 1 || tt.l.started != runs || tt.l.closed != tt.l.missing {
				t.Errorf("launcher: %d commands, started %v, closed %v; want 1, %v, %v", tt.l.commands, tt.l.started, tt.l.closed, runs, tt.l.missing)
			}
			if got, want := client.String(), map[bool]string{true: tcall("1", "echo") + "\n"}[tt.wantRelayed]; got != want {
				t.Errorf("the client got %q; want %q", got, want)
			}
			if err := j.Close(); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var d record.Decoder
			var kinds []string
			for _, l := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))[1:] {
				r, err := d.Decode(l)
				if err != nil {
					t.Fatalf("audit line %q: %v", l, err)
				}
				kinds = append(kinds, r.Body.Kind().String())
			}
			if got := strings.Join(kinds, " "); got != tt.wantKinds {
				t.Errorf("records after session_start = %s; want %s", got, tt.wantKinds)
			}
		})
	}
}
