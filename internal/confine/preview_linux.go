//go:build linux

package confine

import (
	"fmt"
	"os"
)

// Preview returns what the helper would enforce for p on this kernel when
// it runs argv[0], without running anything: the rules, the network
// verdicts, what best effort would drop and the known gaps. The /proc
// entry it names is a placeholder for the child's own. It fails with
// ErrRefused when the profile cannot be enforced whole and p.BestEffort is
// false, as wrap would.
func Preview(p Profile, argv []string) (*Enforced, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	if len(argv) == 0 {
		return nil, fmt.Errorf("confine: no command")
	}
	target, err := targetPath(argv[0])
	if err != nil {
		return nil, err
	}
	kernel, errata := kernelABI()
	abi := effectiveABI(kernel, errata, testCap())
	const proc = "/proc/PID"
	stat := func(path string) (bool, error) {
		if path == proc {
			return true, nil
		}
		return statDir(path)
	}
	if len(p.Egress) > 0 {
		// Whether the helper would get a network namespace is asked of
		// the kernel as Command asks it; the proxy's port is chosen when
		// it binds, and shown as 0 here.
		if self, err := os.Executable(); err != nil {
			p.NetNSError = err.Error()
		} else if _, err := netnsChoice(self); err != nil {
			p.NetNSError = err.Error()
		} else {
			p.NetNS = true
		}
	}
	pl, err := makePlan(p, target, proc, abi, errata, seccompSupported(), stat)
	if err != nil {
		return nil, err
	}
	return &pl.rep, nil
}
