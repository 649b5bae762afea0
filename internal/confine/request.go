package confine

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Requested is the profile wrap's flags ask for: with confine
// (--confine), p checked in place (Check); without it nil, and an error
// with ErrProfile naming the first grant given, for a grant means
// nothing to a child that is not confined.
func Requested(confine bool, p Profile) (*Profile, error) {
	if !confine {
		for _, f := range []struct {
			name string
			set  bool
		}{{"--allow-read", len(p.Read) > 0}, {"--allow-write", len(p.Write) > 0}, {"--allow-net", len(p.Net) > 0},
			{"--allow-exec-support", p.ExecSupport}, {"--allow-egress", len(p.Egress) > 0}, {"--allow-udp", p.UDP}, {"--allow-unix", p.Unix}, {"--best-effort", p.BestEffort}} {
			if f.set {
				return nil, fmt.Errorf("%w: %s needs --confine", ErrProfile, f.name)
			}
		}
		return nil, nil
	}
	if err := p.Check(); err != nil {
		return nil, err
	}
	return &p, nil
}

// WriteText writes what e enforces as wrap --print-profile shows it, a
// line (or a table) per kind of access, each indented two spaces.
func (e *Enforced) WriteText(w io.Writer) {
	if e.LandlockABI == 0 {
		fmt.Fprintf(w, "  files: not restricted (no Landlock)\n")
	} else {
		fmt.Fprintf(w, "  files (Landlock ABI %d): only these paths, with these rights; everything else is denied\n", e.LandlockABI)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, r := range e.FS {
			fmt.Fprintf(tw, "    %s\t%s\n", r.Path, strings.Join(r.Access, " "))
		}
		tw.Flush()
	}
	tcp := e.TCP
	switch {
	case tcp == NetPorts && e.Egress != nil:
		tcp = "connect only to the egress proxy's port (below); no listening"
	case tcp == NetPorts:
		tcp = fmt.Sprintf("connect only to port(s) %v (any host); no listening", e.Ports)
	}
	fmt.Fprintf(w, "  tcp: %s\n  udp: %s\n", tcp, e.UDP)
	if e.SeccompApplied {
		fmt.Fprintf(w, "  seccomp: on (network sockets beyond the above, io_uring, TCP Fast Open refused)\n")
	}
	if len(e.Scopes) > 0 {
		fmt.Fprintf(w, "  scoped: %s (the child cannot reach those of processes outside its sandbox)\n", strings.Join(e.Scopes, ", "))
	}
	if x := e.Egress; x != nil {
		where := "in a network namespace of its own, whose only way out it is: no other host, no DNS"
		if !x.NetNS {
			where = "on aegis's own loopback (no network namespace: other hosts on that port are not kept out)"
		}
		port := "a port chosen at start"
		if x.ProxyPort != 0 {
			port = fmt.Sprint(x.ProxyPort)
		}
		fmt.Fprintf(w, "  egress: only through aegis's proxy at 127.0.0.1 (%s), %s; HTTP(S)_PROXY name it\n", port, where)
		fmt.Fprintf(w, "    allowed: %s\n", strings.Join(x.Grants, " "))
	}
	for _, d := range e.Dropped {
		fmt.Fprintf(w, "  dropped (--best-effort): %s\n", d)
	}
	for _, n := range e.NotCovered {
		fmt.Fprintf(w, "  not covered: %s\n", n)
	}
}

// PrintProfile writes what the child argv would be confined to on this
// kernel under p, as the enforcement record will state it, with the
// grants to add when the child meets a permission error (wrap
// --print-profile); it runs nothing. Its error is Preview's, or, when
// argv needs files to start that p does not grant (Reach), one matching
// ErrUnreached that names the grants, after the profile and those files.
func PrintProfile(w io.Writer, p Profile, argv []string) error {
	e, err := Preview(p, argv)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "aegis wrap --confine would run %s with:\n", strings.Join(argv, " "))
	e.WriteText(w)
	if e := unreached(p, argv); e != nil {
		return printUnreached(w, e)
	}
	fmt.Fprintf(w, "A permission error in the child means a grant is missing: --allow-read, --allow-write, --allow-net, --allow-egress, --allow-udp, --allow-exec-support (see 'aegis wrap --help').\n")
	return nil
}

// UndumpableFor makes the process non-dumpable before the child starts
// (Undumpable), so that a child of the same unprivileged account cannot
// read the signing key or the environment from its /proc files or
// memory. Under a profile p (--confine) a failure refuses the session,
// since the confinement would not be what the record says; without one
// the child has aegis's authority anyway, and the failure is only a
// warning (warn true).
func UndumpableFor(p *Profile) (warn bool, err error) {
	err = Undumpable()
	return err != nil && p == nil, err
}
