//go:build linux

package confine

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
)

func TestEffectiveABI(t *testing.T) {
	const allFixed = 0b111
	tests := []struct {
		name                  string
		kernel, errata, capAt int
		want                  int
	}{
		{"this kernel", 7, allFixed, -1, 7},
		{"no landlock", 0, 0, -1, 0},
		{"newer than the library", maxKnownABI + 3, allFixed, -1, maxKnownABI},
		{"scoped signal erratum unfixed", 6, 0b101, -1, 5},
		{"scoped signal erratum unfixed, ABI 9", 9, 0b001, -1, 5},
		{"erratum 2 irrelevant below 6", 5, 0, -1, 5},
		{"test cap", 7, allFixed, 3, 3},
		{"test cap above the kernel", 7, allFixed, 9, 7},
		{"test cap 0", 7, allFixed, 0, 0},
	}
	for _, tt := range tests {
		if got := effectiveABI(tt.kernel, tt.errata, tt.capAt); got != tt.want {
			t.Errorf("%s: effectiveABI(%d, %#b, %d) = %d; want %d", tt.name, tt.kernel, tt.errata, tt.capAt, got, tt.want)
		}
	}
}

// fakeStat knows the test's paths: names ending in "/" are directories.
func fakeStat(path string) (bool, error) {
	switch path {
	case "/srv/target", "/data/file.txt", "/proc/meminfo", "/proc/cpuinfo", "/dev/null", "/dev/urandom":
		return false, nil
	case "/data", "/out", "/usr", "/etc", "/proc", "/dev", "/bin", "/lib", "/proc/42", "/proc/sys", "/":
		return true, nil
	}
	return false, os.ErrNotExist
}

