package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Config configures a run. The zero value is a full run with audit logs in
// a temporary directory and no files written.
type Config struct {
	// Dir is where the audit logs (and the fdatasync floor's file) go; a
	// temporary directory is made inside it and removed at the end.
	// "" is os.TempDir().
	Dir string
	// Out receives results.json and the plots; "" writes neither.
	Out string
	// Aegis is a prebuilt aegis binary; "" builds one from the module
	// holding the working directory (go build, CGO_ENABLED=0). The helper
	// program is always built from it.
	Aegis string
	// Quick runs every section with fewer iterations: under a minute,
	// noisier, and the verify log below 100k records; the http section
	// runs only when Only names it.
	Quick bool
	// Scale multiplies every iteration count, warm-ups included (default
	// 1); tests use a tiny one to keep the harness from rotting.
	Scale float64
	// Pprof profiles wrap's wiring in-process (see profwrap) and aegis
	// verify's work, and adds pprof's top functions to the report. Naming
	// "pprof" in Only implies it.
	Pprof bool
	// Only, when not empty, runs just the named sections (see Sections).
	Only []string
	// Progress receives one line per step; nil discards them.
	Progress io.Writer
	// Command is how the run was started, for the report.
	Command string
	// Keep leaves the temporary directory (binaries, key, audit logs) in
	// place for a look afterwards; its path goes to Progress.
	Keep bool

	// child is a prebuilt aegis-bench-child; "" builds it from the
	// module. Tests set it, with Aegis, to build the programs once for
	// all their runs.
	child string
}

// Sections are the parts of a run, in order.
var Sections = []string{"fsync", "roundtrip", "durability", "inflight", "sizes", "scan", "verify", "rss", "start", "clients", "http", "pprof"}

// harness is one run's state.
type harness struct {
	cfg   Config
	it    iters
	work  string // temporary directory inside Config.Dir
	aegis string
	child string // aegis-bench-child, the helper processes
	root  string // the module's root folder
	key   string // signing key file; its public key is key+".pub"
	res   *Results
	audit int // audit files made so far
	// verifyAudit is the log the verify section made, for the profiles.
	verifyAudit string
	// crelay is the C floor relay once built; crelayMissing says why it
	// is not (crelay.go).
	crelay, crelayMissing string
}

// Run runs the benchmark and returns its results; it writes results.json
// and the plots to cfg.Out when set. ctx ends it early between steps.
func Run(ctx context.Context, cfg Config) (*Results, error) {
	if cfg.Scale <= 0 {
		cfg.Scale = 1
	}
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	for _, s := range cfg.Only {
		if !slices.Contains(Sections, s) {
			return nil, fmt.Errorf("unknown section %q (have %s)", s, strings.Join(Sections, ", "))
		}
	}
	h := &harness{cfg: cfg, it: newIters(cfg.Quick, cfg.Scale)}
	var err error
	if h.work, err = os.MkdirTemp(cfg.Dir, "aegis-bench-"); err != nil {
		return nil, fmt.Errorf("audit directory: %w", err)
	}
	if cfg.Keep {
		defer h.logf("kept %s", h.work)
	} else {
		defer os.RemoveAll(h.work)
	}
	h.res = &Results{Command: cfg.Command, Started: time.Now().UTC(), Quick: cfg.Quick, Scale: cfg.Scale, LoadStart: loadAvg()}
	if err := h.setup(ctx); err != nil {
		return nil, err
	}
	steps := []struct {
		name string
		run  func(context.Context) error
	}{
		{"fsync", h.fsyncSection},
		{"roundtrip", h.roundTripSection},
		{"durability", h.durabilitySection},
		{"inflight", h.inFlightSection},
		{"sizes", h.sizeSection},
		{"scan", h.scanSection},
		{"verify", h.verifySection},
		{"rss", h.rssSection},
		{"start", h.startSection},
		{"clients", h.clientsSection},
		{"http", h.httpSection}, // http.go
		{"pprof", h.pprofSection},
	}
	t0 := time.Now()
	for _, st := range steps {
		only := slices.Contains(cfg.Only, st.name)
		if len(cfg.Only) > 0 && !only || st.name == "pprof" && !cfg.Pprof && !only || st.name == "http" && cfg.Quick && !only {
			continue
		}
		if err := ctx.Err(); err != nil {
			return h.res, err
		}
		h.logf("== %s (load %s)", st.name, loadAvg())
		ts := time.Now()
		if err := st.run(ctx); err != nil {
			return h.res, fmt.Errorf("%s: %w", st.name, err)
		}
		h.logf("   %s took %.1fs", st.name, time.Since(ts).Seconds())
	}
	h.res.ElapsedSec = time.Since(t0).Seconds()
	h.res.LoadEnd = loadAvg()
	h.res.Summary = summarise(h.res)
	if cfg.Out != "" {
		if err := h.write(cfg.Out); err != nil {
			return h.res, err
		}
	}
	return h.res, nil
}

