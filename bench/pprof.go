package bench

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// Profile is pprof's top functions of wrap's wiring under one workload
// (see profwrap in the package documentation).
type Profile struct {
	Workload string `json:"workload"`
	File     string `json:"file"` // the CPU profile, beside results.json
	Top      string `json:"top"`  // go tool pprof -top
}

func (h *harness) pprofSection(ctx context.Context) error {
	n := h.it.profile
	// Enough work for a second or more of wrap's CPU at pprof's 100 Hz.
	work := []struct {
		name, durability string
		size             int
		run              func(p *proc) error
	}{
		{"unrecorded ping, 32 in flight", "strict", 0, func(p *proc) error {
			_, err := p.pipeline(pingReq, 40*n, 32, nil)
			return err
		}},
		{"unrecorded ping, lock-step", "strict", 0, func(p *proc) error { return p.warm(pingReq, 8*n) }},
		{"tools/call at none, lock-step", "none", 0, func(p *proc) error { return p.warm(callReq, 2*n) }},
		{"tools/call at strict, lock-step", "strict", 0, func(p *proc) error { return p.warm(callReq, n) }},
		{"tools/call at strict, 32 in flight", "strict", 0, func(p *proc) error {
			_, err := p.pipeline(callReq, 2*n, 32, nil)
			return err
		}},
		{"16 MiB response, unrecorded", "strict", 16 << 20, func(p *proc) error {
			return p.warm(bigReq, max(1, n/100))
		}},
		{"16 MiB response, recorded at none", "none", 16 << 20, func(p *proc) error {
			return p.warm(callReq, max(1, n/100))
		}},
	}
	// The profiles, read by pprof once every workload has run.
	type profile struct{ workload, path string }
	var profiles []profile
	for i, wk := range work {
		name := fmt.Sprintf("wrap-%d.pprof", i+1)
		path := filepath.Join(h.work, name)
		argv := []string{h.child, "profwrap", "-audit", h.newAudit("pprof"), "-key", h.key,
			"-durability", wk.durability, "-profile", path, "-size", strconv.Itoa(wk.size)}
		p, err := startProc(ctx, "profwrap", Pipes, argv, nil)
		if err != nil {
			return err
		}
		err = wk.run(p)
		if serr := p.stop(); err == nil {
			err = serr
		}
		if err != nil {
			return fmt.Errorf("%s: %w", wk.name, err)
		}
		profiles = append(profiles, profile{"wrap: " + wk.name + ", pipes", path})
		h.logf("   profiled %s", wk.name)
	}
	if h.verifyAudit != "" {
		// aegis verify's work, on the log the verify section made.
		path := filepath.Join(h.work, "verify.pprof")
		argv := []string{h.child, "profverify", "-audit", h.verifyAudit, "-key", h.key, "-profile", path, "-runs", "5"}
		if out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("profverify: %w\n%s", err, out)
		}
		profiles = append(profiles, profile{"aegis verify (journal.Verify, pinned), 5 runs", path})
	}
	gobin, err := goTool()
	if err != nil {
		return err
	}
	// pprof reads the profiles all at once: nothing is being profiled
	// any more, and each run of it is mostly its own start.
	tops := make([]Profile, len(profiles))
	errs := make([]error, len(profiles))
	var wg sync.WaitGroup
	for i, pr := range profiles {
		wg.Go(func() { tops[i], errs[i] = pprofTop(ctx, gobin, pr.workload, pr.path) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for i, pr := range profiles {
		h.res.Profiles = append(h.res.Profiles, tops[i])
		h.res.profilePaths = append(h.res.profilePaths, pr.path)
	}
	return nil
}

// pprofTop is pprof's top functions of the profile at path.
func pprofTop(ctx context.Context, gobin, workload, path string) (Profile, error) {
	out, err := exec.CommandContext(ctx, gobin, "tool", "pprof", "-top", "-nodecount=18", path).CombinedOutput()
	if err != nil {
		return Profile{}, fmt.Errorf("go tool pprof %s: %w\n%s", filepath.Base(path), err, out)
	}
	// Drop the header lines that name the binary, build and time.
	var top []string
	for line := range strings.Lines(strings.TrimSpace(string(out))) {
		if !strings.HasPrefix(line, "File:") && !strings.HasPrefix(line, "Build ID:") && !strings.HasPrefix(line, "Time:") {
			top = append(top, strings.TrimRight(line, "\n"))
		}
	}
	return Profile{Workload: workload, File: filepath.Base(path), Top: strings.Join(top, "\n")}, nil
}