func TestPlan(t *testing.T) {
	const all = 0b111
	errSeccomp := errors.New("no filter here")
	tests := []struct {
		name       string
		p          Profile
		abi        int
		errata     int
		seccompErr error
		procSelf   string // "": /proc/42
		refused    string // substring of the refusal; "" means planned
		check      func(t *testing.T, e *Enforced, pl *plan)
	}{
		{name: "bare --confine", abi: 7, errata: all, check: func(t *testing.T, e *Enforced, pl *plan) {
			wantFS(t, e, "/srv/target", "execute,read_file")
			if len(e.FS) != 1 {
				t.Errorf("fs = %v; want only the target", e.FS)
			}
			wantNet(t, e, NetDenied, NetDenied)
			if !e.SeccompApplied || !e.SeccompNetworkDenied || !e.IOURingDenied {
				t.Errorf("seccomp = %v/%v/%v; want all true", e.SeccompApplied, e.SeccompNetworkDenied, e.IOURingDenied)
			}
			if !slices.Equal(e.Scopes, []string{"abstract_unix_socket", "signal"}) {
				t.Errorf("scopes = %v; want both", e.Scopes)
			}
			if len(e.Dropped) != 0 {
				t.Errorf("dropped = %v; want none", e.Dropped)
			}
			for _, n := range e.NotCovered {
				if strings.Contains(n, "unix sockets") {
					t.Errorf("not_covered = %q; want unix sockets refused (no --allow-unix), not named", e.NotCovered)
				}
			}
			if pl.filter.unix {
				t.Errorf("filter = %+v; want unix sockets refused", pl.filter)
			}
			if pl.filter.tcp || pl.filter.udp || pl.filter.noListen || !pl.filter.noMeta {
				t.Errorf("filter = %+v; want the network and file metadata denied, listen left to the network", pl.filter)
			}
			for _, n := range e.NotCovered {
				if strings.HasPrefix(n, "file metadata") {
					t.Errorf("not_covered = %q with nothing granted write; want file metadata refused, not named", e.NotCovered)
				}
			}
		}},
		{name: "read, write, exec support", abi: 7, errata: all,
			p: Profile{Read: []string{"/data", "/data/file.txt"}, Write: []string{"/out"}, ExecSupport: true},
			check: func(t *testing.T, e *Enforced, pl *plan) {
				wantFS(t, e, "/data", "execute,read_file,read_dir")
				wantFS(t, e, "/data/file.txt", "execute,read_file")
				wantFS(t, e, "/out", "execute,write_file,read_file,read_dir,remove_dir,remove_file,make_dir,make_reg,make_sock,make_fifo,make_sym,refer,truncate")
				wantFS(t, e, "/usr", "execute,read_file,read_dir")
				// Of /proc and /dev, only the target's own /proc/PID and
				// what a runtime reads at start.
				wantFS(t, e, "/proc/42", "execute,read_file,read_dir")
				wantFS(t, e, "/proc/meminfo", "execute,read_file")
				wantFS(t, e, "/proc/sys", "execute,read_file,read_dir")
				wantFS(t, e, "/dev/null", "execute,read_file")
				for _, r := range e.FS {
					switch r.Path {
					case "/sbin", "/lib64":
						t.Errorf("fs has %s, which does not exist here", r.Path)
					case "/proc", "/dev":
						t.Errorf("fs has all of %s; want it narrowed", r.Path)
					}
				}
				if want := []string{"/proc/42", "/proc/cpuinfo", "/proc/meminfo", "/proc/sys"}; !slices.Equal(pl.pins, want) {
					t.Errorf("pins = %v; want the procfs rules %v", pl.pins, want)
				}
				if pl.filter.noMeta {
					t.Error("filter refuses file metadata calls with --allow-write; want them allowed, and named")
				}
				wantNotCovered(t, e, "file metadata: chmod, chown, extended attributes, times and inode flags of any file")
			}},
		{name: "exec support without its own /proc", abi: 7, errata: all, p: Profile{ExecSupport: true}, procSelf: "/proc/gone",
			refused: "/proc/gone"},
		{name: "read / names other processes' /proc", abi: 7, errata: all, p: Profile{Read: []string{"/"}},
			check: func(t *testing.T, e *Enforced, pl *plan) {
				wantNotCovered(t, e, "other processes' /proc files (cmdline, status; environ, maps and mem to a root child) beneath /")
				if len(pl.pins) != 0 {
					t.Errorf("pins = %v; want none (the root of /proc is never evicted)", pl.pins)
				}
			}},
		{name: "refer withheld without erratum 3", abi: 7, errata: 0b011, p: Profile{Write: []string{"/out"}},
			check: func(t *testing.T, e *Enforced, _ *plan) {
				wantFS(t, e, "/out", "execute,write_file,read_file,read_dir,remove_dir,remove_file,make_dir,make_reg,make_sock,make_fifo,make_sym,truncate")
			}},
		{name: "resolve_unix at ABI 9", abi: 9, errata: all, p: Profile{Write: []string{"/out"}},
			check: func(t *testing.T, e *Enforced, _ *plan) {
				wantFS(t, e, "/out", "execute,write_file,read_file,read_dir,remove_dir,remove_file,make_dir,make_reg,make_sock,make_fifo,make_sym,refer,truncate,resolve_unix")
				for _, n := range e.NotCovered {
					if strings.Contains(n, "pathname unix") {
						t.Errorf("not_covered = %v at ABI 9; want pathname unix sockets covered", e.NotCovered)
					}
				}
			}},
		{name: "allow-net ports", abi: 7, errata: all, p: Profile{Net: []string{"a.example:443", "127.0.0.1:80", "b.example:443"}},
			check: func(t *testing.T, e *Enforced, pl *plan) {
				wantNet(t, e, NetPorts, NetDenied)
				if !slices.Equal(e.Ports, []int{80, 443}) {
					t.Errorf("ports = %v; want [80 443]", e.Ports)
				}
				if e.SeccompNetworkDenied || !e.SeccompApplied {
					t.Errorf("seccomp applied/network denied = %v/%v; want true/false", e.SeccompApplied, e.SeccompNetworkDenied)
				}
				if !pl.filter.tcp || pl.filter.udp || !pl.filter.noListen {
					t.Errorf("filter = %+v; want tcp only, and listen refused (no bind is granted)", pl.filter)
				}
			}},
		{name: "allow-net needs ABI 4", abi: 3, errata: all, p: Profile{Net: []string{"h:443"}}, refused: "landlock ABI 3 < 4"},
		{name: "allow-net at ABI 3, best effort", abi: 3, errata: all, p: Profile{Net: []string{"h:443"}, BestEffort: true},
			check: func(t *testing.T, e *Enforced, _ *plan) {
				wantNet(t, e, NetOpen, NetDenied)
				if len(e.Ports) != 0 || len(e.Scopes) != 0 {
					t.Errorf("ports, scopes = %v, %v; want none at ABI 3", e.Ports, e.Scopes)
				}
				wantDropped(t, e, "tcp ports of --allow-net")
				wantNotCovered(t, e, "device ioctl (landlock ABI 3 < 5)")
				wantNotCovered(t, e, "signals and abstract unix sockets outside the sandbox (landlock ABI 3 < 6)")
			}},
		{name: "no truncate before ABI 3", abi: 2, errata: all, refused: "truncate"},
		{name: "ABI 2, best effort", abi: 2, errata: all, p: Profile{Write: []string{"/out"}, BestEffort: true},
			check: func(t *testing.T, e *Enforced, _ *plan) {
				wantDropped(t, e, "truncate: not restricted")
				wantFS(t, e, "/out", "execute,write_file,read_file,read_dir,remove_dir,remove_file,make_dir,make_reg,make_sock,make_fifo,make_sym,refer")
			}},
		{name: "no landlock", abi: 0, refused: "landlock: unavailable"},
		{name: "no landlock, best effort", abi: 0, p: Profile{Read: []string{"/data"}, BestEffort: true},
			check: func(t *testing.T, e *Enforced, pl *plan) {
				if len(e.FS) != 0 || len(pl.fs) != 0 || e.LandlockABI != 0 {
					t.Errorf("fs = %v at ABI 0; want nothing claimed", e.FS)
				}
				wantDropped(t, e, "landlock: unavailable")
				wantNet(t, e, NetDenied, NetDenied) // seccomp still holds
			}},
		{name: "no seccomp", abi: 7, errata: all, seccompErr: errSeccomp, refused: "seccomp: no filter here"},
		{name: "no seccomp, best effort", abi: 7, errata: all, seccompErr: errSeccomp, p: Profile{BestEffort: true},
			check: func(t *testing.T, e *Enforced, _ *plan) {
				if e.SeccompApplied || e.SeccompNetworkDenied || e.IOURingDenied {
					t.Errorf("seccomp fields = %v/%v/%v; want all false", e.SeccompApplied, e.SeccompNetworkDenied, e.IOURingDenied)
				}
				wantNet(t, e, NetDenied, NetOpen) // Landlock ABI 7 covers TCP, not UDP
				wantDropped(t, e, "seccomp: no filter here: sockets, TCP Fast Open, listen, io_uring and file metadata calls are not filtered")
			}},
		{name: "no seccomp at ABI 10", abi: 10, errata: all, seccompErr: errSeccomp, p: Profile{BestEffort: true},
			check: func(t *testing.T, e *Enforced, pl *plan) {
				wantNet(t, e, NetDenied, NetDenied)
				if pl.landlock.HandledAccessNet != 0b1111 {
					t.Errorf("handled net = %b; want TCP and UDP", pl.landlock.HandledAccessNet)
				}
			}},
		{name: "udp hole", abi: 7, errata: all, p: Profile{UDP: true},
			check: func(t *testing.T, e *Enforced, pl *plan) {
				wantNet(t, e, NetDenied, NetOpen)
				if e.SeccompNetworkDenied {
					t.Error("seccomp_network_denied with --allow-udp; want false")
				}
				wantNotCovered(t, e, "udp: every host and port")
				if pl.filter.tcp || !pl.filter.udp {
					t.Errorf("filter = %+v; want udp only", pl.filter)
				}
			}},
		{name: "udp hole at ABI 10 leaves UDP unhandled", abi: 10, errata: all, p: Profile{UDP: true},
			check: func(t *testing.T, e *Enforced, pl *plan) {
				if pl.landlock.HandledAccessNet != 0b11 {
					t.Errorf("handled net = %b; want TCP only", pl.landlock.HandledAccessNet)
				}
			}},
		{name: "missing path", abi: 7, errata: all, p: Profile{Read: []string{"/gone"}}, refused: "/gone"},
		{name: "bad port", abi: 7, errata: all, p: Profile{Net: []string{"h:0"}}, refused: "1..65535"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			procSelf := tt.procSelf
			if procSelf == "" {
				procSelf = "/proc/42"
			}
			pl, err := makePlan(tt.p, "/srv/target", procSelf, tt.abi, tt.errata, tt.seccompErr, fakeStat)
			if tt.refused != "" {
				if err == nil || !strings.Contains(err.Error(), tt.refused) {
					t.Fatalf("makePlan = %v; want a refusal mentioning %q", err, tt.refused)
				}
				return
			}
			if err != nil {
				t.Fatalf("makePlan = %v; want a plan", err)
			}
			if pl.rep.LandlockABI != tt.abi {
				t.Errorf("landlock_abi = %d; want %d", pl.rep.LandlockABI, tt.abi)
			}
			if pl.rep.BestEffort != tt.p.BestEffort {
				t.Errorf("best_effort = %v; want %v", pl.rep.BestEffort, tt.p.BestEffort)
			}
			// The plan's rules and the report agree, and every rule is
			// within what the ruleset handles (else go-landlock refuses).
			if len(pl.fs) != len(pl.rep.FS) {
				t.Errorf("%d rules planned, %d reported", len(pl.fs), len(pl.rep.FS))
			}
			for i, g := range pl.fs {
				if g.access&^pl.landlock.HandledAccessFS != 0 {
					t.Errorf("rule %s grants %b outside the handled %b", g.path, g.access, pl.landlock.HandledAccessFS)
				}
				if got := strings.Join(accessList(g.access), ","); got != strings.Join(pl.rep.FS[i].Access, ",") {
					t.Errorf("rule %s: planned %s, reported %v", g.path, got, pl.rep.FS[i].Access)
				}
			}
			tt.check(t, &pl.rep, pl)
		})
	}
}