// setup builds aegis (unless given) and the helpers, makes the signing
// key and records the machine.
func (h *harness) setup(ctx context.Context) error {
	gobin, err := goTool()
	if err != nil {
		return err
	}
	// Build from the aegis module's root, wherever the harness was
	// started: the product's folder, which the harness's own module (bench)
	// reaches through go.work or its replace directive.
	dir, err := exec.CommandContext(ctx, gobin, "list", "-m", "-f", "{{.Dir}}", "github.com/aegisrelay/aegis").Output()
	if err != nil {
		return fmt.Errorf("go list -m github.com/aegisrelay/aegis: %w", err)
	}
	root := strings.TrimSpace(string(dir))
	h.root = root
	if !fileExists(filepath.Join(root, "cmd", "aegis")) {
		return fmt.Errorf("run aegis-bench inside the aegis repository (the aegis module is at %q)", root)
	}
	h.aegis, h.child = h.cfg.Aegis, h.cfg.child
	for _, b := range []struct {
		path *string
		pkg  string
	}{{&h.aegis, "./cmd/aegis"}, {&h.child, "./bench/cmd/aegis-bench-child"}} {
		if *b.path != "" {
			continue
		}
		*b.path = filepath.Join(h.work, filepath.Base(b.pkg))
		h.logf("building %s (CGO_ENABLED=0)", b.pkg)
		if err := buildProgram(ctx, gobin, root, *b.path, b.pkg); err != nil {
			return err
		}
	}
	h.key = filepath.Join(h.work, "signing.key")
	if out, err := exec.CommandContext(ctx, h.aegis, "keygen", "--out", h.key).CombinedOutput(); err != nil {
		return fmt.Errorf("aegis keygen: %w\n%s", err, out)
	}
	version, _ := exec.CommandContext(ctx, h.aegis, "--version").Output()
	goVersion, _ := exec.CommandContext(ctx, gobin, "version").Output()
	h.res.Machine = machine(h.work)
	h.res.Machine.BuildGo = strings.TrimSpace(string(goVersion))
	h.res.Machine.Aegis = strings.TrimSpace(string(version))
	return nil
}

// buildProgram builds the package pkg of the module at root into out,
// as released: CGO_ENABLED=0, and -buildvcs=auto so that the binary
// names the commit it was built from (aegis --version, the report's
// "aegis" row) whatever GOFLAGS says.
func buildProgram(ctx context.Context, gobin, root, out, pkg string) error {
	cmd := exec.CommandContext(ctx, gobin, "build", "-buildvcs=auto", "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, out)
	}
	return nil
}

// goTool is the go command: the one on PATH, else the one this binary
// was built with.
func goTool() (string, error) {
	if p, err := exec.LookPath("go"); err == nil {
		return p, nil
	}
	if root := os.Getenv("GOROOT"); root != "" {
		if p := filepath.Join(root, "bin", "go"); fileExists(p) {
			return p, nil
		}
	}
	return "", errors.New("no go command on PATH: put Go on PATH")
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func (h *harness) logf(format string, args ...any) {
	fmt.Fprintf(h.cfg.Progress, format+"\n", args...)
}

// newAudit returns a fresh audit file path in the work directory.
func (h *harness) newAudit(name string) string {
	h.audit++
	return filepath.Join(h.work, fmt.Sprintf("%02d-%s.jsonl", h.audit, name))
}

// echoOpts are the echo child's settings (see aegis-bench-child).
type echoOpts struct {
	size int // text bytes in the answer to tools/call and bench/big
	hold int // hold every answer until this many requests arrived
}

func (h *harness) echoArgv(o echoOpts) []string {
	return []string{h.child, "echo", fmt.Sprintf("-size=%d", o.size), fmt.Sprintf("-hold=%d", o.hold)}
}

// startTarget starts one of the processes a client talks to: "direct"
// (the echo child itself), "floor" (the floor relay in front of one),
// "crelay" (the C floor relay, built, in front of one) or "wrap" (aegis
// wrap at durability d, audit log audit, in front of one).
func (h *harness) startTarget(ctx context.Context, target string, t Transport, d, audit string, o echoOpts) (*proc, error) {
	var argv []string
	switch target {
	case "direct":
		argv = h.echoArgv(o)
	case "floor":
		argv = []string{h.child, "floorrelay", fmt.Sprintf("-size=%d", o.size)}
	case "crelay":
		if h.crelay == "" {
			return nil, fmt.Errorf("no C floor relay: %s", h.crelayMissing)
		}
		argv = append([]string{h.crelay}, h.echoArgv(o)...)
	case "wrap":
		argv = append([]string{h.aegis, "wrap", "--audit", audit, "--signing-key", h.key, "--durability", d, "--"}, h.echoArgv(o)...)
	default:
		return nil, fmt.Errorf("unknown target %q", target)
	}
	name := target + "/" + string(t)
	if target == "wrap" {
		name += "/" + d
	}
	return startProc(ctx, name, t, argv, nil)
}

// verifyLog runs aegis verify, pinned, on a finished log, and counts its
// records: the harness's figures count only if the log they made is valid.
func (h *harness) verifyLog(ctx context.Context, audit string) (logCounts, error) {
	out, err := exec.CommandContext(ctx, h.aegis, "verify", "--key", "@"+h.key+".pub", audit).CombinedOutput()
	if err != nil {
		return logCounts{}, fmt.Errorf("aegis verify %s: %w\n%s", filepath.Base(audit), err, out)
	}
	data, err := os.ReadFile(audit)
	if err != nil {
		return logCounts{}, err
	}
	return countLog(data), nil
}

// logCounts are what the harness reads back from an audit log.
type logCounts struct {
	Records  int `json:"records"`
	Signed   int `json:"signed"`
	Intents  int `json:"intents"`
	Outcomes int `json:"outcomes"`
	Bytes    int `json:"bytes"`
}

func countLog(data []byte) logCounts {
	return logCounts{
		Records:  bytes.Count(data, []byte("\n")),
		Signed:   bytes.Count(data, []byte(`,"sig":"`)),
		Intents:  bytes.Count(data, []byte(`"kind":"intent"`)),
		Outcomes: bytes.Count(data, []byte(`"kind":"outcome"`)),
		Bytes:    len(data),
	}
}

// loadAvg is the first three fields of /proc/loadavg.
func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// stopAll stops every process, returning the first error.
func stopAll(ps ...*proc) error {
	var errs []error
	for _, p := range ps {
		if p != nil {
			errs = append(errs, p.stop())
		}
	}
	return errors.Join(errs...)
}
