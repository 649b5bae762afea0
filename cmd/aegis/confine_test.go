package main

// Tests of --confine and --clean-env (internal/confine/doc.go) through the real
// binary. Every restriction is applied by the helper in a child process,
// never here.
//
//	go test -run 'Confine|CleanEnv' ./cmd/aegis/
//	go test -run XXX -bench Confine ./cmd/aegis/

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/aegisrelay/aegis/journal/record"
)

// goBuild builds pkg to out with CGO_ENABLED=0 and the extra flags.
func goBuild(t testing.TB, out, pkg string, extra ...string) {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		gobin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	args := append(append([]string{"build", "-o", out}, extra...), pkg)
	cmd := exec.Command(gobin, args...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
}

var builds struct {
	sync.Mutex
	done map[string]string
}

// built builds pkg once per test binary, beside aegisBin (TestMain removes
// that folder), and returns its path.
func built(t testing.TB, name, pkg string, extra ...string) string {
	builds.Lock()
	defer builds.Unlock()
	if p, ok := builds.done[name]; ok {
		return p
	}
	p := filepath.Join(filepath.Dir(aegisBin), name)
	goBuild(t, p, pkg, extra...)
	if builds.done == nil {
		builds.done = map[string]string{}
	}
	builds.done[name] = p
	return p
}

// probeBin is internal/confine/testdata/probe: the escape suite's child.
func probeBin(t testing.TB) string {
	return built(t, "probe", "github.com/aegisrelay/aegis/internal/confine/testdata/probe")
}

// cappedAegis is aegis built as if the kernel's Landlock ABI were at most
// abi (the confine package's test hook; a release build has none).
func cappedAegis(t testing.TB, abi int) string {
	return built(t, "aegis-abi"+strconv.Itoa(abi), ".",
		"-ldflags=-X github.com/aegisrelay/aegis/internal/confine.abiCap="+strconv.Itoa(abi))
}

// escapeEnv is what the probe tries to reach: files outside and inside the
// granted folders, loopback listeners (one allowed, one not, and one not
// allowed on IPv6 where the machine has it), a process and an abstract unix
// socket outside the sandbox.
type escapeEnv struct {
	out, read, write        string
	portAllowed, portDenied int
	port6Denied             int // 0: no IPv6 loopback
	sleeper                 *exec.Cmd
	abstract                string
	unixDir                 string // stream.sock, seqpacket.sock, dgram.sock listening
}

func newEscapeEnv(t *testing.T) *escapeEnv {
	t.Helper()
	dir := t.TempDir()
	e := &escapeEnv{out: filepath.Join(dir, "outside"), read: filepath.Join(dir, "read"), write: filepath.Join(dir, "write")}
	for _, d := range []string{e.out, e.read, e.write} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(e.out, "secret.txt"), []byte("secret\n"), 0o644))
	// removexattr_outside removes this one (and puts it back).
	must(unix.Setxattr(filepath.Join(e.out, "secret.txt"), "user.aegis-keep", []byte("1"), 0))
	must(os.WriteFile(filepath.Join(e.read, "file.txt"), []byte("readable\n"), 0o644))
	probe, err := os.ReadFile(probeBin(t))
	must(err)
	must(os.WriteFile(filepath.Join(e.out, "probe-copy"), probe, 0o755))
	listen := func(network, addr string) net.Listener {
		l, err := net.Listen(network, addr)
		must(err)
		t.Cleanup(func() { l.Close() })
		return l
	}
	e.portAllowed = listen("tcp4", "127.0.0.1:0").Addr().(*net.TCPAddr).Port
	e.portDenied = listen("tcp4", "127.0.0.1:0").Addr().(*net.TCPAddr).Port
	if l, err := net.Listen("tcp6", "[::1]:0"); err == nil {
		t.Cleanup(func() { l.Close() })
		e.port6Denied = l.Addr().(*net.TCPAddr).Port
	}
	e.abstract = fmt.Sprintf("aegis-escape-%d-%d", os.Getpid(), time.Now().UnixNano())
	listen("unix", "@"+e.abstract)
	// Pathname sockets outside every grant, such as an ssh-agent's.
	e.unixDir = filepath.Join(dir, "sockets")
	must(os.Mkdir(e.unixDir, 0o755))
	listen("unix", filepath.Join(e.unixDir, "stream.sock"))
	listen("unixpacket", filepath.Join(e.unixDir, "seqpacket.sock"))
	dg, err := net.ListenPacket("unixgram", filepath.Join(e.unixDir, "dgram.sock"))
	must(err)
	t.Cleanup(func() { dg.Close() })
	e.sleeper = exec.Command("sleep", "120")
	must(e.sleeper.Start())
	t.Cleanup(func() { e.sleeper.Process.Kill(); e.sleeper.Wait() })
	return e
}

func (e *escapeEnv) probeArgv(t testing.TB) []string {
	return []string{probeBin(t), "-outside", e.out, "-read", e.read, "-write", e.write,
		"-port-allowed", strconv.Itoa(e.portAllowed), "-port-denied", strconv.Itoa(e.portDenied),
		"-pid", strconv.Itoa(e.sleeper.Process.Pid), "-abstract", e.abstract, "-unix-dir", e.unixDir,
		"-port6-denied", strconv.Itoa(e.port6Denied), "-client", strconv.Itoa(os.Getpid())}
}

// escapeAttempts are the probe's ways out, run in order (runAttempts).
// ptrace_parent stays last: unconfined, the probe seizes its parent (this
// test process) and detaches by exiting right after; confined, should it
// get through, it holds aegis wrap only until the session ends.
var escapeAttempts = append(append([]string{
	"read_outside", "list_outside", "read_allowed", "write_outside", "write_read_only",
	"create_outside", "create_allowed", "truncate_outside", "rename_outside", "rename_out_of_write",
	"exec_outside", "tcp_socket", "tcp6_socket", "udp_socket", "raw_socket", "packet_socket",
	"netlink_socket", "mptcp_socket", "vsock_socket", "connect_denied_port", "connect_allowed_port",
	"io_uring_read", "io_uring_socket", "signal_outside", "abstract_unix_connect",
	// Unix sockets: pathname ones outside every grant (an ssh-agent's),
	// of each type, and a pair, which reaches nothing outside.
	"unix_stream_connect", "unix_seqpacket_connect", "unix_dgram_send", "unix_socketpair",
	// TCP Fast Open, which connects where Landlock's connect hook does
	// not look, and listen, which binds where its bind hook does not.
	"tfo_sendto_denied_port", "tfo_sendto_allowed_port", "tfo6_sendto_denied_port",
	"tfo_sendmsg_denied_port", "tfo_sendmmsg_denied_port", "tfo_connect_option_denied_port",
	"tfo_server_option", "listen_unbound", "listen6_unbound", "bind_then_listen", "listen_unix",
	// Other processes, through /proc and the calls that check ptrace
	// access: aegis (the parent), the MCP client (this test), init.
	"proc_parent_environ", "proc_parent_cmdline", "proc_parent_maps", "proc_parent_status",
	"proc_parent_mem", "proc_parent_fd", "proc_client_environ", "proc_client_cmdline",
	"proc_1_environ", "proc_1_cmdline", "proc_self_status", "proc_thread_self_stat", "proc_meminfo",
	"process_vm_readv_parent", "pidfd_getfd_parent", "dev_kmsg",
	// File metadata, which no Landlock ABI handles.
	"chmod_outside", "fchmodat_outside", "fchmodat2_outside", "fchmod_read_only",
	"chown_outside", "lchown_outside", "fchownat_opath_outside",
	"setxattr_outside", "lsetxattr_outside", "fsetxattr_read_only", "removexattr_outside", "setxattrat_outside",
	"utimensat_outside", "futimens_read_only", "file_setattr_outside", "ioctl_setflags_read_only",
}, legacyAttempts()...), "ptrace_parent")