func wantFS(t *testing.T, e *Enforced, path, access string) {
	t.Helper()
	for _, r := range e.FS {
		if r.Path == path {
			if got := strings.Join(r.Access, ","); got != access {
				t.Errorf("fs %s = %s; want %s", path, got, access)
			}
			return
		}
	}
	t.Errorf("fs = %v; want a rule for %s", e.FS, path)
}

func wantNet(t *testing.T, e *Enforced, tcp, udp string) {
	t.Helper()
	if e.TCP != tcp || e.UDP != udp {
		t.Errorf("tcp, udp = %s, %s; want %s, %s", e.TCP, e.UDP, tcp, udp)
	}
}

func wantDropped(t *testing.T, e *Enforced, prefix string) {
	t.Helper()
	for _, d := range e.Dropped {
		if strings.HasPrefix(d, prefix) {
			return
		}
	}
	t.Errorf("dropped = %q; want one starting %q", e.Dropped, prefix)
}

func wantNotCovered(t *testing.T, e *Enforced, prefix string) {
	t.Helper()
	for _, d := range e.NotCovered {
		if strings.HasPrefix(d, prefix) {
			return
		}
	}
	t.Errorf("not_covered = %q; want one starting %q", e.NotCovered, prefix)
}

func TestProfileCheck(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		p    Profile
		want string // "" is valid
	}{
		{"existing paths", Profile{Read: []string{dir}, Write: []string{dir}}, ""},
		{"missing read", Profile{Read: []string{dir + "/nope"}}, "--allow-read " + dir + "/nope: no such file or directory"},
		{"missing write", Profile{Write: []string{dir + "/nope"}}, "--allow-write " + dir + "/nope"},
		{"host and port", Profile{Net: []string{"example.com:443", "[::1]:8080"}}, ""},
		{"no port", Profile{Net: []string{"example.com"}}, "is not HOST:PORT"},
		{"no host", Profile{Net: []string{":443"}}, "is not HOST:PORT"},
		{"port 0", Profile{Net: []string{"h:0"}}, "1..65535"},
		{"port too big", Profile{Net: []string{"h:65536"}}, "1..65535"},
	}
	for _, tt := range tests {
		err := tt.p.Check()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: Check() = %v; want nil", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrProfile)):
			t.Errorf("%s: Check() = %v; want ErrProfile with %q", tt.name, err, tt.want)
		}
	}
	rel := Profile{Read: []string{"."}}
	if err := rel.Check(); err != nil || !strings.HasPrefix(rel.Read[0], "/") {
		t.Errorf("Check of \".\" = %v, %q; want an absolute path", err, rel.Read)
	}
}

