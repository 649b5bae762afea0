package main

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/aegisrelay/aegis/internal/exitcode"
	"github.com/aegisrelay/aegis/internal/userfiles"
	"github.com/aegisrelay/aegis/journal/record"
	"github.com/aegisrelay/aegis/journal/segment"
	"github.com/aegisrelay/aegis/journal/verify"
	"github.com/aegisrelay/aegis/journal/verify/verifyjson"
)

func runVerify(args []string) int {
	fs := newFlags("verify", "aegis verify [--key PUB | --unpinned] [--head SEQ:HASH | --head-file FILE] [--checkpoint FILE] [--json] [FILE | NAME]…", verifyExamples)
	keyArg := fs.String("key", "", "pin to this public `KEY`: ed25519:<base64>, or @FILE.pub (a regular file of at most 4 KiB); default: keygen's public key, if it exists")
	unpinned := fs.Bool("unpinned", false, "pin to no key, not even keygen's: each session is checked only against the key it names")
	headArg := fs.String("head", "", "require the head `SEQ:HASH` printed by wrap on exit")
	headFile := fs.String("head-file", "", "require the signed head in `FILE` (wrap --head-file; a regular file of at most 4 KiB)")
	asJSON := fs.Bool("json", false, "print one JSON object per log")
	cpFiles := addVerifyCheckpointFlag(fs) // checkpoint.go
	wc := addWitnessCheckFlags(fs)         // witness.go
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if err := wc.parse(); err != nil {
		return fail(exitcode.Usage, "verify: %v", err)
	}
	var opts verify.Options
	pin, code, ok := pinKey(*keyArg, *unpinned)
	if !ok {
		return code
	}
	opts.Key = pin.key
	switch {
	case *headArg != "" && *headFile != "":
		return fail(exitcode.Usage, "verify: give --head or --head-file, not both")
	case *headArg != "":
		h, err := record.ParseHeadString(*headArg)
		if err != nil {
			return fail(exitcode.Usage, "verify: --head: %v", err)
		}
		opts.Head = &h
	case *headFile != "":
		sh, err := record.ReadHead(*headFile)
		if errors.Is(err, record.ErrRecord) {
			return fail(exitcode.Invalid, "verify: --head-file: %v", err)
		}
		if err != nil {
			return fail(exitcode.Usage, "verify: --head-file: %v", err)
		}
		opts.Head, opts.HeadKey = &sh.Head, sh.Key
	}
	files := fs.Args()
	if len(files) == 0 {
		// No FILE: every log wrap recorded by default, as journalctl
		// reads every journal.
		if files, code, ok = allServerLogs("verify"); !ok {
			return code
		}
	}
	sets, code, ok := collectLogs("verify", "no log to verify", files)
	if !ok {
		return code
	}
	if len(*cpFiles) > 0 && (opts.Key == nil || len(sets) > 1) {
		return fail(exitcode.Usage, "verify: --checkpoint needs a key (--key, or keygen's public key at its default path), and names one log")
	}
	if opts.Head != nil && len(sets) > 1 {
		return fail(exitcode.Usage, "verify: a head names one log; %d given (%s, %s, …)", len(sets), sets[0].Base, sets[1].Base)
	}
	worst := exitcode.OK
	for _, s := range sets {
		code := verifySet(s, opts, pin.mode, *asJSON)
		code = exitcode.Worse(code, verifyCheckpoints(s, *cpFiles, opts.Key))
		code = exitcode.Worse(code, wc.verify(s, *cpFiles, opts.Key))
		worst = exitcode.Worse(worst, code)
	}
	return worst
}

// pinned is the key verify pins to, and how the report says so.
type pinned struct {
	key  ed25519.PublicKey
	mode string
}

