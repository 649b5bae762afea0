package main

import (
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/aegisrelay/aegis/journal"
)

func runVerify(args []string) int {
	fs := newFlags("verify", "aegis verify [--key PUB] [--head SEQ:HASH] [--json] FILE…", `  aegis verify --key @signing.key.pub audit.jsonl     pinned: every session signed by this key
  aegis verify --key ed25519:3q2+7w… audit.jsonl      the same, key given inline
  aegis verify audit.jsonl                            unpinned: self-consistent only
  aegis verify --head 41:sha256:9f86d0… audit.jsonl   nothing cut after a head kept elsewhere

Exit status: 0 valid; 1 invalid (tampered, broken chain, bad signature, wrong
key when pinned); 3 valid but incomplete (no session_end, or an unsigned
tail); 2 usage or unreadable input.
`)
	keyArg := fs.String("key", "", "pin to this public `KEY`: ed25519:<base64>, or @FILE.pub")
	headArg := fs.String("head", "", "require the head `SEQ:HASH` printed by wrap on exit")
	asJSON := fs.Bool("json", false, "print one JSON object per file")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() == 0 {
		return fail(exitUsage, "verify: no FILE given (see 'aegis verify --help')")
	}
	var opts journal.VerifyOptions
	if *keyArg != "" {
		pub, err := readPublicKey(*keyArg)
		if err != nil {
			return fail(exitUsage, "verify: --key: %v", err)
		}
		opts.Key = pub
	}
	if *headArg != "" {
		h, err := parseHead(*headArg)
		if err != nil {
			return fail(exitUsage, "verify: --head: %v", err)
		}
		opts.Head = &h
	}
	worst := exitOK
	for _, path := range fs.Args() {
		code := verifyOne(path, opts, *asJSON)
		worst = worse(worst, code)
	}
	return worst
}

// worse orders exit codes: usage/unreadable > invalid > incomplete > valid.
func worse(a, b int) int {
	rank := map[int]int{exitOK: 0, exitIncomplete: 1, exitInvalid: 2, exitUsage: 3}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

func readPublicKey(arg string) (ed25519.PublicKey, error) {
	if path, ok := strings.CutPrefix(arg, "@"); ok {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		arg = string(data)
	}
	return journal.ParsePublicKey(arg)
}

func parseHead(s string) (journal.Head, error) {
	var h journal.Head
	seq, hash, ok := strings.Cut(s, ":")
	n, err := strconv.ParseUint(seq, 10, 64)
	hexHash, ok2 := strings.CutPrefix(hash, "sha256:")
	raw, herr := hex.DecodeString(hexHash)
	if !ok || !ok2 || err != nil || herr != nil || len(raw) != len(h.Hash) {
		return h, fmt.Errorf("%q is not SEQ:sha256:<64 hex>", s)
	}
	h.Seq = n
	copy(h.Hash[:], raw)
	return h, nil
}

type verifyJSON struct {
	File       string            `json:"file"`
	Status     string            `json:"status"`
	Pinned     bool              `json:"pinned"`
	Records    uint64            `json:"records"`
	Head       string            `json:"head,omitempty"`
	Sessions   []sessionJSON     `json:"sessions"`
	Problems   []journal.Problem `json:"problems"`
	Incomplete []journal.Problem `json:"incomplete"`
	Dropped    int               `json:"more_problems,omitempty"`
	Error      string            `json:"error,omitempty"`
}

type sessionJSON struct {
	SID       string `json:"sid"`
	Key       string `json:"key"`
	FirstSeq  uint64 `json:"first_seq"`
	LastSeq   uint64 `json:"last_seq"`
	Records   uint64 `json:"records"`
	Intents   uint64 `json:"intents"`
	Outcomes  uint64 `json:"outcomes"`
	Ended     bool   `json:"ended"`
	EndReason string `json:"end_reason,omitempty"`
	Unsigned  uint64 `json:"unsigned"`
}

func verifyOne(path string, opts journal.VerifyOptions, asJSON bool) int {
	out := verifyJSON{File: path, Pinned: opts.Key != nil, Sessions: []sessionJSON{}, Problems: []journal.Problem{}, Incomplete: []journal.Problem{}}
	f, err := os.Open(path)
	var rep *journal.Report
	if err == nil {
		rep, err = journal.Verify(f, opts)
		f.Close()
	}
	if err != nil {
		if asJSON {
			out.Status, out.Error = "unreadable", err.Error()
			json.NewEncoder(os.Stdout).Encode(out)
			return exitUsage
		}
		return fail(exitUsage, "verify: %v", err)
	}
	code := map[journal.Status]int{journal.Valid: exitOK, journal.Invalid: exitInvalid, journal.Incomplete: exitIncomplete}[rep.Status]
	if asJSON {
		out.Status, out.Records, out.Dropped = rep.Status.String(), rep.Records, rep.Dropped
		if rep.HasHead {
			out.Head = rep.Head.String()
		}
		for _, s := range rep.Sessions {
			out.Sessions = append(out.Sessions, sessionJSON{s.SID, s.Key, s.FirstSeq, s.LastSeq, s.Records, s.Intents, s.Outcomes, s.Ended, s.EndReason, s.Unsigned})
		}
		out.Problems = append(out.Problems, rep.Problems...)
		out.Incomplete = append(out.Incomplete, rep.Gaps...)
		json.NewEncoder(os.Stdout).Encode(out)
		return code
	}
	mode := "unpinned: each session checked only against the key it names"
	if opts.Key != nil {
		mode = "pinned to " + journal.FormatPublicKey(opts.Key)
	}
	fmt.Printf("%s: %s (%s)\n", path, strings.ToUpper(rep.Status.String()), mode)
	var intents, outcomes uint64
	for _, s := range rep.Sessions {
		intents += s.Intents
		outcomes += s.Outcomes
	}
	fmt.Printf("  %s, %s, %s, %s\n", plural(rep.Records, "record"), plural(uint64(len(rep.Sessions)), "session"),
		plural(intents, "intent"), plural(outcomes, "outcome"))
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
	return code
}

func plural(n uint64, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.FormatUint(n, 10) + " " + what + "s"
}
