//go:build unix

package bench

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestUsageHelperTouch is the process TestUsageOf runs: it touches each
// page of a fresh mapping of the size the environment names, then exits.
func TestUsageHelperTouch(t *testing.T) {
	n, err := strconv.Atoi(os.Getenv("AEGIS_BENCH_TOUCH_PAGES"))
	if err != nil {
		return // a plain test run: only TestUsageOf's process touches pages
	}
	// A mapping of its own: pages the Go heap may already hold would not
	// fault.
	b, err := syscall.Mmap(-1, 0, n*os.Getpagesize(), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(b); i += os.Getpagesize() {
		b[i] = 1
	}
	os.Exit(int(b[len(b)-os.Getpagesize()]) - 1)
}

// TestUsageOf checks that usageOf reads what the kernel counted for the
// process that ended: a process that touches tens of thousands of fresh
// pages more counts nearly that many more faults (the rest of its start
// varies by far less), and some CPU.
func TestUsageOf(t *testing.T) {
	run := func(pages int) (int64, bool) {
		t.Helper()
		cmd := exec.Command(os.Args[0], "-test.run=^TestUsageHelperTouch$")
		// atexit_sleep_ms=0: a race-built program otherwise sleeps a second
		// as it exits, for reports nothing here is left to make.
		cmd.Env = append(os.Environ(), "AEGIS_BENCH_TOUCH_PAGES="+strconv.Itoa(pages),
			"GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("helper touching %d pages: %v\n%s", pages, err, out)
		}
		faults, cpu, ok := usageOf(cmd.ProcessState)
		if ok && cpu <= 0 {
			t.Errorf("helper touching %d pages: CPU %v; want > 0", pages, cpu)
		}
		return faults, ok
	}
	// The fewest faults of two runs of each: the rest of a race-built
	// start varies by a few thousand faults on a loaded machine, and only
	// ever adds; the pages touched are 65,536, whose tenth (the slack
	// asked) is above that variation.
	least := func(pages int) (int64, bool) {
		a, ok1 := run(pages)
		b, ok2 := run(pages)
		return min(a, b), ok1 && ok2
	}
	for _, tc := range []struct{ small, large int }{{1, 65536}} {
		small, ok1 := least(tc.small)
		large, ok2 := least(tc.large)
		if !ok1 || !ok2 {
			t.Fatalf("usageOf: no rusage for an ended process on a unix system")
		}
		if want := int64(tc.large-tc.small) * 9 / 10; small <= 0 || large-small < want {
			t.Errorf("faults: %d touching %d pages, %d touching %d; want > 0 and at least %d more", small, tc.small, large, tc.large, want)
		}
	}
}