// pinKey is the key verify pins to: --key's; else, unless --unpinned,
// the public key keygen wrote beside the default signing key, when it
// exists (one that exists but does not read as a key is an error, never
// passed over).
func pinKey(keyArg string, unpinned bool) (pinned, int, bool) {
	const self = "unpinned: each session checked only against the key it names"
	switch {
	case keyArg != "" && unpinned:
		return pinned{}, fail(exitcode.Usage, "verify: give --key or --unpinned, not both"), false
	case keyArg != "":
		pub, err := readPublicKey(keyArg)
		if err != nil {
			return pinned{}, fail(exitcode.Usage, "verify: --key: %v", err), false
		}
		return pinned{pub, "pinned to " + record.FormatPublicKey(pub)}, 0, true
	case unpinned:
		return pinned{mode: self + " (--unpinned)"}, 0, true
	}
	priv, err := userfiles.KeyPath()
	if err != nil {
		return pinned{mode: self + " (no --key, and no default key: " + err.Error() + ")"}, 0, true
	}
	path := priv + ".pub"
	pub, err := record.ReadPublicKeyFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return pinned{mode: self + " (no --key, and no public key at " + path + ")"}, 0, true
	}
	if err != nil {
		return pinned{}, fail(exitcode.Usage, "verify: the default public key: %v (name the key with --key, or give --unpinned)", err), false
	}
	return pinned{pub, "pinned to " + record.FormatPublicKey(pub) + ", the default key " + path}, 0, true
}

// collectLogs is the logs the FILE arguments of cmd (verify, log) stand
// for, each with its sealed segments (segment.Collect), glob patterns
// expanded, a server's NAME and default log standing for all its logs
// (serverArgs); it prints Collect's notes, and says none if there is
// none (exit 2).
func collectLogs(cmd, none string, args []string) ([]*segment.Set, int, bool) {
	args, err := serverArgs(cmd, args)
	if err != nil {
		return nil, fail(exitcode.Usage, "%s: %v", cmd, err), false
	}
	paths, err := expandArgs(args)
	if err != nil {
		return nil, fail(exitcode.Usage, "%s: %v", cmd, err), false
	}
	in, err := segment.Collect(paths, true)
	if err != nil {
		return nil, fail(exitcode.Usage, "%s: %v", cmd, err), false
	}
	for _, n := range in.Notes {
		fmt.Fprintf(os.Stderr, "aegis: %s: note: %s\n", cmd, n)
	}
	if len(in.Sets) == 0 {
		return nil, fail(exitcode.Usage, "%s: %s in %s", cmd, none, strings.Join(args, ", ")), false
	}
	return in.Sets, 0, true
}

// expandArgs expands arguments that name no file but hold a glob pattern
// (quoted, so that the shell left it alone, or too long for the shell).
func expandArgs(args []string) ([]string, error) {
	var out []string
	for _, a := range args {
		if _, err := os.Stat(a); err == nil || !strings.ContainsAny(a, "*?[") {
			out = append(out, a)
			continue
		}
		m, err := filepath.Glob(a)
		if err != nil {
			return nil, fmt.Errorf("%q: %v", a, err)
		}
		if len(m) == 0 {
			return nil, fmt.Errorf("%s: no file matches", a)
		}
		out = append(out, m...)
	}
	return out, nil
}

func readPublicKey(arg string) (ed25519.PublicKey, error) {
	if path, ok := strings.CutPrefix(arg, "@"); ok {
		return record.ReadPublicKeyFile(path)
	}
	return record.ParsePublicKey(arg)
}

