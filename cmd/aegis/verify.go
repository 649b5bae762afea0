package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"

	"github.com/aegisrelay/aegis/internal/exitcode"
	"github.com/aegisrelay/aegis/internal/logview"
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
	pin, err := userfiles.PinKey(*keyArg, *unpinned)
	if err != nil {
		return fail(exitcode.Usage, "verify: %v", err)
	}
	opts.Key = pin.Key
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
		servers, _, code, ok := stateServers("verify")
		if !ok {
			return code
		}
		for _, s := range servers {
			files = append(files, s.Logs...)
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
		code := verifySet(s, opts, pin.Mode, *asJSON)
		code = exitcode.Worse(code, verifyCheckpoints(s, *cpFiles, opts.Key))
		code = exitcode.Worse(code, wc.verify(s, *cpFiles, opts.Key))
		worst = exitcode.Worse(worst, code)
	}
	return worst
}

// verifySet verifies one log (a set of files) and prints the report,
// which says how it was pinned (mode).
func verifySet(s *segment.Set, opts verify.Options, mode string, asJSON bool) int {
	name := s.Base
	bar := logview.NewProgress(os.Stderr, "verify "+filepath.Base(name), s.Paths, logview.ProgressMin)
	opts.Progress = bar.Add
	rep, err := verify.Set(s, opts)
	bar.Done()
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
	rep.WriteText(os.Stdout, name, mode)
	return code
}
