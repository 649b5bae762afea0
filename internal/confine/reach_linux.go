//go:build linux

package confine

// filesConfined reports whether the helper would restrict the child's
// files on this kernel (a Landlock ABI to build rules for): without it,
// under --best-effort, every file is reached and Reach has nothing to say.
func filesConfined() bool {
	kernel, errata := kernelABI()
	return effectiveABI(kernel, errata, testCap()) > 0
}