// verifySet verifies one log (a set of files) and prints the report,
// which says how it was pinned (mode).
func verifySet(s *segment.Set, opts verify.Options, mode string, asJSON bool) int {
	name := s.Base
	bar := newProgress(os.Stderr, "verify "+filepath.Base(name), s.Paths)
	opts.Progress = bar.add
	rep, err := verify.Set(s, opts)
	bar.done()
	if err != nil {
		if asJSON {
			json.NewEncoder(os.Stdout).Encode(verifyjson.Unreadable(name, opts.Key != nil, err))
			return exitcode.Usage
		}
		return fail(exitcode.Usage, "verify: %v", err)
	}
	code := map[verify.Status]int{verify.Valid: exitcode.OK, verify.Invalid: exitcode.Invalid, verify.Incomplete: exitcode.Incomplete}[rep.Status]
	if asJSON {
		json.NewEncoder(os.Stdout).Encode(verifyjson.New(name, opts.Key != nil, rep))
		return code
	}
	fmt.Printf("%s: %s (%s)\n", name, strings.ToUpper(rep.Status.String()), mode)
	var intents, outcomes uint64
	for _, s := range rep.Sessions {
		intents += s.Intents
		outcomes += s.Outcomes
	}
	fmt.Printf("  %s, %s, %s, %s\n", plural(rep.Records, "record"), plural(uint64(len(rep.Sessions)), "session"),
		plural(intents, "intent"), plural(outcomes, "outcome"))
	if len(rep.Files) > 1 {
		var zst uint64
		for _, f := range rep.Files {
			if strings.HasSuffix(f.Path, segment.CompressedExt) {
				zst++
			}
		}
		fmt.Printf("  %s (%d compressed)\n", plural(uint64(len(rep.Files)), "file"), zst)
	}
	if rep.HasHead {
		fmt.Printf("  head %s\n", rep.Head)
	}
	for _, p := range rep.Problems {
		fmt.Printf("  invalid: %s\n", p)
	}
	for _, p := range rep.Gaps {
		fmt.Printf("  incomplete: %s\n", p)
	}
	if rep.Dropped > 0 {
		fmt.Printf("  … and %d more\n", rep.Dropped)
	}
	for _, n := range rep.Notes {
		fmt.Printf("  note: %s\n", n)
	}
	return code
}

func plural(n uint64, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.FormatUint(n, 10) + " " + what + "s"
}

// progressMin is the input size from which verify and log show a progress
// bar (on a terminal): below it they finish before a bar would help.
var progressMin int64 = 32 << 20

// progress is a bar on stderr over the bytes of some files, shown only when
// stderr is a terminal and the files are large; otherwise every method
// does nothing. Not goroutine-safe: one reader calls add.
//
// It is drawn here rather than by a progress-bar library: such a library
// and its colour and Unicode tables are initialized in every aegis start,
// wrap's included, for a line that only verify and log draw.
type progress struct {
	bar *bar
}

// bar is one line redrawn in place: the description, a 30-cell bar, the
// share done and the bytes, at most every 100 ms; done clears it.
type bar struct {
	w          *os.File
	desc       string
	total, cur int64
	drawn      time.Time
}

func newProgress(w *os.File, desc string, paths []string) *progress {
	if !term.IsTerminal(int(w.Fd())) {
		return &progress{}
	}
	var total int64
	for _, p := range paths {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			total += st.Size()
		}
	}
	if total < progressMin {
		return &progress{}
	}
	b := &bar{w: w, desc: desc, total: total}
	b.draw()
	return &progress{bar: b}
}

func (b *bar) draw() {
	const width = 30
	cells := int(min(b.cur, b.total) * width / b.total)
	fmt.Fprintf(b.w, "\r%s %3d%% [%s%s] %s/%s", b.desc, min(b.cur, b.total)*100/b.total,
		strings.Repeat("=", cells), strings.Repeat(" ", width-cells), mib(b.cur), mib(b.total))
	b.drawn = time.Now()
}

// mib formats a byte count in MiB with one decimal.
func mib(n int64) string {
	return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
}

func (p *progress) add(n int) {
	if p.bar != nil {
		p.bar.cur += int64(n)
		if time.Since(p.bar.drawn) >= 100*time.Millisecond {
			p.bar.draw()
		}
	}
}

func (p *progress) done() {
	if p.bar != nil {
		fmt.Fprint(p.bar.w, "\r\x1b[K")
	}
}
