package confine

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"github.com/aegisrelay/aegis/journal/record"
)

// EnvVar carries the profile from wrap to the helper. The helper removes it
// before execve, so the target never sees it.
const EnvVar = "AEGIS_CONFINE_PROFILE"

// HelperCommand is the hidden command main dispatches to Main before
// anything else runs.
const HelperCommand = "__confine-exec"

// execSupport are the trees --allow-exec-support grants read and execute
// beneath: enough to start a dynamically linked program, and a named hole
// (the child can read /etc/passwd). Missing ones are skipped.
var execSupport = [...]string{"/usr", "/lib", "/lib64", "/bin", "/sbin", "/etc"}

// procSupport and devSupport are what --allow-exec-support grants beneath
// /proc and /dev besides the target's own /proc/PID: what node, python,
// the shell and libc read there at start (measured with strace), none of
// which tells anything about another process, and the harmless devices.
// All of /proc would give the child every process's cmdline and status
// and, to a root child, the environ, maps and memory of aegis and of the
// MCP client (Landlock stops ptrace, not those reads); all of /dev would
// give a root child the raw disks and the kernel log. Missing ones are
// skipped.
var (
	procSupport = [...]string{"/proc/cpuinfo", "/proc/meminfo", "/proc/stat", "/proc/loadavg",
		"/proc/uptime", "/proc/version", "/proc/filesystems", "/proc/sys"}
	devSupport = [...]string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}
)

// Profile is a confinement as requested on the command line. It is a plain
// value; Check normalises it in place.
type Profile struct {
	// Read are paths granted read and execute beneath them.
	Read []string `json:"read,omitempty"`
	// Write are paths granted read, execute, write, create, remove and
	// truncate beneath them.
	Write []string `json:"write,omitempty"`
	// Net are the HOST:PORT of --allow-net. Only the ports are enforced.
	Net []string `json:"net,omitempty"`
	// ExecSupport grants read and execute on /usr /lib /lib64 /bin /sbin
	// /etc (those that exist), the target's own /proc/PID, and the files of
	// procSupport and devSupport.
	ExecSupport bool `json:"exec_support,omitempty"`
	// UDP opens UDP sockets to any host and port: a named hole.
	UDP bool `json:"udp,omitempty"`
	// Unix lets the target create unix sockets (socket(2) of AF_UNIX): a
	// named hole before Landlock ABI 9, where a pathname socket the target
	// can name is reachable; from ABI 9, only those beneath Write.
	Unix bool `json:"unix,omitempty"`
	// Agent is the ssh-agent socket that holds the log's root key, which
	// the target must never reach: the helper refuses a profile that
	// would let it (whatever BestEffort says). Not part of the request.
	Agent string `json:"agent,omitempty"`
	// BestEffort runs the target even when the kernel cannot enforce the
	// whole profile; what was dropped is reported.
	BestEffort bool `json:"best_effort,omitempty"`
	// ReportFD is the helper's descriptor of the report pipe; set by Wrap.
	ReportFD int `json:"report_fd,omitempty"`
	// Egress are the --allow-egress grants, canonical (NAME:PORT) once
	// checked: the child reaches the network only through aegis's egress
	// proxy, which allows these (egress.go).
	Egress []string `json:"egress,omitempty"`
	// NetNS: Command starts the helper in a network namespace of its own
	// (with Egress); NetNSError says why it could not, when it could not.
	// EgressFD is the helper's end of the socket the proxy's listener is
	// handed over on. All three are set by Command.
	NetNS      bool   `json:"netns,omitempty"`
	NetNSError string `json:"netns_error,omitempty"`
	EgressFD   int    `json:"egress_fd,omitempty"`

	// proxyPort is the port the helper's proxy listener is bound to.
	proxyPort int
}

// Check makes every path absolute and clean, and fails with ErrProfile,
// naming the flag and the value, if a path does not exist or a --allow-net
// value is not HOST:PORT with a port in 1..65535.
func (p *Profile) Check() error {
	for _, list := range []struct {
		flag  string
		paths []string
	}{{"--allow-read", p.Read}, {"--allow-write", p.Write}} {
		for i, path := range list.paths {
			abs, err := filepath.Abs(path)
			if err != nil {
				return fmt.Errorf("%w: %s %s: %v", ErrProfile, list.flag, path, err)
			}
			if _, err := os.Stat(abs); err != nil {
				if os.IsNotExist(err) {
					return fmt.Errorf("%w: %s %s: no such file or directory", ErrProfile, list.flag, path)
				}
				return fmt.Errorf("%w: %s %s: %v", ErrProfile, list.flag, path, err)
			}
			list.paths[i] = abs
		}
	}
	for _, hp := range p.Net {
		if _, err := ParsePort(hp); err != nil {
			return err
		}
	}
	return p.checkEgress()
}

// ParsePort returns the port of a --allow-net HOST:PORT value.
func ParsePort(hostPort string) (uint16, error) {
	host, port, err := net.SplitHostPort(hostPort)
	if err != nil || host == "" {
		return 0, fmt.Errorf("%w: --allow-net %q is not HOST:PORT", ErrProfile, hostPort)
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("%w: --allow-net %q: the port must be a number in 1..65535", ErrProfile, hostPort)
	}
	return uint16(n), nil
}

// Request returns the profile as session_start records it: nil (null)
// for a nil profile, a session without --confine.
func (p *Profile) Request() *record.ConfineRequest {
	if p == nil {
		return nil
	}
	return &record.ConfineRequest{
		Read: p.Read, Write: p.Write, Net: p.Net,
		ExecSupport: p.ExecSupport, UDP: p.UDP, BestEffort: p.BestEffort, Egress: p.Egress,
	}
}

func (p *Profile) encode() string {
	b, err := json.Marshal(p)
	if err != nil {
		panic(err) // strings, bools and an int always marshal
	}
	return string(b)
}

func decodeProfile(s string) (Profile, error) {
	var p Profile
	if err := json.Unmarshal([]byte(s), &p); err != nil {
		return p, fmt.Errorf("%w: $%s: %v", ErrProfile, EnvVar, err)
	}
	return p, nil
}
