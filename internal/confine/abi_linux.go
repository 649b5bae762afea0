//go:build linux

package confine

import (
	"strconv"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// abiConfigs are the access rights each Landlock ABI can handle, as the
// go-landlock in go.mod knows them; index 0 is "no Landlock".
var abiConfigs = [...]landlock.Config{
	{}, landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5,
	landlock.V6, landlock.V7, landlock.V8, landlock.V9, landlock.V10, landlock.V11,
}

// maxKnownABI is the newest ABI the library knows: a newer kernel is used
// at this level, never beyond what the library can describe.
const maxKnownABI = len(abiConfigs) - 1

// Landlock errata (bit N-1 of LANDLOCK_CREATE_RULESET_ERRATA is erratum N).
const (
	// erratumScopedSignal (ABI 6): signal scoping was too strict between
	// threads of one process. Unfixed, a scoped Go process cannot signal
	// its own threads, so scopes are unusable: ABI 6+ is used as 5, as
	// go-landlock itself does (its check would otherwise fail).
	erratumScopedSignal = 2
	// erratumDisconnected (ABI 1): rename or link through a disconnected
	// directory could widen access rights (bypassing "refer"). Unfixed, the
	// refer right is withheld, so files never move between directories.
	erratumDisconnected = 3
)

func erratumFixed(errata, n int) bool { return errata&(1<<(n-1)) != 0 }

// abiCap is a test hook, empty in every release build: a test builds aegis
// with -ldflags "-X github.com/aegisrelay/aegis/internal/confine.abiCap=N" to make
// the helper behave as on a kernel whose Landlock ABI is at most N, which
// is how the fail-closed path is tested on a kernel that has everything.
// It can only lower what is enforced, and the report says so.
var abiCap string

// testCap returns abiCap as a number, or -1.
func testCap() int {
	if abiCap == "" {
		return -1
	}
	n, err := strconv.Atoi(abiCap)
	if err != nil || n < 0 {
		return 0 // a malformed hook lowers everything rather than nothing
	}
	return n
}

// kernelABI asks the kernel for its Landlock ABI version and errata; 0 and
// 0 when Landlock is not built in or not enabled at boot.
func kernelABI() (version, errata int) {
	v, err := ll.LandlockGetABIVersion()
	if err != nil || v < 0 {
		return 0, 0
	}
	e, err := ll.LandlockGetErrata()
	if err != nil || e < 0 {
		e = 0 // kernels before errata reporting: pretend none is fixed
	}
	return v, e
}

// effectiveABI is the ABI the ruleset is built for: the kernel's, capped at
// what the library knows, lowered for an unfixed erratum that makes a
// feature unusable, and capped by the test hook (capAt < 0: none).
func effectiveABI(kernel, errata, capAt int) int {
	abi := kernel
	if abi > maxKnownABI {
		abi = maxKnownABI
	}
	if abi >= 6 && !erratumFixed(errata, erratumScopedSignal) {
		abi = 5
	}
	if capAt >= 0 && abi > capAt {
		abi = capAt
	}
	if abi < 0 {
		abi = 0
	}
	return abi
}
