package bench

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// crelaySource is the C floor relay (crelay/relay.c): poll, read, write,
// one thread. The figure it floors is relay CPU per message, and a Go
// relay's goroutines and runtime are costs a relay need not pay, so that
// floor is C.
//
//go:embed crelay/relay.c
var crelaySource []byte

// buildCRelay compiles the C floor relay with gcc into the work directory
// once. Without gcc (or when it fails) it records why in h.crelayMissing
// and returns "": the rows it floors are then reported unmeasured, never
// judged against another floor.
func (h *harness) buildCRelay(ctx context.Context) string {
	if h.crelay != "" || h.crelayMissing != "" {
		return h.crelay
	}
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		h.crelayMissing = "no gcc on PATH to build the C floor relay"
		h.logf("   %s: its rows are not measured", h.crelayMissing)
		return ""
	}
	src := filepath.Join(h.work, "crelay.c")
	bin := filepath.Join(h.work, "crelay")
	if err := os.WriteFile(src, crelaySource, 0o644); err != nil {
		h.crelayMissing = fmt.Sprintf("write %s: %v", src, err)
		return ""
	}
	h.logf("building the C floor relay (gcc -O2)")
	if out, err := exec.CommandContext(ctx, gcc, "-O2", "-o", bin, src).CombinedOutput(); err != nil {
		h.crelayMissing = fmt.Sprintf("gcc failed on the C floor relay: %v: %s", err, out)
		h.logf("   %s: its rows are not measured", h.crelayMissing)
		return ""
	}
	h.crelay = bin
	return bin
}