// legacyAttempts are the probe's attempts through amd64's older metadata
// calls (chmod, utimes), which newer architectures lack.
func legacyAttempts() []string {
	if runtime.GOARCH == "amd64" {
		return []string{"chmod_legacy_outside", "utimes_legacy_outside"}
	}
	return nil
}

// machineBound are attempts whose unconfined result depends on the machine
// rather than on the probe (init's environ is hidden from root in some
// containers; /dev/kmsg may be absent): blocked unconfined, their confined
// result proves nothing.
var machineBound = map[string]bool{"proc_1_environ": true, "proc_1_cmdline": true, "dev_kmsg": true}

func attemptLine(id int, attempt string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"attempt","arguments":{"attempt":%q}}}`+"\n", id, attempt)
}

// landlockSince is the ABI that first handles each filesystem right.
var landlockSince = map[string]int{"refer": 2, "truncate": 3, "ioctl_dev": 5, "resolve_unix": 9}

// fsDenies reports whether the record claims Landlock denies right on path:
// the ABI handles it and no rule grants it on path or a folder above.
func fsDenies(e *record.Enforcement, path, right string) bool {
	if e.LandlockABI < 1 || e.LandlockABI < landlockSince[right] {
		return false
	}
	for _, r := range e.FS {
		if (path == r.Path || strings.HasPrefix(path, r.Path+"/")) && slices.Contains(r.Access, right) {
			return false
		}
	}
	return true
}

// notCovered reports whether the record names a gap starting with prefix.
func notCovered(e *record.Enforcement, prefix string) bool {
	return slices.ContainsFunc(e.NotCovered, func(s string) bool { return strings.HasPrefix(s, prefix) })
}

// procSelf is the record's rule for the target's own /proc/PID, or
// "/proc/self" (which no rule names) if there is none.
func procSelf(e *record.Enforcement) string {
	for _, r := range e.FS {
		if n, ok := strings.CutPrefix(r.Path, "/proc/"); ok && n != "" && strings.Trim(n, "0123456789") == "" {
			return r.Path
		}
	}
	return "/proc/self"
}

// expect is what the enforcement record e says attempt must come to:
// "allowed" when it claims nothing against it, else how it is stopped
// ("seccomp_killed" or "blocked ERRNO"), and which claim says so. wrapPID
// is aegis wrap's, the probe's parent. A gap the record names in
// not_covered must be open; one it does not name must be closed.
func expect(attempt string, e *record.Enforcement, env *escapeEnv, wrapPID int) (want []string, why string) {
	allowed := []string{"allowed"}
	fs := func(path string, rights ...string) ([]string, string) {
		for _, r := range rights {
			if fsDenies(e, path, r) {
				return []string{"blocked EACCES"}, "fs: no " + r + " on " + path
			}
		}
		return allowed, "fs grants " + strings.Join(rights, "+")
	}
	// socket is the verdict on creating a socket that is neither unix nor
	// an open kind (tcp/udp per the record).
	netDenied := e.SeccompApplied && e.SeccompNetworkDenied
	// unixOpen: the child can make unix sockets (--allow-unix, which the
	// record names in not_covered, or no filter).
	unixOpen := !e.SeccompApplied || notCovered(e, "unix sockets:")
	socket := func(open bool, refused string) ([]string, string) {
		switch {
		case netDenied:
			return []string{"seccomp_killed"}, "seccomp_network_denied"
		case open || !e.SeccompApplied:
			return allowed, "record opens it"
		}
		return []string{refused}, "seccomp allows tcp/udp only as net says"
	}
	connect := func(port int) ([]string, string) {
		if want, why := socket(e.TCP != "denied", "blocked EPERM"); want[0] != "allowed" {
			return want, why
		}
		if e.TCP == "ports" && !slices.Contains(e.NetPorts, port) {
			return []string{"blocked EACCES"}, "net.tcp ports " + fmt.Sprint(e.NetPorts)
		}
		return allowed, "net.tcp " + e.TCP
	}
	// tcp is the verdict on an attempt that needs a TCP socket, then
	// passes the check of then.
	tcp := func(then func() ([]string, string)) ([]string, string) {
		if want, why := socket(e.TCP != "denied", "blocked EPERM"); want[0] != "allowed" {
			return want, why
		}
		return then()
	}
	fastOpen := func(port int) func() ([]string, string) {
		return func() ([]string, string) {
			switch {
			case notCovered(e, "tcp fast open"):
				return allowed, "not_covered: tcp fast open"
			case e.SeccompApplied:
				return []string{"blocked ENOTSUP"}, "seccomp refuses TCP Fast Open (not in not_covered)"
			}
			return connect(port)
		}
	}
	// listen binds an unbound socket to a port of its own.
	listen := func() ([]string, string) {
		if e.SeccompApplied && e.TCP != "denied" && !notCovered(e, "listen") {
			return []string{"blocked EACCES"}, "seccomp refuses listen where tcp is open: no bind is granted"
		}
		return allowed, "tcp denied (no inet socket to listen on) or no seccomp"
	}
	proc := func(pid int, name, right string) ([]string, string) {
		return fs(fmt.Sprintf("/proc/%d/%s", pid, name), right)
	}
	ptraceAccess := func() ([]string, string) {
		if e.LandlockABI >= 1 {
			return []string{"blocked EPERM"}, "landlock domain: no ptrace access outside it (any ABI)"
		}
		return allowed, "no landlock"
	}
	meta := func() ([]string, string) {
		switch {
		case notCovered(e, "file metadata"):
			return allowed, "not_covered: file metadata"
		case e.SeccompApplied:
			return []string{"blocked EPERM"}, "seccomp refuses file metadata calls (not in not_covered)"
		}
		return allowed, "no seccomp"
	}
	switch attempt {
	case "tfo_sendto_denied_port", "tfo_sendmsg_denied_port", "tfo_sendmmsg_denied_port", "tfo_connect_option_denied_port":
		return tcp(fastOpen(env.portDenied))
	case "tfo_sendto_allowed_port", "tfo_server_option":
		return tcp(fastOpen(env.portAllowed))
	case "tfo6_sendto_denied_port":
		if want, why := socket(e.TCP != "denied", "blocked EPERM"); want[0] != "allowed" {
			return want, why // the socket is IPv4's and IPv6's alike
		}
		return fastOpen(env.port6Denied)()
	case "listen_unbound", "listen6_unbound":
		return tcp(listen)
	case "bind_then_listen":
		return tcp(func() ([]string, string) {
			if e.LandlockABI >= 4 {
				return []string{"blocked EACCES"}, "landlock: no tcp bind is granted"
			}
			return listen()
		})
	case "listen_unix":
		if !unixOpen {
			return []string{"blocked EACCES"}, "seccomp: unix sockets without --allow-unix"
		}
		return listen()
	case "unix_stream_connect", "unix_seqpacket_connect", "unix_dgram_send":
		if !unixOpen {
			return []string{"blocked EACCES"}, "seccomp: unix sockets without --allow-unix"
		}
		return fs(filepath.Join(env.unixDir, "stream.sock"), "resolve_unix")
	case "unix_socketpair":
		return allowed, "socketpair reaches nothing outside"
	case "proc_parent_environ", "proc_parent_cmdline", "proc_parent_maps", "proc_parent_status", "proc_parent_mem":
		return proc(wrapPID, strings.TrimPrefix(attempt, "proc_parent_"), "read_file")
	case "proc_parent_fd":
		return proc(wrapPID, "fd", "read_dir")
	case "proc_client_environ", "proc_client_cmdline":
		return proc(os.Getpid(), strings.TrimPrefix(attempt, "proc_client_"), "read_file")
	case "proc_1_environ", "proc_1_cmdline":
		return proc(1, strings.TrimPrefix(attempt, "proc_1_"), "read_file")
	case "proc_self_status":
		return fs(procSelf(e)+"/status", "read_file")
	case "proc_thread_self_stat":
		return fs(procSelf(e)+"/task/1/stat", "read_file")
	case "proc_meminfo":
		return fs("/proc/meminfo", "read_file")
	case "process_vm_readv_parent", "pidfd_getfd_parent":
		return ptraceAccess()
	case "dev_kmsg":
		return fs("/dev/kmsg", "read_file")
	case "chmod_outside", "fchmodat_outside", "fchmodat2_outside", "fchmod_read_only",
		"chown_outside", "lchown_outside", "fchownat_opath_outside",
		"setxattr_outside", "lsetxattr_outside", "fsetxattr_read_only", "removexattr_outside", "setxattrat_outside",
		"utimensat_outside", "futimens_read_only", "file_setattr_outside", "ioctl_setflags_read_only",
		"chmod_legacy_outside", "utimes_legacy_outside":
		return meta()
	case "read_outside":
		return fs(filepath.Join(env.out, "secret.txt"), "read_file")
	case "list_outside":
		return fs(env.out, "read_dir")
	case "read_allowed":
		return fs(filepath.Join(env.read, "file.txt"), "read_file")
	case "write_outside":
		return fs(filepath.Join(env.out, "secret.txt"), "write_file")
	case "write_read_only":
		return fs(filepath.Join(env.read, "file.txt"), "write_file")
	case "create_outside":
		return fs(env.out, "make_reg")
	case "create_allowed":
		return fs(env.write, "make_reg", "remove_file")
	case "truncate_outside":
		return fs(filepath.Join(env.out, "secret.txt"), "truncate")
	case "rename_outside":
		return fs(env.out, "remove_file", "make_reg")
	case "rename_out_of_write":
		if fsDenies(e, env.write, "make_reg") {
			return []string{"error setup: open " + filepath.Join(env.write, "moved.txt") + ": permission denied"},
				"fs: no make_reg on " + env.write + " (the attempt cannot set itself up)"
		}
		want, why := fs(env.out, "make_reg")
		if want[0] != "allowed" {
			want = append(want, "blocked EXDEV") // Landlock's answer when refer is what is missing
		}
		return want, why
	case "exec_outside":
		return fs(filepath.Join(env.out, "probe-copy"), "execute")
	case "tcp_socket", "tcp6_socket":
		return socket(e.TCP != "denied", "blocked EPERM")
	case "udp_socket":
		return socket(e.UDP == "open", "blocked EPERM")
	case "raw_socket":
		return socket(false, "blocked EPERM")
	case "mptcp_socket":
		return socket(false, "blocked EPROTONOSUPPORT")
	case "packet_socket", "vsock_socket":
		if e.SeccompApplied {
			return []string{"seccomp_killed"}, "seccomp: families other than unix, inet, inet6, netlink"
		}
		return allowed, "no seccomp"
	case "netlink_socket":
		if e.SeccompApplied {
			return []string{"blocked EAFNOSUPPORT"}, "seccomp: netlink gets an errno"
		}
		return allowed, "no seccomp"
	case "connect_denied_port":
		return connect(env.portDenied)
	case "connect_allowed_port":
		return connect(env.portAllowed)
	case "io_uring_read", "io_uring_socket":
		if e.IOURingDenied {
			return []string{"blocked ENOSYS"}, "io_uring_denied"
		}
		return allowed, "io_uring not denied"
	case "signal_outside":
		if slices.Contains(e.Scopes, "signal") {
			return []string{"blocked EPERM"}, "scopes: signal"
		}
		return allowed, "no signal scope"
	case "abstract_unix_connect":
		if !unixOpen {
			return []string{"blocked EACCES"}, "seccomp: unix sockets without --allow-unix"
		}
		if slices.Contains(e.Scopes, "abstract_unix_socket") {
			return []string{"blocked EPERM"}, "scopes: abstract_unix_socket"
		}
		return allowed, "no abstract unix scope"
	case "ptrace_parent":
		if e.LandlockABI >= 1 {
			return []string{"blocked EPERM"}, "landlock domain (any ABI)"
		}
		return allowed, "no landlock"
	}
	panic("no expectation for " + attempt)
}

// sessionRecords are the records of the last session in the fixture's log.
func sessionRecords(t *testing.T, f *fixture) []*record.Record {
	t.Helper()
	recs := f.records(t)
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].Kind == record.KindSessionStart {
			return recs[i:]
		}
	}
	t.Fatal("no session_start in the log")
	return nil
}

// attemptResult is one confined attempt as the client and the log saw it.
type attemptResult struct {
	got     string // "allowed", "blocked ERRNO", "seccomp_killed", or what went wrong
	enf     *record.Enforcement
	exit    int
	wrapPID int // the probe's parent
}

// runAttempt runs one attempt as the one tools/call of a wrap session with
// the given extra flags (runAttempts).
func runAttempt(t *testing.T, bin string, f *fixture, flags []string, env *escapeEnv, attempt string) attemptResult {
	t.Helper()
	return runAttempts(t, bin, f, flags, env, []string{attempt})[0]
}

// runAttempts runs attempts, in order, as the tools/calls of wrap sessions
// with the given extra flags, and returns each one's result. The probe
// answers one call before it reads the next, so a session runs the
// attempts until one ends it (a seccomp kill, which is that attempt's
// result), and the rest run in the next session. Each session's records
// are checked: session_start, enforcement, an intent and an outcome for
// each call up to the one that ended it (any later call's at most once),
// session_end, and its end agrees with how the last attempt came out.
func runAttempts(t *testing.T, bin string, f *fixture, flags []string, env *escapeEnv, attempts []string) []attemptResult {
	t.Helper()
	// The probe exits at stdin EOF once it has answered: a long grace only
	// keeps a loaded machine from cutting a slow answer short.
	args := append([]string{"wrap", "--audit", f.audit, "--signing-key", f.key, "--grace", "20s", "--durability", "none"}, flags...)
	cmd := exec.Command(bin, append(append(args, "--"), env.probeArgv(t)...)...)
	var in strings.Builder
	for i, attempt := range attempts {
		in.WriteString(attemptLine(i+1, attempt))
	}
	cmd.Stdin = strings.NewReader(in.String())
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	runBounded(t, cmd, 30*time.Second+time.Duration(len(attempts))*time.Second)
	exit := cmd.ProcessState.ExitCode()
	recs := sessionRecords(t, f)
	if n := len(recs); n < 3 || recs[0].Kind != record.KindSessionStart || recs[1].Kind != record.KindEnforcement || recs[n-1].Kind != record.KindSessionEnd {
		t.Fatalf("%v: records %v; want session_start, enforcement, …, session_end\nstderr: %s", attempts, kindsOf(recs), stderr.String())
	}
	enf := recs[1].Body.(*record.Enforcement)
	end := recs[len(recs)-1].Body.(*record.SessionEnd)
	intents, outcomes := map[string]int{}, map[string]*record.Outcome{}
	for _, r := range recs[2 : len(recs)-1] {
		switch b := r.Body.(type) {
		case *record.Intent:
			intents[string(b.Call.Text)]++
		case *record.Outcome:
			id := string(b.Call.Text)
			if outcomes[id] != nil || intents[id] != 1 {
				t.Fatalf("%v: call %s has a second outcome, or one without its intent: %v", attempts, id, kindsOf(recs))
			}
			outcomes[id] = b
		default:
			t.Fatalf("%v: records %v; want only intents and outcomes between enforcement and session_end", attempts, kindsOf(recs))
		}
	}
	answers := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var resp struct {
			ID     json.RawMessage `json:"id"`
			Result struct {
				Content []struct{ Text string } `json:"content"`
			} `json:"result"`
		}
		if line != "" && json.Unmarshal([]byte(line), &resp) == nil && len(resp.Result.Content) == 1 {
			answers[string(resp.ID)] = resp.Result.Content[0].Text
		}
	}
	var results []attemptResult
	for i, attempt := range attempts {
		id := strconv.Itoa(i + 1)
		o := outcomes[id]
		if intents[id] != 1 || o == nil {
			t.Fatalf("%s: call %s has %d intents and outcome %v: records %v\nstderr: %s", attempt, id, intents[id], o, kindsOf(recs), stderr.String())
		}
		res := attemptResult{enf: enf, exit: exit, wrapPID: cmd.Process.Pid}
		switch o.Status {
		case record.StatusOK:
			text, ok := answers[id]
			if !ok {
				t.Fatalf("%s: outcome ok, yet the client read no answer to call %s in %q", attempt, id, out.String())
			}
			res.got = text
		case record.StatusSeccompKilled:
			res.got = "seccomp_killed"
			if !end.SeccompKilled || end.ExitSignal != "SIGSYS" || exit != 128+31 {
				t.Errorf("%s: seccomp_killed outcome with session_end %+v, wrap exit %d; want seccomp_killed, SIGSYS, 159", attempt, end, exit)
			}
		default:
			res.got = "outcome " + o.Status + ": " + o.Reason
		}
		results = append(results, res)
		if o.Status != record.StatusOK {
			// The call that ended the session: the rest never reached
			// the probe.
			return append(results, runAttempts(t, bin, f, flags, env, attempts[i+1:])...)
		}
	}
	if end.SeccompKilled || exit != 0 {
		t.Errorf("%v: every call answered, yet session_end %+v and wrap exit %d", attempts, end, exit)
	}
	return results
}

func kindsOf(recs []*record.Record) []record.Kind {
	kinds := make([]record.Kind, len(recs))
	for i, r := range recs {
		kinds[i] = r.Kind
	}
	return kinds
}

// TestConfineEscapeSuite runs the probe unconfined (every attempt must
// work, or the suite proves nothing), then confined under five profiles,
// in as many sessions as seccomp kills end (runAttempts), and checks each
// attempt's result against its session's
// enforcement record: what the record claims to deny is denied, by the
// mechanism it names, and what it leaves open works.
func TestConfineEscapeSuite(t *testing.T) {
	t.Parallel()
	env := newEscapeEnv(t)
	control, err := exec.Command(env.probeArgv(t)[0], append(env.probeArgv(t)[1:], append([]string{"-direct"}, escapeAttempts...)...)...).Output()
	if err != nil {
		t.Fatalf("unconfined probe: %v", err)
	}
	unavailable := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(control)), "\n") {
		name, result, _ := strings.Cut(line, " ")
		if result == "allowed" {
			continue
		}
		// A kernel without a protocol (vsock, MPTCP) or a system call, or a
		// machine without IPv6 or what machineBound names, cannot show it
		// blocked.
		if strings.Contains(result, "EAFNOSUPPORT") || strings.Contains(result, "EPROTONOSUPPORT") ||
			strings.Contains(result, "ENOSYS") || strings.Contains(result, "no listener for this family") ||
			machineBound[name] {
			t.Logf("unconfined %s: %s (the kernel or this machine lacks it; its confined result proves nothing)", name, result)
			unavailable[name] = true
			continue
		}
		t.Errorf("unconfined %s = %q; want allowed (the probe must be able to do it)", name, result)
	}
	profiles := []struct {
		name  string
		flags []string
	}{
		{"deny-network", []string{"--confine", "--allow-read", env.read, "--allow-write", env.write}},
		{"allow-net", []string{"--confine", "--allow-read", env.read, "--allow-write", env.write,
			"--allow-net", "127.0.0.1:" + strconv.Itoa(env.portAllowed)}},
		{"allow-udp", []string{"--confine", "--allow-read", env.read, "--allow-write", env.write, "--allow-udp"}},
		{"allow-unix", []string{"--confine", "--allow-read", env.read, "--allow-write", env.write, "--allow-unix"}},
		// What a dynamically linked server gets, with nothing granted
		// write: /proc and /dev narrowed, file metadata refused.
		{"exec-support", []string{"--confine", "--allow-exec-support", "--allow-read", env.read,
			"--allow-net", "127.0.0.1:" + strconv.Itoa(env.portAllowed)}},
	}
	for _, p := range profiles {
		t.Run(p.name, func(t *testing.T) {
			f := newFixture(t)
			var table strings.Builder
			results := runAttempts(t, aegisBin, f, p.flags, env, escapeAttempts)
			for i, attempt := range escapeAttempts {
				res := results[i]
				want, why := expect(attempt, res.enf, env, res.wrapPID)
				fmt.Fprintf(&table, "  %-30s %-24s (%s)\n", attempt, res.got, why)
				if unavailable[attempt] && res.got != "seccomp_killed" {
					continue
				}
				if !slices.Contains(want, res.got) {
					t.Errorf("%s under %s = %q; the enforcement record says %q (%s)", attempt, p.name, res.got, want, why)
				}
			}
			t.Logf("%s:\n%s", p.name, table.String())
			f.mustVerify(t, 0)
		})
	}
}

// TestConfineEnforcementRecord checks the record of a bare --confine field
// by field on this kernel, and that it precedes every frame.
func TestConfineEnforcementRecord(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	env := newEscapeEnv(t)
	if why := kernelCannotConfine(); why != "" {
		t.Skip(why)
	}
	res := runAttempt(t, aegisBin, f, []string{"--confine"}, env, "read_outside")
	e := res.enf
	if e.LandlockABI < 3 {
		t.Fatalf("landlock_abi %d recorded; this kernel has 3 or later", e.LandlockABI)
	}
	probe, _ := filepath.Abs(probeBin(t))
	if len(e.FS) != 1 || e.FS[0].Path != probe || !slices.Equal(e.FS[0].Access, []string{"execute", "read_file"}) {
		t.Errorf("fs = %+v; want only the target, execute and read_file", e.FS)
	}
	if e.TCP != "denied" || e.UDP != "denied" || len(e.NetPorts) != 0 || e.HostsEnforced {
		t.Errorf("net = tcp %q udp %q ports %v hosts %v; want denied, denied, none, false", e.TCP, e.UDP, e.NetPorts, e.HostsEnforced)
	}
	if !e.SeccompApplied || !e.SeccompNetworkDenied || !e.IOURingDenied {
		t.Errorf("seccomp %v, network denied %v, io_uring denied %v; want all true", e.SeccompApplied, e.SeccompNetworkDenied, e.IOURingDenied)
	}
	if e.BestEffort || len(e.Dropped) != 0 {
		t.Errorf("best_effort %v, dropped %v; want neither", e.BestEffort, e.Dropped)
	}
	if e.LandlockABI >= 6 && !slices.Equal(e.Scopes, []string{"abstract_unix_socket", "signal"}) {
		t.Errorf("scopes = %v at ABI %d; want both", e.Scopes, e.LandlockABI)
	}
	if slices.ContainsFunc(e.NotCovered, func(s string) bool { return strings.Contains(s, "unix sockets") }) {
		t.Errorf("not_covered = %q at ABI %d; want unix sockets refused without --allow-unix, not named", e.NotCovered, e.LandlockABI)
	}
	if notCovered(e, "file metadata") {
		t.Errorf("not_covered = %q with nothing granted write; want file metadata refused, not named", e.NotCovered)
	}
	start := f.records(t)[0].Body.(*record.SessionStart)
	if start.Confine == nil || start.Confine.BestEffort || len(start.Confine.Read) != 0 {
		t.Errorf("session_start confine = %+v; want the bare request", start.Confine)
	}

	// --allow-exec-support grants the target's own /proc/PID and a few
	// files of /proc and /dev, never all of either; a write grant names
	// file metadata as not covered.
	res = runAttempt(t, aegisBin, f, []string{"--confine", "--allow-exec-support", "--allow-write", env.write}, env, "proc_self_status")
	e = res.enf
	var paths []string
	for _, r := range e.FS {
		paths = append(paths, r.Path)
	}
	if self := procSelf(e); self == "/proc/self" || res.got != "allowed" {
		t.Errorf("fs = %v, proc_self_status %q; want the target's /proc/PID granted and readable", paths, res.got)
	}
	for _, p := range []string{"/proc", "/dev", "/proc/1"} {
		if slices.Contains(paths, p) {
			t.Errorf("fs = %v; want no rule for %s", paths, p)
		}
	}
	for _, p := range []string{"/proc/meminfo", "/dev/null", "/usr"} {
		if !slices.Contains(paths, p) {
			t.Errorf("fs = %v; want a rule for %s", paths, p)
		}
	}
	if !notCovered(e, "file metadata: chmod, chown, extended attributes, times and inode flags of any file") {
		t.Errorf("not_covered = %q with a write grant; want file metadata named", e.NotCovered)
	}
}

// TestConfineFailClosed simulates a kernel with Landlock ABI 3 (no TCP
// rules) with the confine package's test hook: --allow-net must refuse to
// run the child, exit 69 and record why; with --best-effort it runs and the
// record says what was dropped, and that every port is open.
func TestConfineFailClosed(t *testing.T) {
	t.Parallel()
	capped := cappedAegis(t, 3)
	env := newEscapeEnv(t)
	f := newFixture(t)
	flags := []string{"--confine", "--allow-read", env.read, "--allow-net", "127.0.0.1:" + strconv.Itoa(env.portAllowed)}

	args := append([]string{"wrap", "--audit", f.audit, "--signing-key", f.key, "--grace", "20s"}, flags...)
	cmd := exec.Command(capped, append(append(args, "--"), env.probeArgv(t)...)...)
	cmd.Stdin = strings.NewReader(attemptLine(1, "read_allowed"))
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	runBounded(t, cmd, 30*time.Second)
	if code := cmd.ProcessState.ExitCode(); code != 69 {
		t.Fatalf("wrap --allow-net on ABI 3 = exit %d; want 69\n%s", code, stderr.String())
	}
	if out.Len() != 0 {
		t.Errorf("the refused child answered %q; want nothing relayed", out.String())
	}
	if !strings.Contains(stderr.String(), "aegis: wrap: confinement refused") || !strings.Contains(stderr.String(), "landlock ABI 3 < 4") {
		t.Errorf("stderr = %q; want the refusal and its reason", stderr.String())
	}
	recs := sessionRecords(t, f)
	if len(recs) != 2 || recs[1].Kind != record.KindSessionEnd {
		t.Fatalf("records %d, last %v; want session_start and session_end only", len(recs), recs[len(recs)-1].Kind)
	}
	end := recs[1].Body.(*record.SessionEnd)
	if end.Reason != record.EndConfinementRefused || end.ExitCode != 69 || !strings.Contains(end.Detail, "tcp ports of --allow-net") {
		t.Errorf("session_end = %+v; want confinement_refused, 69 and the reason", end)
	}
	f.mustVerify(t, 0)

	res := runAttempt(t, capped, f, append(flags, "--best-effort"), env, "connect_denied_port")
	e := res.enf
	if e.LandlockABI != 3 || !e.BestEffort || e.TCP != "open" || len(e.NetPorts) != 0 || len(e.Scopes) != 0 {
		t.Errorf("enforcement = abi %d best_effort %v tcp %q ports %v scopes %v; want 3, true, open, none, none",
			e.LandlockABI, e.BestEffort, e.TCP, e.NetPorts, e.Scopes)
	}
	if len(e.Dropped) != 1 || !strings.HasPrefix(e.Dropped[0], "tcp ports of --allow-net: not enforced (landlock ABI 3 < 4)") {
		t.Errorf("dropped = %q; want the TCP port rules", e.Dropped)
	}
	// The record claims nothing against the port, and the port is open.
	if want, _ := expect("connect_denied_port", e, env, res.wrapPID); res.got != want[0] || res.got != "allowed" {
		t.Errorf("connect to a port not named, best effort on ABI 3 = %q; want allowed, as recorded", res.got)
	}
	// What ABI 3 does enforce still holds.
	if res := runAttempt(t, capped, f, append(flags, "--best-effort"), env, "read_outside"); res.got != "blocked EACCES" {
		t.Errorf("read outside, best effort on ABI 3 = %q; want blocked EACCES", res.got)
	}
	f.mustVerify(t, 0)
}

// TestConfineHelperByHand: the helper run without wrap refuses and runs
// nothing.
func TestConfineHelperByHand(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	tests := []struct {
		name string
		env  []string
		want int
	}{
		{"no profile", nil, 2},
		{"no report pipe", []string{"AEGIS_CONFINE_PROFILE={}"}, 69},
		{"garbage profile", []string{"AEGIS_CONFINE_PROFILE=nope"}, 69},
	}
	for _, tt := range tests {
		cmd := exec.Command(aegisBin, "__confine-exec", "--", "/bin/sh", "-c", "touch "+marker)
		cmd.Env = append(os.Environ(), tt.env...)
		out, _ := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); code != tt.want {
			t.Errorf("%s: aegis __confine-exec = exit %d; want %d\n%s", tt.name, code, tt.want, out)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("%s: the target ran", tt.name)
		}
	}
}

// TestConfineExecFailure: a target that cannot run under the profile (a
// dynamically linked one without --allow-exec-support) or does not exist
// ends the session as child_start_failed, after the enforcement record when
// something was enforced.
func TestConfineExecFailure(t *testing.T) {
	tests := []struct {
		name   string
		argv   string
		code   int
		kinds  []record.Kind
		detail string
	}{
		{"dynamic without exec support", "/bin/true", 126,
			[]record.Kind{record.KindSessionStart, record.KindEnforcement, record.KindSessionEnd}, "needs --allow-exec-support"},
		{"missing", "/nonexistent/aegis-target", 127,
			[]record.Kind{record.KindSessionStart, record.KindSessionEnd}, "no such file or directory"},
	}
	for _, tt := range tests {
		f := newFixture(t)
		cmd := f.wrapCmd([]string{"--confine"}, tt.argv)
		out, _ := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); code != tt.code {
			t.Errorf("%s: wrap = exit %d; want %d\n%s", tt.name, code, tt.code, out)
		}
		recs := f.records(t)
		var kinds []record.Kind
		for _, r := range recs {
			kinds = append(kinds, r.Kind)
		}
		if !slices.Equal(kinds, tt.kinds) {
			t.Fatalf("%s: records %v; want %v", tt.name, kinds, tt.kinds)
		}
		end := recs[len(recs)-1].Body.(*record.SessionEnd)
		if end.Reason != record.EndChildStartFailed || end.ExitCode != tt.code || !strings.Contains(end.Detail, tt.detail) {
			t.Errorf("%s: session_end = %+v; want child_start_failed, %d, %q", tt.name, end, tt.code, tt.detail)
		}
		f.mustVerify(t, 0)
	}
}

func TestConfineFlagErrors(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name  string
		flags []string
		want  string
	}{
		{"allow-read without confine", []string{"--allow-read", "/"}, "--allow-read needs --confine"},
		{"best-effort without confine", []string{"--best-effort"}, "--best-effort needs --confine"},
		{"print-profile without confine", []string{"--print-profile"}, "--print-profile needs --confine"},
		{"missing path", []string{"--confine", "--allow-read", "/nonexistent/aegis"}, "--allow-read /nonexistent/aegis: no such file or directory"},
		{"missing write path", []string{"--confine", "--allow-write", "/nonexistent/w"}, "--allow-write /nonexistent/w"},
		{"bad net", []string{"--confine", "--allow-net", "example.com"}, "is not HOST:PORT"},
		{"env without clean-env", []string{"--env", "HOME"}, "--env needs --clean-env"},
		{"env not set", []string{"--clean-env", "--env", "AEGIS_SURELY_UNSET_VAR"}, "AEGIS_SURELY_UNSET_VAR is not set"},
	}
	for _, tt := range tests {
		cmd := f.wrapCmd(tt.flags, "/bin/true")
		out, _ := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(string(out), tt.want) {
			t.Errorf("%s: wrap = exit %d, %q; want 2 and %q", tt.name, code, out, tt.want)
		}
	}
	if _, err := os.Stat(f.audit); err == nil {
		t.Error("a usage error wrote the audit log; want nothing recorded before the flags are valid")
	}
}

// TestCleanEnv: the child sees only HOME, PATH, LANG and --env; the log
// has the names, never the values; the profile variable never reaches the
// target, confined or not.
func TestCleanEnv(t *testing.T) {
	envBin, err := exec.LookPath("env")
	if err != nil {
		t.Skip("no env(1)")
	}
	tests := []struct {
		name      string
		flags     []string
		wantNames []string // nil: aegis's whole environment
	}{
		{"clean", []string{"--clean-env", "--env", "AEGIS_T_PASS", "--env", "AEGIS_T_SET=set-value"},
			[]string{"HOME", "PATH", "LANG", "AEGIS_T_PASS", "AEGIS_T_SET"}},
		{"clean and confined", []string{"--clean-env", "--env", "AEGIS_T_PASS", "--confine", "--allow-exec-support"},
			[]string{"HOME", "PATH", "LANG", "AEGIS_T_PASS"}},
		{"confined, inherited", []string{"--confine", "--allow-exec-support"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			cmd := f.wrapCmd(tt.flags, envBin)
			cmd.Env = append(os.Environ(), "HOME=/home/aegis-test", "LANG=C.UTF-8",
				"AEGIS_T_PASS=pass-value", "AEGIS_T_SECRET=secret-value")
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("wrap: %v", err)
			}
			var names []string
			got := map[string]string{}
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				k, v, _ := strings.Cut(line, "=")
				names = append(names, k)
				got[k] = v
			}
			if _, ok := got["AEGIS_CONFINE_PROFILE"]; ok {
				t.Error("the child saw AEGIS_CONFINE_PROFILE; the helper must remove it")
			}
			start := f.records(t)[0].Body.(*record.SessionStart)
			if tt.wantNames == nil {
				if got["AEGIS_T_SECRET"] != "secret-value" || start.Env != nil {
					t.Errorf("without --clean-env: child env has AEGIS_T_SECRET=%q, session_start env %v; want inherited, no env field", got["AEGIS_T_SECRET"], start.Env)
				}
				return
			}
			slices.Sort(names)
			want := slices.Clone(tt.wantNames)
			slices.Sort(want)
			if !slices.Equal(names, want) {
				t.Errorf("child env names = %v; want %v", names, want)
			}
			if got["AEGIS_T_PASS"] != "pass-value" || got["HOME"] != "/home/aegis-test" {
				t.Errorf("AEGIS_T_PASS=%q HOME=%q; want copied from aegis's environment", got["AEGIS_T_PASS"], got["HOME"])
			}
			if v, ok := got["AEGIS_T_SET"]; ok && v != "set-value" {
				t.Errorf("AEGIS_T_SET=%q; want set-value", v)
			}
			if !slices.Equal(start.Env, tt.wantNames) {
				t.Errorf("session_start env = %v; want %v", start.Env, tt.wantNames)
			}
			log := readAudit(f.audit)
			for _, v := range []string{"pass-value", "set-value", "secret-value", "/home/aegis-test"} {
				if bytes.Contains(log, []byte(v)) {
					t.Errorf("the audit log holds the value %q; want names only", v)
				}
			}
		})
	}
}

// mcpClient talks to a wrap process line by line.
type mcpClient struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	lines  chan string
	stderr bytes.Buffer
}

func startClient(t *testing.T, cmd *exec.Cmd) *mcpClient {
	t.Helper()
	c := &mcpClient{t: t, cmd: cmd, lines: make(chan string, 64)}
	var err error
	if c.in, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = &c.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
	}()
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return c
}

// call sends a request and returns the result (or error) of its response.
func (c *mcpClient) call(id int, method string, params any) map[string]any {
	c.t.Helper()
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		c.t.Fatalf("write: %v\n%s", err, c.stderr.String())
	}
	timeout := time.After(60 * time.Second)
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				c.t.Fatalf("%s id %d: the session ended first\n%s", method, id, c.stderr.String())
			}
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) != nil || m["id"] != float64(id) {
				continue // notifications, logging
			}
			if r, ok := m["result"].(map[string]any); ok {
				return r
			}
			c.t.Fatalf("%s id %d: %s", method, id, line)
		case <-timeout:
			c.t.Fatalf("%s id %d: no answer\n%s", method, id, c.stderr.String())
		}
	}
}

func (c *mcpClient) initialize() {
	c.call(0, "initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "aegis-confine-test", "version": "1"}})
	c.in.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"))
}

// close ends the session and returns wrap's exit code.
func (c *mcpClient) close() int {
	c.in.Close()
	for range c.lines {
	}
	c.cmd.Wait()
	return c.cmd.ProcessState.ExitCode()
}

func resultText(r map[string]any) string {
	var sb strings.Builder
	content, _ := r["content"].([]any)
	for _, x := range content {
		if m, ok := x.(map[string]any); ok {
			s, _ := m["text"].(string)
			sb.WriteString(s)
		}
	}
	return sb.String()
}

// nodeServer returns node and the entry point of an interop server.
func nodeServer(t *testing.T, name string) (node, modules, entry string) {
	t.Helper()
	modules, err := filepath.Abs("../../interop/node_modules")
	if err != nil {
		t.Fatal(err)
	}
	entry = filepath.Join(modules, "@modelcontextprotocol", name, "dist", "index.js")
	if _, err := os.Stat(entry); err != nil {
		t.Fatalf("%s is not installed (%v): run `npm ci` in interop/ first", name, err)
	}
	if node, err = exec.LookPath("node"); err != nil {
		t.Fatalf("node is not on PATH (%v): these tests need Node.js 20 or later", err)
	}
	return node, modules, entry
}

// TestConfineEverything runs the official server-everything confined to
// read its own modules, and calls a tool through it.
func TestConfineEverything(t *testing.T) {
	node, modules, entry := nodeServer(t, "server-everything")
	f := newFixture(t)
	c := startClient(t, f.wrapCmd([]string{"--confine", "--allow-exec-support", "--allow-read", modules}, node, entry, "stdio"))
	c.initialize()
	if got := resultText(c.call(1, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"message": "confined"}})); got != "Echo: confined" {
		t.Errorf("echo through a confined server-everything = %q; want %q", got, "Echo: confined")
	}
	// server-everything outlives its stdin; wrap's grace then ends it with
	// SIGTERM (143).
	if code := c.close(); code != 0 && code != 128+15 {
		t.Errorf("wrap exit %d; want 0 or 143\n%s", code, c.stderr.String())
	}
	recs := f.records(t)
	if recs[1].Kind != record.KindEnforcement {
		t.Fatalf("record 1 is %v; want enforcement before any frame", recs[1].Kind)
	}
	if e := recs[1].Body.(*record.Enforcement); !e.SeccompNetworkDenied || !slices.ContainsFunc(e.FS, func(r record.FSRule) bool { return r.Path == modules }) {
		t.Errorf("enforcement = %+v; want network denied and %s granted", e, modules)
	}
	f.mustVerify(t, 0)
}

// TestConfineFilesystemServer runs the official server-filesystem with two
// folders of its own, A and B, confined to write A only: the server itself
// allows both, so a call into B reaches the kernel, and Landlock refuses it.
func TestConfineFilesystemServer(t *testing.T) {
	node, modules, entry := nodeServer(t, "server-filesystem")
	dir := t.TempDir()
	a, b := filepath.Join(dir, "A"), filepath.Join(dir, "B")
	for _, d := range []string{a, b} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(a, "in.txt"), []byte("inside\n"), 0o644)
	os.WriteFile(filepath.Join(b, "secret.txt"), []byte("outside\n"), 0o644)
	f := newFixture(t)
	c := startClient(t, f.wrapCmd([]string{"--confine", "--allow-exec-support", "--allow-read", modules, "--allow-write", a}, node, entry, a, b))
	c.initialize()
	tool := func(id int, name string, args map[string]any) (string, bool) {
		r := c.call(id, "tools/call", map[string]any{"name": name, "arguments": args})
		isErr, _ := r["isError"].(bool)
		return resultText(r), isErr
	}
	if got, isErr := tool(1, "read_text_file", map[string]any{"path": filepath.Join(a, "in.txt")}); isErr || got != "inside\n" {
		t.Errorf("read inside the folder = %q (error %v); want its content", got, isErr)
	}
	if got, isErr := tool(2, "read_text_file", map[string]any{"path": filepath.Join(b, "secret.txt")}); !isErr || !strings.Contains(got, "EACCES") {
		t.Errorf("read outside the folder = %q (error %v); want EACCES from the kernel", got, isErr)
	}
	if got, isErr := tool(3, "write_file", map[string]any{"path": filepath.Join(a, "new.txt"), "content": "n"}); isErr {
		t.Errorf("write inside the folder = %q; want success", got)
	}
	if got, isErr := tool(4, "write_file", map[string]any{"path": filepath.Join(b, "new.txt"), "content": "n"}); !isErr {
		t.Errorf("write outside the folder = %q; want an error", got)
	}
	// edit_file writes a copy and chmods it to the original's mode: with
	// a write grant, file metadata calls stay allowed (and are named in
	// not_covered).
	if got, isErr := tool(5, "edit_file", map[string]any{"path": filepath.Join(a, "in.txt"),
		"edits": []map[string]any{{"oldText": "inside", "newText": "edited"}}}); isErr {
		t.Errorf("edit inside the folder = %q; want success", got)
	}
	if code := c.close(); code != 0 {
		t.Errorf("wrap exit %d; want 0\n%s", code, c.stderr.String())
	}
	if _, err := os.Stat(filepath.Join(a, "new.txt")); err != nil {
		t.Errorf("A/new.txt: %v; want it written", err)
	}
	if _, err := os.Stat(filepath.Join(b, "new.txt")); err == nil {
		t.Error("B/new.txt exists; the confined server wrote outside its folder")
	}
	var statuses []string
	for _, r := range f.records(t) {
		if o, ok := r.Body.(*record.Outcome); ok {
			statuses = append(statuses, o.Status)
		}
	}
	if want := []string{"ok", "tool_error", "ok", "tool_error", "ok"}; !slices.Equal(statuses, want) {
		t.Errorf("outcomes = %v; want %v", statuses, want)
	}
	f.mustVerify(t, 0)
}

// BenchmarkConfine measures what --confine costs, paired with its
// baseline in the same loop so that both see the same machine: each
// iteration runs the plain and the confined case back to back and reports
// both, and the difference, as metrics. The child is the static probe; each
// call opens and reads a file, which Landlock checks.
//
//   - start: a whole session with one tools/call, from exec of aegis to its
//     exit (the helper's exec, its Landlock and seccomp set-up, the
//     enforcement record);
//
//   - call: one recorded tools/call in a running session.
//
//     go test -run XXX -bench Confine -benchtime 200x ./cmd/aegis/
func BenchmarkConfine(b *testing.B) {
	probe := probeBin(b)
	dir := b.TempDir()
	read := filepath.Join(dir, "read")
	os.Mkdir(read, 0o755)
	os.WriteFile(filepath.Join(read, "file.txt"), []byte("readable\n"), 0o644)
	key := filepath.Join(dir, "key")
	if err := exec.Command(aegisBin, "keygen", "--out", key).Run(); err != nil {
		b.Fatal(err)
	}
	modes := [2][]string{nil, {"--confine", "--allow-read", read}}
	for _, dur := range []string{"none", "strict"} {
		args := func(m int, audit string) []string {
			a := append([]string{"wrap", "--audit", audit, "--signing-key", key, "--durability", dur}, modes[m]...)
			return append(a, "--", probe, "-read", read)
		}
		b.Run("start/"+dur, func(b *testing.B) {
			line := attemptLine(1, "read_allowed")
			var total, cpu [2]time.Duration
			i := 0
			for b.Loop() {
				i++
				for k := range modes {
					m := (k + i) % 2 // alternate which goes first
					cmd := exec.Command(aegisBin, args(m, filepath.Join(dir, fmt.Sprintf("start-%s-%d.jsonl", dur, m)))...)
					cmd.Stdin = strings.NewReader(line)
					t0 := time.Now()
					out, err := cmd.Output()
					total[m] += time.Since(t0)
					if err != nil || !bytes.Contains(out, []byte("allowed")) {
						b.Fatalf("wrap %v: %v, %q", modes[m], err, out)
					}
					// wait4's usage covers wrap and the children it reaped
					// (helper, then target): CPU time, which a loaded
					// machine disturbs far less than wall time.
					cpu[m] += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
				}
			}
			reportPair(b, total)
			b.ReportMetric(float64(cpu[0].Nanoseconds())/float64(b.N), "plain-cpu-ns/op")
			b.ReportMetric(float64(cpu[1].Nanoseconds())/float64(b.N), "confine-cpu-ns/op")
		})
		b.Run("call/"+dur, func(b *testing.B) {
			type session struct {
				in  io.WriteCloser
				out *bufio.Reader
			}
			var ss [2]session
			for m := range modes {
				cmd := exec.Command(aegisBin, args(m, filepath.Join(dir, fmt.Sprintf("call-%s-%d.jsonl", dur, m)))...)
				in, _ := cmd.StdinPipe()
				outPipe, _ := cmd.StdoutPipe()
				if err := cmd.Start(); err != nil {
					b.Fatal(err)
				}
				defer cmd.Wait()
				defer in.Close()
				ss[m] = session{in, bufio.NewReader(outPipe)}
			}
			var total [2]time.Duration
			id := 0
			for b.Loop() {
				id++
				line := attemptLine(id, "read_allowed")
				for k := range ss {
					m := (k + id) % 2 // alternate which goes first
					t0 := time.Now()
					io.WriteString(ss[m].in, line)
					resp, err := ss[m].out.ReadBytes('\n')
					total[m] += time.Since(t0)
					if err != nil || !bytes.Contains(resp, []byte("allowed")) {
						b.Fatalf("call %d %v: %v, %q", id, modes[m], err, resp)
					}
				}
			}
			reportPair(b, total)
		})
	}
}

// reportPair reports the plain and confined times per iteration and their
// difference; ns/op is the pair.
func reportPair(b *testing.B, total [2]time.Duration) {
	n := float64(b.N)
	b.ReportMetric(float64(total[0].Nanoseconds())/n, "plain-ns/op")
	b.ReportMetric(float64(total[1].Nanoseconds())/n, "confine-ns/op")
	b.ReportMetric(float64((total[1]-total[0]).Nanoseconds())/n, "extra-ns/op")
}