func TestReadReport(t *testing.T) {
	tests := []struct {
		name, in string
		want     Report
		err      bool
	}{
		{name: "nothing", in: "", err: true},
		{name: "garbage", in: "not json\n", err: true},
		{name: "refused", in: `{"refused":"no"}` + "\n", want: Report{Refused: "no"}},
		{name: "enforced then exec error", in: `{"enforced":{"landlock_abi":7}}` + "\n" + `{"exec_error":"exec x: permission denied"}` + "\n",
			want: Report{Enforced: &Enforced{LandlockABI: 7}, ExecError: "exec x: permission denied"}},
	}
	for _, tt := range tests {
		got, err := readReport(strings.NewReader(tt.in))
		if tt.err {
			if !errors.Is(err, ErrNoReport) {
				t.Errorf("%s: readReport = %v, %v; want ErrNoReport", tt.name, got, err)
			}
			continue
		}
		if err != nil || got.Refused != tt.want.Refused || got.ExecError != tt.want.ExecError ||
			(got.Enforced == nil) != (tt.want.Enforced == nil) ||
			(got.Enforced != nil && got.Enforced.LandlockABI != tt.want.Enforced.LandlockABI) {
			t.Errorf("%s: readReport = %+v, %v; want %+v", tt.name, got, err, tt.want)
		}
	}
}

