// Package confine confines a child MCP server with Landlock and seccomp
// through a self-restricting re-exec, and says exactly what it
// enforced.
//
// Confinement is Linux's: on any other system the package builds, and
// Command refuses with an error matching ErrRefused, so that wrap
// --confine exits 69 and records why, without starting the child.
// Recording and --policy do not depend on this package.
//
// # Mechanism
//
// aegis wrap --confine does not restrict anything between fork and exec.
// It starts its own binary as the hidden command
//
//	aegis __confine-exec -- CMD [ARGS…]
//
// and that helper, an ordinary process, applies Landlock and seccomp to
// itself and then execve(2)s the target; both survive execve. The helper
// runs on one locked OS thread from the first line of main to the execve,
// and it restricts that thread only: execve ends every other thread, so
// the target inherits exactly the restricted thread's credentials and
// filter. Nothing in this package uses unsafe or cgo.
//
// The profile travels in the environment variable EnvVar (argv is
// world-readable in /proc; environ is owner-readable), which the helper
// removes before execve. The helper reports to the parent over an
// inherited pipe that it marks close-on-exec, so that the parent reads
// end-of-file exactly when the target has been exec'd or the helper has
// exited. The report is one JSON line (Report), possibly followed by a
// second one carrying the execve error.
//
// The helper is authority-reducing only: it holds no privilege, is not
// setuid, and its sole powers are to narrow itself and exec. Invoked by
// hand without a profile it refuses.
//
// Before it starts the helper, Command checks what the command needs to
// start against the grants (Reach: a script's interpreter, the program
// env runs, an interpreter's script file) and refuses with a ReachError
// naming the grant that covers each file missing: such a child would
// fail with a permission error before it ran, and the error it printed
// would not say which grant it lacked.
//
// # What is enforced, and how it is stated
//
// The Landlock ABI the helper builds for is computed here, never taken
// from a library's best-effort fallback: the kernel's version (landlock_
// create_ruleset with LANDLOCK_CREATE_RULESET_VERSION), lowered for
// errata that make a feature unusable, capped at the newest ABI the
// go-landlock version in go.mod knows. The ruleset is built for exactly
// that ABI and enforced without best-effort mode, so that the library can
// only fail, never silently enforce less.
//
// If that ABI cannot enforce the whole requested profile, the helper
// refuses to exec (wrap exits 69 and records why), unless the operator
// passed --best-effort; then it drops what the kernel cannot do and the
// report lists every dropped item. The report states what was enforced,
// never what was requested; it becomes the "enforcement" record.
//
// The seccomp filter is a network filter, not a syscall sandbox: its
// default is allow. It checks the architecture (anything but the native
// one, such as i386 or x32 entry points on amd64, is killed), compares
// only the low 32 bits of integer arguments (the kernel reads them as
// int), and decides socket(2) and socketpair(2) by an allow-list. Unix
// sockets are refused too (EACCES) unless --allow-unix: before Landlock
// ABI 9 nothing else keeps a unix socket from any pathname socket the
// child can name, an ssh-agent's included, whose keys sign for whoever
// asks; from ABI 9 Landlock's resolve_unix, granted only beneath
// --allow-write, makes the grant finer. socketpair(2) stays allowed: a
// pair reaches nothing outside. A profile that would let the child reach
// the agent holding the log's root key (Profile.Agent) is refused, best
// effort or not, and wrap takes SSH_AUTH_SOCK out of a confined child's
// environment unless --clean-env --env passes it. It also
// refuses what Landlock's hooks do not see: TCP Fast Open (a connect from
// inside sendto, sendmsg or sendmmsg), listen(2) wherever a TCP socket can
// be had (it binds without the bind hook, and no bind is ever granted),
// and, wherever nothing is granted write, the calls that change a file's
// mode, owner, extended attributes, times or inode flags, which no
// Landlock ABI handles. With a write grant those calls stay allowed, on
// every file, and the record's not_covered says so. See filter_linux.go
// for the exact program.
//
// # Egress (--allow-egress)
//
// With egress grants (Profile.Egress) Command starts the helper in a
// network namespace of its own (CLONE_NEWNET as root; otherwise with a
// user namespace mapping the user to itself and CAP_NET_ADMIN ambient in
// it, found once by starting the helper so with --netns-probe). The
// helper brings the namespace's loopback up, binds a TCP listener on
// 127.0.0.1 there, hands it to wrap over a socket pair (its descriptor
// EgressFD; Launch.Listener receives it), closes its own copies, drops
// the ambient capability, and sets HTTP(S)_PROXY and ALL_PROXY for the
// target (NO_PROXY removed). Landlock then allows TCP connect to that
// port alone and seccomp refuses setns(2) besides listen and the other
// sockets, so the proxy (package egress, served by wrap) is the child's
// one way out. Where no namespace can be made, the helper refuses (exit
// 69) unless --best-effort, and then binds on aegis's own loopback and
// reports the namespace dropped: the child can connect to that port of
// any host.
//
// # /proc
//
// --allow-exec-support grants the target's own /proc/PID (the helper's
// PID, which execve keeps), not /proc: Landlock stops ptrace of processes
// outside the domain but not reads of their /proc files, so all of /proc
// would give a root child the environ, maps and memory of aegis and of the
// MCP client. procfs makes a new inode whenever it looks a name up again
// after its dentry was evicted, and a Landlock rule holds an inode, so the
// helper holds every rule beneath /proc open with an O_PATH descriptor
// that the target inherits; without it the target would lose its own
// /proc/PID under memory pressure. aegis wrap makes itself non-dumpable
// (Undumpable), which keeps a non-root child of the same account out of
// its memory and environ whatever the child is granted; UndumpableFor
// refuses a confined session when it fails, and makes it a warning
// otherwise. PrintProfile is wrap --print-profile: Preview's Enforced
// written as text, nothing run.
package confine
