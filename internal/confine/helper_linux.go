package confine

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/aegisrelay/aegis/internal/exitcode"
)

// Exit statuses of the helper, as wrap sees them: wrap reports them as its
// own, so they are package exitcode's.
const (
	ExitRefused    = exitcode.Confinement // confinement refused: nothing was executed
	exitUsage      = exitcode.Usage       // run by hand, without a profile
	exitNotFound   = exitcode.CannotStart // the target does not exist
	exitCannotExec = exitcode.CannotExec  // the target exists but could not be executed
)

// Main is `aegis __confine-exec -- CMD [ARGS…]`: it reads and removes the
// profile from EnvVar, restricts itself, reports, and execs CMD. It returns
// only on failure, with the exit status. main must call it before anything
// else, on the goroutine main runs on.
func Main(args []string) int {
	// Every restriction below applies to this OS thread only, and execve
	// runs on it: it must never be handed to another goroutine.
	runtime.LockOSThread()

	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "aegis: %s: %s\n", HelperCommand, fmt.Sprintf(format, a...))
		return code
	}
	if len(args) == 1 && args[0] == netnsProbe {
		return 0 // started in the namespaces Command asks about
	}
	if len(args) < 2 || args[0] != "--" {
		return fail(exitUsage, "usage: aegis %s -- CMD [ARGS…] (run by aegis wrap --confine)", HelperCommand)
	}
	argv := args[1:]
	spec, ok := os.LookupEnv(EnvVar)
	if !ok {
		return fail(exitUsage, "no profile in $%s (this command is run by aegis wrap --confine)", EnvVar)
	}
	os.Unsetenv(EnvVar)
	p, err := decodeProfile(spec)
	if err != nil {
		return fail(ExitRefused, "%v", err)
	}
	rep, err := openReport(p.ReportFD)
	if err != nil {
		return fail(ExitRefused, "report pipe: %v", err)
	}
	send := func(r Report) error {
		b, _ := json.Marshal(r)
		_, err := rep.Write(append(b, '\n'))
		return err
	}
	// tell reports a failure; aegis wrap prints and records it, so stderr
	// gets it only if the report cannot be sent.
	tell := func(code int, r Report, msg string) int {
		if send(r) != nil {
			return fail(code, "%s", msg)
		}
		return code
	}
	refuse := func(err error) int {
		why := strings.TrimPrefix(err.Error(), ErrRefused.Error()+": ")
		return tell(ExitRefused, Report{Refused: why}, "confinement refused: "+why)
	}

	target, err := targetPath(argv[0])
	if err != nil {
		return tell(exitNotFound, Report{ExecError: err.Error()}, err.Error())
	}
	kernel, errata := kernelABI()
	abi := effectiveABI(kernel, errata, testCap())
	procSelf := "/proc/" + strconv.Itoa(os.Getpid())
	if len(p.Egress) > 0 {
		if p.proxyPort, err = listenEgress(p); err != nil {
			return refuse(fmt.Errorf("%w: --allow-egress: %v", ErrRefused, err))
		}
	}
	pl, err := makePlan(p, target, procSelf, abi, errata, seccompSupported(), statDir)
	if err != nil {
		return refuse(err)
	}
	if err := pl.apply(); err != nil {
		return refuse(fmt.Errorf("%w: %v", ErrRefused, err))
	}
	if err := send(Report{Enforced: &pl.rep}); err != nil {
		// The parent cannot record what was enforced: do not run unrecorded.
		return fail(ExitRefused, "reporting to aegis wrap: %v", err)
	}
	env := os.Environ()
	if len(p.Egress) > 0 {
		env = withProxy(env, p.proxyPort)
	}
	err = syscall.Exec(target, argv, env)
	msg := fmt.Sprintf("exec %s: %v", target, err)
	if errors.Is(err, unix.EACCES) && !p.ExecSupport {
		msg += " (under --confine a dynamically linked program or a script needs --allow-exec-support, or read access to its interpreter and libraries)"
	}
	if errors.Is(err, unix.ENOENT) {
		return tell(exitNotFound, Report{ExecError: msg}, msg)
	}
	return tell(exitCannotExec, Report{ExecError: msg}, msg)
}

// openReport returns the inherited report pipe, made close-on-exec so that
// the parent reads end of file once the target runs.
func openReport(fd int) (*os.File, error) {
	if fd < 3 {
		return nil, fmt.Errorf("no report descriptor in the profile")
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
		return nil, fmt.Errorf("descriptor %d: %w", fd, err)
	}
	unix.CloseOnExec(fd)
	return os.NewFile(uintptr(fd), "aegis-confine-report"), nil
}

func statDir(path string) (bool, error) {
	st, err := os.Stat(path)
	if err != nil {
		return false, err
	}
	return st.IsDir(), nil
}

// targetPath is the absolute path of the program name runs, found as
// execve's caller finds it (PATH for a bare name): the file the target's
// own Landlock rule names.
func targetPath(name string) (string, error) {
	target, err := exec.LookPath(name)
	if err == nil {
		target, err = filepath.Abs(target)
	}
	return target, err
}
