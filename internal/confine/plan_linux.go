//go:build linux

package confine

import (
	"fmt"
	"slices"
	"strings"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// Access rights granted by the flags, before they are cut down to what the
// ABI handles and, for a file, to the rights a file can carry.
const (
	rightsExec  = ll.AccessFSExecute | ll.AccessFSReadFile
	rightsRead  = ll.AccessFSExecute | ll.AccessFSReadFile | ll.AccessFSReadDir
	rightsWrite = rightsRead | ll.AccessFSWriteFile | ll.AccessFSTruncate |
		ll.AccessFSRemoveFile | ll.AccessFSRemoveDir |
		ll.AccessFSMakeReg | ll.AccessFSMakeDir | ll.AccessFSMakeSym |
		ll.AccessFSMakeSock | ll.AccessFSMakeFifo |
		ll.AccessFSRefer | ll.AccessFSResolveUnix
	// rightsFile are the only rights Landlock accepts on a non-directory.
	rightsFile = ll.AccessFSExecute | ll.AccessFSWriteFile | ll.AccessFSReadFile |
		ll.AccessFSTruncate | ll.AccessFSIoctlDev
)

// accessNames are the recorded names of the filesystem rights, by bit; part
// of the format of the enforcement record.
var accessNames = []string{
	"execute", "write_file", "read_file", "read_dir", "remove_dir", "remove_file",
	"make_char", "make_dir", "make_reg", "make_sock", "make_fifo", "make_block",
	"make_sym", "refer", "truncate", "ioctl_dev", "resolve_unix",
}

func accessList(a landlock.AccessFSSet) []string {
	var out []string
	for i, name := range accessNames {
		if a&(1<<i) != 0 {
			out = append(out, name)
		}
	}
	return out
}

// grant is one Landlock path-beneath rule.
type grant struct {
	path   string
	access landlock.AccessFSSet
}

// plan is what the helper will enforce: built by makePlan without touching
// the kernel, applied by apply.
type plan struct {
	abi      int
	landlock landlock.Config // zero when abi == 0
	fs       []grant
	pins     []string // paths held open across execve (see apply)
	connect  []uint16 // TCP ports for connect
	seccomp  bool     // install the filter
	filter   netFilter
	rep      Enforced
}

// statFunc reports whether path is a directory (following symlinks, as
// Landlock's O_PATH open does).
type statFunc func(path string) (isDir bool, err error)

// makePlan decides the exact ruleset for abi (see effectiveABI) and the
// kernel's errata. procSelf is the helper's own /proc/PID, which is the
// target's once it is exec'd (a path-beneath rule holds the directory
// found when it is made, not the /proc/self link). seccompErr is nil when
// this architecture can install the filter. It fails with ErrRefused when the profile cannot be enforced
// whole and p.BestEffort is false; under BestEffort the report lists what
// was dropped.
func makePlan(p Profile, target, procSelf string, abi, errata int, seccompErr error, stat statFunc) (*plan, error) {
	ports := make([]uint16, 0, len(p.Net))
	for _, hp := range p.Net {
		port, err := ParsePort(hp)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(ports, port) {
			ports = append(ports, port)
		}
	}
	slices.Sort(ports)
	allowTCP := len(p.Net) > 0
	egress := len(p.Egress) > 0
	if egress {
		// The child's one way out: the proxy's port, in a network with
		// no other host when it has a namespace of its own.
		ports, allowTCP = []uint16{uint16(p.proxyPort)}, true
	}

	// No profile grants a TCP bind, so listen, which binds without asking,
	// is refused wherever a TCP socket can be had; file metadata calls are
	// refused wherever nothing is granted write (see netFilter).
	pl := &plan{abi: abi, seccomp: seccompErr == nil, filter: netFilter{
		tcp: allowTCP, udp: p.UDP, unix: p.Unix, noListen: allowTCP, noMeta: len(p.Write) == 0, noSetns: egress,
	}}
	if why := agentReach(p, abi, pl.seccomp); why != "" {
		return nil, fmt.Errorf("%w: the child could reach the ssh-agent that holds the log's root key (%s): %s", ErrRefused, p.Agent, why)
	}
	var dropped []string
	if abi == 0 {
		dropped = append(dropped, "landlock: unavailable (ABI 0): no filesystem, ptrace or signal restriction")
	}
	if abi == 1 || abi == 2 {
		dropped = append(dropped, fmt.Sprintf("truncate: not restricted (landlock ABI %d < 3)", abi))
	}
	if allowTCP && abi < 4 && !(egress && p.NetNS) {
		flag := "--allow-net"
		if egress {
			flag = "--allow-egress (the proxy's)"
		}
		dropped = append(dropped, fmt.Sprintf("tcp ports of %s: not enforced (landlock ABI %d < 4), every port is open", flag, abi))
	}
	if egress && !p.NetNS {
		dropped = append(dropped, fmt.Sprintf("network namespace: unavailable (%s): the child can connect to port %d of any host, not only to the egress proxy", p.NetNSError, p.proxyPort))
	}
	if seccompErr != nil {
		dropped = append(dropped, "seccomp: "+seccompErr.Error()+": sockets, TCP Fast Open, listen, io_uring and file metadata calls are not filtered")
	}
	if len(dropped) > 0 && !p.BestEffort {
		return nil, fmt.Errorf("%w: %s", ErrRefused, strings.Join(dropped, "; "))
	}

	rep := Enforced{LandlockABI: abi, FS: []FSRule{}, Ports: []int{}, Scopes: []string{},
		BestEffort: p.BestEffort, Dropped: dropped}
	if egress {
		rep.Egress = &EgressEnforced{Grants: p.Egress, ProxyPort: p.proxyPort, NetNS: p.NetNS}
	}
	if abi > 0 {
		if err := pl.landlockRules(p, target, procSelf, abi, errata, ports, allowTCP, stat, &rep); err != nil {
			return nil, err
		}
	}

	reachAndGaps(&rep, p, abi, allowTCP, pl.seccomp)
	pl.rep = rep
	return pl, nil
}

// landlockRules builds the Landlock ruleset for abi: the handled rights,
// one path-beneath rule per grant (the target, the exec support paths,
// --allow-read and --allow-write), the TCP ports and the IPC scopes, and
// writes each into rep as applied. A grant that must exist and does not
// refuses the profile.
func (pl *plan) landlockRules(p Profile, target, procSelf string, abi, errata int, ports []uint16, allowTCP bool, stat statFunc, rep *Enforced) error {
	base := abiConfigs[abi]
	cfg := landlock.Config{HandledAccessFS: base.HandledAccessFS, Scoped: base.Scoped}
	if abi >= 4 {
		cfg.HandledAccessNet = ll.AccessNetBindTCP | ll.AccessNetConnectTCP
	}
	if abi >= 10 && !p.UDP {
		cfg.HandledAccessNet |= ll.AccessNetBindUDP | ll.AccessNetConnectSendUDP
	}
	if abi >= 7 {
		// Denials by the target (after execve) reach the audit log.
		cfg = cfg.EnableLoggingForSubprocesses()
	}
	pl.landlock = cfg
	withheld := landlock.AccessFSSet(0)
	if !erratumFixed(errata, erratumDisconnected) {
		withheld = ll.AccessFSRefer
	}
	add := func(path string, want landlock.AccessFSSet, mustExist bool) error {
		isDir, err := stat(path)
		if err != nil {
			if !mustExist {
				return nil
			}
			return fmt.Errorf("%w: %s: %v", ErrRefused, path, err)
		}
		a := want &^ withheld & cfg.HandledAccessFS
		if !isDir {
			a &= rightsFile
		}
		if a == 0 {
			return nil
		}
		pl.fs = append(pl.fs, grant{path, a})
		if strings.HasPrefix(path, "/proc/") {
			pl.pins = append(pl.pins, path)
		}
		rep.FS = append(rep.FS, FSRule{Path: path, Access: accessList(a)})
		return nil
	}
	if err := add(target, rightsExec, true); err != nil {
		return err
	}
	if p.ExecSupport {
		for _, d := range execSupport {
			add(d, rightsRead, false)
		}
		if err := add(procSelf, rightsRead, true); err != nil {
			return err
		}
		for _, d := range procSupport {
			add(d, rightsRead, false)
		}
		for _, d := range devSupport {
			add(d, rightsRead, false)
		}
	}
	for _, d := range p.Read {
		if err := add(d, rightsRead, true); err != nil {
			return err
		}
	}
	for _, d := range p.Write {
		if err := add(d, rightsWrite, true); err != nil {
			return err
		}
	}
	if abi >= 4 && allowTCP {
		pl.connect = ports
		for _, port := range ports {
			rep.Ports = append(rep.Ports, int(port))
		}
	}
	if abi >= 6 {
		rep.Scopes = []string{"abstract_unix_socket", "signal"}
	}

	return nil
}

// reachAndGaps fills in what the enforcement record says of the network,
// from Landlock (abi) and the seccomp filter together, and the known gaps
// of this enforcement that no flag asked to close (NotCovered).
func reachAndGaps(rep *Enforced, p Profile, abi int, allowTCP, seccomp bool) {
	// What a socket can reach, from both layers together.
	switch {
	case allowTCP && abi >= 4, rep.Egress != nil && rep.Egress.NetNS:
		rep.TCP = NetPorts
	case !allowTCP && (seccomp || abi >= 4):
		rep.TCP = NetDenied
	default:
		rep.TCP = NetOpen
	}
	switch {
	case p.UDP:
		rep.UDP = NetOpen
	case seccomp || abi >= 10:
		rep.UDP = NetDenied
	default:
		rep.UDP = NetOpen
	}
	rep.SeccompApplied = seccomp
	rep.SeccompNetworkDenied = seccomp && !allowTCP && !p.UDP
	rep.IOURingDenied = seccomp

	var nc []string
	if p.UDP {
		nc = append(nc, "udp: every host and port (--allow-udp)")
	}
	if abi >= 1 && abi < 5 {
		nc = append(nc, fmt.Sprintf("device ioctl (landlock ABI %d < 5)", abi))
	}
	if abi >= 1 && abi < 6 {
		nc = append(nc, fmt.Sprintf("signals and abstract unix sockets outside the sandbox (landlock ABI %d < 6)", abi))
	}
	unixSockets := p.Unix || !seccomp
	if p.Unix {
		nc = append(nc, "unix sockets: socket(2) of AF_UNIX (--allow-unix)")
	}
	if unixSockets && abi < 9 {
		nc = append(nc, fmt.Sprintf("pathname unix sockets (landlock ABI %d < 9)", abi))
	}
	if len(p.Write) > 0 && seccomp {
		nc = append(nc, "file metadata: chmod, chown, extended attributes, times and inode flags of any file the child can name, "+
			"not only beneath --allow-write (no landlock ABI handles them; seccomp refuses them only when nothing is granted write)")
	}
	for _, g := range append(slices.Clone(p.Read), p.Write...) {
		if g == "/" || g == "/proc" || strings.HasPrefix(g, "/proc/") {
			nc = append(nc, "other processes' /proc files (cmdline, status; environ, maps and mem to a root child) beneath "+g)
			break
		}
	}
	rep.NotCovered = nc
}

// agentReach says how a child confined by p on abi could reach p.Agent,
// the ssh-agent socket that holds the log's root key, or "" if it cannot:
// the agent signs whatever reaches it, so a child that could ask it would
// certify a session key of its own and sign records as this log's. A unix
// socket needs socket(2) of AF_UNIX (seccomp refuses it without
// --allow-unix; without seccomp nothing does); then an abstract socket is
// kept out by Landlock's scope from ABI 6, and a pathname socket by
// resolve_unix from ABI 9, which only --allow-write grants.
func agentReach(p Profile, abi int, seccomp bool) string {
	if p.Agent == "" || (seccomp && !p.Unix) {
		return ""
	}
	how := "--allow-unix"
	if !seccomp {
		how = "no seccomp filter refuses unix sockets"
	}
	if strings.HasPrefix(p.Agent, "@") {
		if abi < 6 {
			return fmt.Sprintf("%s, and landlock ABI %d < 6 does not scope abstract unix sockets", how, abi)
		}
		return ""
	}
	if abi < 9 {
		return fmt.Sprintf("%s, and landlock ABI %d < 9 does not restrict connecting to a pathname unix socket", how, abi)
	}
	for _, w := range p.Write {
		if w == "/" || p.Agent == w || strings.HasPrefix(p.Agent, strings.TrimSuffix(w, "/")+"/") {
			return fmt.Sprintf("%s, and it is beneath --allow-write %s", how, w)
		}
	}
	return ""
}
