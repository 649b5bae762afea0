// Command aegis-bench measures every figure of BENCHMARKS.md's targets
// table beside its floor, in one run, and reports them: a Markdown table on
// stdout, progress on stderr, results.json, results.md and PNG plots in
// -out.
//
//	go run ./bench/cmd/aegis-bench                 # full run, a few minutes
//	go run ./bench/cmd/aegis-bench -quick          # under a minute
//	go run ./bench/cmd/aegis-bench -dir /mnt/nvme  # audit logs on another filesystem
//
// Run it from the module root: it builds aegis from ./cmd/aegis (or uses
// -aegis) and re-executes itself for its helper processes.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/aegisrelay/aegis/bench"
)

func main() {
	var cfg bench.Config
	flag.StringVar(&cfg.Dir, "dir", "", "put the audit logs and the fdatasync floor's file in a temporary directory inside `DIR` (default: $TMPDIR); its filesystem is what is measured")
	flag.StringVar(&cfg.Out, "out", "bench/out", "write results.json, results.md, the plots and the profiles to `DIR`; \"\" writes none")
	flag.StringVar(&cfg.Aegis, "aegis", "", "use this aegis `BINARY` instead of building ./cmd/aegis")
	flag.BoolVar(&cfg.Quick, "quick", false, "fewer iterations: under a minute, noisier, a smaller verify log; no profiles unless -pprof")
	flag.Float64Var(&cfg.Scale, "scale", 1, "multiply every iteration count by `F`")
	pprof := flag.Bool("pprof", true, "profile wrap's wiring in process and report pprof's top functions (default off with -quick)")
	flag.BoolVar(&cfg.Keep, "keep", false, "keep the temporary directory (binaries, key, audit logs) and print its path")
	only := flag.String("only", "", "run only these comma-separated `SECTIONS`: "+strings.Join(bench.Sections, ","))
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "Usage: go run ./bench/cmd/aegis-bench [flags]\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	cfg.Pprof = *pprof && (!cfg.Quick || set["pprof"])
	if *only != "" {
		cfg.Only = strings.Split(*only, ",")
	}
	cfg.Progress = os.Stderr
	cfg.Command = strings.TrimSpace("go run ./bench/cmd/aegis-bench " + strings.Join(os.Args[1:], " "))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := bench.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "aegis-bench: %v\n", err)
		os.Exit(1)
	}
	res.WriteMarkdown(os.Stdout)
	if cfg.Out != "" {
		fmt.Fprintf(os.Stderr, "aegis-bench: wrote %s/results.json, results.md and plots\n", cfg.Out)
	}
}
