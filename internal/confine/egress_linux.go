//go:build linux

package confine

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// netnsProbe is the helper's argument that only asks whether it could be
// started in the namespaces (it exits 0 at once).
const netnsProbe = "--netns-probe"

// nsAttr is how the helper is started in a network namespace of its own:
// CLONE_NEWNET alone where this process may make one (root), otherwise
// also a user namespace mapping this process's uid and gid to
// themselves, with CAP_NET_ADMIN in it as an ambient capability so that
// the helper can bring up its loopback (it drops it before execve).
func nsAttr(user bool) *syscall.SysProcAttr {
	if !user {
		return &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}
	}
	return &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWNET | syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}},
		AmbientCaps: []uintptr{unix.CAP_NET_ADMIN},
	}
}

var netns struct {
	sync.Mutex
	done bool
	user bool
	err  error
}

// netnsChoice is how the helper can be given a network namespace here
// (nsAttr's user), found once by starting the helper so (netnsProbe),
// or why it cannot be.
func netnsChoice(self string) (user bool, err error) {
	netns.Lock()
	defer netns.Unlock()
	if netns.done {
		return netns.user, netns.err
	}
	try := []bool{true}
	if os.Geteuid() == 0 {
		try = []bool{false, true}
	}
	var errs []error
	for _, u := range try {
		cmd := exec.Command(self, HelperCommand, netnsProbe)
		cmd.SysProcAttr = nsAttr(u)
		if err := cmd.Run(); err != nil {
			errs = append(errs, err)
			continue
		}
		netns.done, netns.user, netns.err = true, u, nil
		return u, nil
	}
	netns.done, netns.err = true, errors.Join(errs...)
	return false, netns.err
}

// egressCommand prepares cmd's start for --allow-egress: a network
// namespace if one can be had (p.NetNS, or p.NetNSError), and a socket
// pair whose helper end is its descriptor 4 (p.EgressFD), on which the
// helper hands over the proxy's listener. It returns the parent's end.
func egressCommand(p *Profile, cmd *exec.Cmd, self string) (*os.File, error) {
	if user, err := netnsChoice(self); err != nil {
		p.NetNSError = err.Error()
	} else {
		p.NetNS = true
		cmd.SysProcAttr = nsAttr(user)
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("confine: egress socket pair: %w", err)
	}
	parent, child := os.NewFile(uintptr(fds[0]), "aegis-egress"), os.NewFile(uintptr(fds[1]), "aegis-egress-helper")
	cmd.ExtraFiles = append(cmd.ExtraFiles, child)
	p.EgressFD = 2 + len(cmd.ExtraFiles)
	return parent, nil
}

// receiveListener takes the proxy's listener from the helper, which sent
// it before it exec'd the target.
func receiveListener(f *os.File) (net.Listener, error) {
	buf, oob := make([]byte, 1), make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := unix.Recvmsg(int(f.Fd()), buf, oob, unix.MSG_DONTWAIT|unix.MSG_CMSG_CLOEXEC)
	if err != nil || n == 0 {
		return nil, fmt.Errorf("%w: the helper handed over no egress listener (%v)", ErrNoReport, err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, fmt.Errorf("%w: the egress listener's message is unreadable", ErrNoReport)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return nil, fmt.Errorf("%w: the egress listener's message holds no descriptor", ErrNoReport)
	}
	lf := os.NewFile(uintptr(fds[0]), "aegis-egress-listener")
	defer lf.Close()
	return net.FileListener(lf)
}

// listenEgress is the helper's side: in its own network namespace it
// brings the loopback up; it binds a TCP listener on 127.0.0.1 (an
// ephemeral port), hands it to the parent on fd, and closes its own
// copies, so that the target can neither accept on it nor reach the
// parent's socket. It returns the port. It runs before Landlock and
// seccomp, which would refuse the bind and the listen.
func listenEgress(p Profile) (int, error) {
	if p.EgressFD < 3 {
		return 0, errors.New("no egress descriptor in the profile")
	}
	defer unix.Close(p.EgressFD)
	if p.NetNS {
		if err := loopbackUp(); err != nil {
			return 0, fmt.Errorf("bringing up the namespace's loopback: %w", err)
		}
	}
	ln, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("egress listener: %w", err)
	}
	defer unix.Close(ln)
	if err := unix.Bind(ln, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return 0, fmt.Errorf("egress listener: bind: %w", err)
	}
	if err := unix.Listen(ln, 128); err != nil {
		return 0, fmt.Errorf("egress listener: listen: %w", err)
	}
	sa, err := unix.Getsockname(ln)
	if err != nil {
		return 0, fmt.Errorf("egress listener: %w", err)
	}
	if err := unix.Sendmsg(p.EgressFD, []byte{0}, unix.UnixRights(ln), nil, 0); err != nil {
		return 0, fmt.Errorf("handing the egress listener to aegis: %w", err)
	}
	// The ambient CAP_NET_ADMIN of a user namespace ends here: the
	// target gets no capability from it.
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return 0, fmt.Errorf("dropping ambient capabilities: %w", err)
	}
	return sa.(*unix.SockaddrInet4).Port, nil
}

// loopbackUp sets IFF_UP on lo, the one interface of a new network
// namespace, which starts down.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}
