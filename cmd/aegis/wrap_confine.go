package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/aegisrelay/aegis/internal/confine"
	"github.com/aegisrelay/aegis/internal/exitcode"
	"github.com/aegisrelay/aegis/internal/supervise"
)

// confineFlags are wrap's confinement and child-environment flags
// (internal/confine/doc.go).
type confineFlags struct {
	confine, execSupport, udp, unix, bestEffort, cleanEnv bool
	printProfile                                          bool
	read, write, net, env, egress                         stringList
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(s string) error { *l = append(*l, s); return nil }

func addConfineFlags(fs *flag.FlagSet) *confineFlags {
	c := &confineFlags{}
	fs.BoolVar(&c.confine, "confine", false, "run the child under Landlock and seccomp (Linux): no file, network socket or io_uring beyond what --allow-* grants; exit 69 if the kernel cannot enforce it all")
	fs.Var(&c.read, "allow-read", "with --confine: grant read and execute beneath `PATH` (repeatable)")
	fs.Var(&c.write, "allow-write", "with --confine: grant read, execute, write, create, remove and truncate beneath `PATH` (repeatable)")
	fs.Var(&c.net, "allow-net", "with --confine: allow TCP connect to `HOST:PORT`; only the port is enforced (repeatable)")
	fs.Var(&c.egress, "allow-egress", "with --confine: the child reaches the network only through aegis's proxy, which allows `NAME[:PORT]` (port 443 unless named; *.example.org for the names beneath; NAME:PORT=ADDR pins a name to an address, local or private too; each connection recorded; repeatable)")
	fs.BoolVar(&c.execSupport, "allow-exec-support", false, "with --confine: grant read and execute on /usr /lib /lib64 /bin /sbin /etc /dev /proc, which a dynamically linked program or a script needs (a named hole: /etc/passwd, /proc)")
	fs.BoolVar(&c.udp, "allow-udp", false, "with --confine: allow UDP sockets to every host and port (a named hole; DNS lookups need it)")
	fs.BoolVar(&c.unix, "allow-unix", false, "with --confine: allow creating unix sockets (a named hole: before Landlock ABI 9 they reach any pathname socket the child can name; from ABI 9 only those beneath --allow-write)")
	fs.BoolVar(&c.bestEffort, "best-effort", false, "with --confine: run even if the kernel cannot enforce the whole profile; what was dropped is recorded")
	fs.BoolVar(&c.cleanEnv, "clean-env", false, "start the child with only HOME, PATH, LANG and what --env adds (the names are recorded, never the values)")
	fs.BoolVar(&c.printProfile, "print-profile", false, "with --confine: print what the child would be confined to on this kernel, and exit without running anything")
	fs.Var(&c.env, "env", "with --clean-env: pass `NAME` from aegis's environment, or set NAME=VALUE (repeatable)")
	return c
}

// resolve checks the flags. It returns the confinement profile (nil
// without --confine), the child's environment (nil: aegis's own) and the
// variable names session_start records (nil without --clean-env). Its
// errors are usage errors.
func (c *confineFlags) resolve() (*confine.Profile, []string, []string, error) {
	prof, err := confine.Requested(c.confine, confine.Profile{
		Read: c.read, Write: c.write, Net: c.net,
		ExecSupport: c.execSupport, UDP: c.udp, Unix: c.unix, BestEffort: c.bestEffort, Egress: c.egress,
	})
	if err != nil {
		return nil, nil, nil, errors.New(strings.TrimPrefix(err.Error(), "confine: invalid profile: "))
	}
	if c.printProfile && prof == nil {
		return nil, nil, nil, errors.New("--print-profile needs --confine")
	}
	env, names, err := supervise.ChildEnv(c.cleanEnv, c.env, prof != nil)
	return prof, env, names, err
}

// confineExec runs the hidden `aegis __confine-exec -- CMD…` when args (all
// of os.Args) name it; ok is false otherwise. main calls it first.
func confineExec(args []string) (code int, ok bool) {
	if len(args) > 1 && args[1] == confine.HelperCommand {
		return confine.Main(args[2:]), true
	}
	return 0, false
}

// undumpable makes aegis non-dumpable before the child starts
// (confine.UndumpableFor): a failure refuses a confined session (exit 69)
// and is a warning otherwise.
func undumpable(prof *confine.Profile) (code int, ok bool) {
	warn, err := confine.UndumpableFor(prof)
	switch {
	case warn:
		fmt.Fprintf(os.Stderr, "aegis: wrap: warning: %v\n", err)
	case err != nil:
		return fail(exitcode.Confinement, "wrap: %v", err), false
	}
	return 0, true
}