// TestAgentReach: a profile that would let the child reach the ssh-agent
// holding the log's root key is refused, best effort or not; one that
// keeps it out is not.
func TestAgentReach(t *testing.T) {
	const sock = "/tmp/ssh-XXXX/agent.1"
	tests := []struct {
		name    string
		p       Profile
		abi     int
		seccomp bool
		want    string // substring of the refusal; "" none
	}{
		{"no --allow-unix", Profile{Agent: sock}, 7, true, ""},
		{"--allow-unix, ABI 7", Profile{Agent: sock, Unix: true}, 7, true, "--allow-unix, and landlock ABI 7 < 9"},
		{"--allow-unix, ABI 7, best effort", Profile{Agent: sock, Unix: true, BestEffort: true}, 7, true, "landlock ABI 7 < 9"},
		{"no seccomp, best effort", Profile{Agent: sock, BestEffort: true}, 7, false, "no seccomp filter refuses unix sockets"},
		{"--allow-unix, ABI 9, socket not granted", Profile{Agent: sock, Unix: true}, 9, true, ""},
		{"--allow-unix, ABI 9, socket beneath a write grant", Profile{Agent: sock, Unix: true, Write: []string{"/tmp"}}, 9, true, "beneath --allow-write /tmp"},
		{"--allow-unix, ABI 9, a sibling folder granted", Profile{Agent: sock, Unix: true, Write: []string{"/tmp/ssh-X"}}, 9, true, ""},
		{"abstract agent, --allow-unix, ABI 6", Profile{Agent: "@agent", Unix: true}, 6, true, ""},
		{"abstract agent, --allow-unix, ABI 5", Profile{Agent: "@agent", Unix: true}, 5, true, "landlock ABI 5 < 6"},
		{"no agent, --allow-unix", Profile{Unix: true}, 7, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := agentReach(tt.p, tt.abi, tt.seccomp); !(tt.want == "" && got == "" || tt.want != "" && strings.Contains(got, tt.want)) {
				t.Errorf("agentReach(%+v, %d, %v) = %q; want %q", tt.p, tt.abi, tt.seccomp, got, tt.want)
			}
		})
	}
}
