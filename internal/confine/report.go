package confine

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"

	"github.com/aegisrelay/aegis/journal/record"
)

// Report is what the helper tells the parent, one JSON object per line:
// first either Enforced (it restricted itself and is about to exec) or
// Refused (it will exit 69 without exec'ing); after Enforced, ExecError if
// execve then failed (it exits 126 or 127).
type Report struct {
	Enforced  *Enforced `json:"enforced,omitempty"`
	Refused   string    `json:"refused,omitempty"`
	ExecError string    `json:"exec_error,omitempty"`
}

// Enforced is what the helper actually enforced on itself before execve,
// never what was requested. It becomes the enforcement record (Record).
type Enforced struct {
	// LandlockABI is the ABI the ruleset was built for (see effectiveABI);
	// 0: no Landlock at all (only under best-effort).
	LandlockABI int `json:"landlock_abi"`
	// FS are the path-beneath rules as applied; every filesystem right the
	// ABI handles is denied elsewhere.
	FS []FSRule `json:"fs"`
	// TCP and UDP say what a socket of each kind can reach: NetDenied,
	// NetPorts (TCP connect only to Ports; bind denied) or NetOpen.
	TCP   string `json:"tcp"`
	Ports []int  `json:"ports"`
	UDP   string `json:"udp"`
	// Scopes are the Landlock IPC scopes (ABI ≥ 6).
	Scopes []string `json:"scopes"`
	// SeccompApplied: the network filter is installed. Read it with
	// SeccompNetworkDenied (only AF_UNIX sockets), never alone.
	SeccompApplied       bool `json:"seccomp_applied"`
	SeccompNetworkDenied bool `json:"seccomp_network_denied"`
	IOURingDenied        bool `json:"io_uring_denied"`
	// BestEffort was asked for; Dropped is what it let go.
	BestEffort bool     `json:"best_effort"`
	Dropped    []string `json:"dropped"`
	// NotCovered are the known gaps of this enforcement that no flag asked
	// to close (for example pathname unix sockets before ABI 9).
	NotCovered []string `json:"not_covered"`
	// Egress is the egress proxy the child reaches the network through
	// (--allow-egress), or nil.
	Egress *EgressEnforced `json:"egress,omitempty"`
}

// EgressEnforced is what was enforced of --allow-egress: the grants, the
// port of the proxy's listener (on 127.0.0.1 in the child's network),
// and whether the child has a network namespace of its own, in which
// that listener is the only way out.
type EgressEnforced struct {
	Grants    []string `json:"grants"`
	ProxyPort int      `json:"proxy_port"`
	NetNS     bool     `json:"netns"`
}

// Values of Enforced.TCP and Enforced.UDP; part of the record's format.
const (
	NetDenied = "denied" // no socket of that kind can reach the network
	NetPorts  = "ports"  // Landlock allows only Enforced.Ports (TCP connect)
	NetOpen   = "open"   // not restricted
)

// FSRule is one Landlock rule as applied: a path and the rights beneath it.
type FSRule struct {
	Path   string   `json:"path"`
	Access []string `json:"access"`
}

// Record returns the enforcement record of e.
func (e *Enforced) Record() *record.Enforcement {
	r := &record.Enforcement{
		LandlockABI:          e.LandlockABI,
		TCP:                  e.TCP,
		NetPorts:             e.Ports,
		UDP:                  e.UDP,
		HostsEnforced:        e.Egress != nil && e.Egress.NetNS, // otherwise ports only, whatever --allow-net named
		Scopes:               e.Scopes,
		SeccompApplied:       e.SeccompApplied,
		SeccompNetworkDenied: e.SeccompNetworkDenied,
		IOURingDenied:        e.IOURingDenied,
		BestEffort:           e.BestEffort,
		Dropped:              e.Dropped,
		NotCovered:           e.NotCovered,
	}
	if x := e.Egress; x != nil {
		r.Egress = &record.EgressEnforcement{Grants: x.Grants, ProxyPort: x.ProxyPort, NetNS: x.NetNS}
	}
	for _, f := range e.FS {
		r.FS = append(r.FS, record.FSRule{Path: f.Path, Access: f.Access})
	}
	return r
}

// maxReport bounds what the parent reads from the helper.
const maxReport = 1 << 20

// readReport reads the helper's lines until end of file (the helper has
// exec'd or exited) and merges them.
func readReport(r io.Reader) (*Report, error) {
	sc := bufio.NewScanner(io.LimitReader(r, maxReport))
	sc.Buffer(make([]byte, 0, 4096), maxReport)
	var rep Report
	n := 0
	for sc.Scan() {
		var line Report
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return nil, fmt.Errorf("%w: unreadable line %q: %v", ErrNoReport, sc.Bytes(), err)
		}
		n++
		if line.Enforced != nil {
			rep.Enforced = line.Enforced
		}
		if line.Refused != "" {
			rep.Refused = line.Refused
		}
		if line.ExecError != "" {
			rep.ExecError = line.ExecError
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoReport, err)
	}
	if n == 0 {
		return nil, ErrNoReport
	}
	return &rep, nil
}
