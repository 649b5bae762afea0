package main

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/aegisrelay/aegis/internal/exitcode"
	"github.com/aegisrelay/aegis/internal/regular"
	"github.com/aegisrelay/aegis/internal/userfiles"
	"github.com/aegisrelay/aegis/journal/record"
	"github.com/aegisrelay/aegis/journal/segment"
	"github.com/aegisrelay/aegis/journal/tlog"
)

// maxProofFile bounds a proof read by prove check: a record's line (at
// most record.MaxLine, escaped) and 64 hashes.
const maxProofFile = 8 << 20

const proveUsage = `aegis prove inclusion --checkpoint FILE --seq N [--key PUB] LOG
       aegis prove consistency --old FILE --new FILE [--key PUB] LOG
       aegis prove check --key PUB --checkpoint FILE --proof FILE [--line FILE] [--witness KEY…]
       aegis prove check --key PUB --old FILE --new FILE --proof FILE [--witness KEY…]`

func runProve(args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Printf("Usage: %s\n\n%s", proveUsage, proveHelp)
		if len(args) == 0 {
			return exitcode.Usage
		}
		return exitcode.OK
	}
	switch args[0] {
	case "inclusion":
		return proveInclusion(args[1:])
	case "consistency":
		return proveConsistency(args[1:])
	case "check":
		return proveCheck(args[1:])
	}
	return fail(exitcode.Usage, "prove: %q: want inclusion, consistency or check (see 'aegis prove --help')", args[0])
}

func proveInclusion(args []string) int {
	fs := newFlags("prove inclusion", "aegis prove inclusion --checkpoint FILE --seq N [--key PUB] LOG", "")
	cpFile := fs.String("checkpoint", "", "the checkpoint `FILE` whose tree the proof is in")
	seq := fs.Uint64("seq", 0, "the record's `SEQ`")
	keyArg := fs.String("key", "", "check the checkpoint's signature by this public `KEY` (ed25519:<base64> or @FILE.pub)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if *cpFile == "" || fs.NArg() != 1 {
		return fail(exitcode.Usage, "prove inclusion: give --checkpoint FILE and one LOG (see 'aegis prove --help')")
	}
	set, code, ok := proveSet(fs.Arg(0))
	if !ok {
		return code
	}
	c, _, _, code, ok := readCheckpointFile("prove inclusion: --checkpoint", *cpFile, *keyArg, 0)
	if !ok {
		return code
	}
	p, err := tlog.ProveInclusion(set, c, *seq, proveIndex())
	if err != nil {
		return proveFail("prove inclusion", err)
	}
	return printProof(p)
}

func proveConsistency(args []string) int {
	fs := newFlags("prove consistency", "aegis prove consistency --old FILE --new FILE [--key PUB] LOG", "")
	oldFile := fs.String("old", "", "the older checkpoint `FILE`")
	newFile := fs.String("new", "", "the newer checkpoint `FILE`")
	keyArg := fs.String("key", "", "check the checkpoints' signatures by this public `KEY` (ed25519:<base64> or @FILE.pub)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if *oldFile == "" || *newFile == "" || fs.NArg() != 1 {
		return fail(exitcode.Usage, "prove consistency: give --old FILE, --new FILE and one LOG (see 'aegis prove --help')")
	}
	set, code, ok := proveSet(fs.Arg(0))
	if !ok {
		return code
	}
	old, _, _, code, ok := readCheckpointFile("prove consistency: --old", *oldFile, *keyArg, 0)
	if !ok {
		return code
	}
	nw, _, _, code, ok := readCheckpointFile("prove consistency: --new", *newFile, *keyArg, 0)
	if !ok {
		return code
	}
	p, err := tlog.ProveConsistency(set, old, nw, proveIndex())
	if err != nil {
		return proveFail("prove consistency", err)
	}
	return printProof(p)
}

func proveCheck(args []string) int {
	fs := newFlags("prove check", "aegis prove check --key PUB (--checkpoint FILE | --old FILE --new FILE) --proof FILE [--line FILE]", "")
	keyArg := fs.String("key", "", "the log's public `KEY`: ed25519:<base64>, or @FILE.pub (required)")
	cpFile := fs.String("checkpoint", "", "the checkpoint `FILE` of an inclusion proof")
	oldFile := fs.String("old", "", "the older checkpoint `FILE` of a consistency proof")
	newFile := fs.String("new", "", "the newer checkpoint `FILE` of a consistency proof")
	proofFile := fs.String("proof", "", "the proof `FILE` (prove inclusion or consistency's output)")
	lineFile := fs.String("line", "", "require the record to be this `FILE`'s line (one line; a final newline is ignored)")
	wc := addWitnessCheckFlags(fs) // witness.go
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if *keyArg == "" || *proofFile == "" || fs.NArg() != 0 {
		return fail(exitcode.Usage, "prove check: give --key PUB and --proof FILE, and no LOG (see 'aegis prove --help')")
	}
	if err := wc.parse(); err != nil {
		return fail(exitcode.Usage, "prove check: %v", err)
	}
	data, _, err := regular.ReadFile(*proofFile, "a proof", maxProofFile)
	if err != nil {
		return fail(exitcode.Usage, "prove check: --proof: %v", err)
	}
	kind, err := tlog.ProofType(data)
	if err != nil {
		return fail(exitcode.Invalid, "prove check: --proof %s: %v", *proofFile, err)
	}
	switch kind {
	case tlog.TypeInclusion:
		if *cpFile == "" {
			return fail(exitcode.Usage, "prove check: an inclusion proof is checked against --checkpoint FILE")
		}
		var p tlog.Inclusion
		if err := tlog.DecodeProof(data, &p); err != nil {
			return fail(exitcode.Invalid, "prove check: --proof %s: %v", *proofFile, err)
		}
		if *lineFile != "" {
			line, _, err := regular.ReadFile(*lineFile, "a record's line", record.MaxLine+2)
			if err != nil {
				return fail(exitcode.Usage, "prove check: --line: %v", err)
			}
			line = bytes.TrimSuffix(line, []byte("\n"))
			if string(line) != p.Line {
				return fail(exitcode.Invalid, "prove check: the proof is of another line than %s's", *lineFile)
			}
		}
		c, pub, cpData, code, ok := readCheckpointFile("prove check: --checkpoint", *cpFile, *keyArg, p.Size)
		if !ok {
			return code
		}
		if err := p.Check(c); err != nil {
			return proveFail("prove check", err)
		}
		names, code, ok := wc.checkNote("prove check: --checkpoint", *cpFile, cpData, pub, c)
		if !ok {
			return code
		}
		fmt.Printf("ok: the record with seq %d is leaf %d of %s at size %d (root %s), signed by the key%s\n", p.Index, p.Index, c.Origin, c.Size, c.Root, cosignedBy(names))
	case tlog.TypeConsistency:
		if *oldFile == "" || *newFile == "" {
			return fail(exitcode.Usage, "prove check: a consistency proof is checked against --old FILE and --new FILE")
		}
		var p tlog.Consistency
		if err := tlog.DecodeProof(data, &p); err != nil {
			return fail(exitcode.Invalid, "prove check: --proof %s: %v", *proofFile, err)
		}
		old, _, _, code, ok := readCheckpointFile("prove check: --old", *oldFile, *keyArg, p.OldSize)
		if !ok {
			return code
		}
		nw, pub, newData, code, ok := readCheckpointFile("prove check: --new", *newFile, *keyArg, p.NewSize)
		if !ok {
			return code
		}
		if err := p.Check(old, nw); err != nil {
			return proveFail("prove check", err)
		}
		if _, code, ok := wc.checkNote("prove check: --new", *newFile, newData, pub, nw); !ok {
			return code
		}
		fmt.Printf("ok: %s at size %d extends its tree at size %d, both signed by the key\n", nw.Origin, nw.Size, old.Size)
	default:
		return fail(exitcode.Invalid, "prove check: --proof %s: type %q is no proof aegis makes", *proofFile, kind)
	}
	return exitcode.OK
}

// proveIndex reads a log's sealed segments through the user's index of
// them (journal/tlog/doc.go, "Index"), if there is a cache folder to keep
// it in: a segment is then hashed, not read, unless it holds a leaf the
// proof is about.
func proveIndex() tlog.ProveOption { return tlog.WithIndex(userfiles.TlogIndex()) }

// proveSet is the one log LOG stands for (userfiles.FindLog).
func proveSet(arg string) (*segment.Set, int, bool) {
	set, err := userfiles.FindLog(arg)
	if err != nil {
		return nil, fail(exitcode.Usage, "prove: %v", err), false
	}
	return set, 0, true
}

// readCheckpointFile reads a checkpoint file, or a history of them: the
// checkpoint of the tree size size (0: the last). With a key its
// signature is checked; without one it is read unverified. It returns
// the key too, and the file's bytes, whose note prove check --witness
// reads.
func readCheckpointFile(what, path, keyArg string, size uint64) (c tlog.Checkpoint, pub ed25519.PublicKey, data []byte, code int, ok bool) {
	if keyArg != "" {
		var err error
		if pub, err = userfiles.PublicKey(keyArg); err != nil {
			return c, nil, nil, fail(exitcode.Usage, "%s: --key: %v", what, err), false
		}
	}
	data, _, err := regular.ReadFile(path, "a checkpoint file", tlog.MaxCheckpointFile)
	if err != nil {
		return c, nil, nil, fail(exitcode.Usage, "%s: %v", what, err), false
	}
	// A history's torn last checkpoint (a crash during an append) is
	// passed over, as verify --checkpoint reports it: not a forgery.
	c, torn, err := tlog.FindCheckpoint(data, pub, size)
	if torn > 0 {
		fmt.Fprintf(os.Stderr, "aegis: %s %v; the checkpoints before it are read\n", what, &tlog.TornError{Where: path, Bytes: torn})
	}
	if err != nil {
		return c, nil, nil, fail(exitcode.Invalid, "%s %s: %v", what, path, err), false
	}
	return c, pub, data, 0, true
}

func proveFail(what string, err error) int {
	code := exitcode.Invalid
	var pe *os.PathError
	if errors.As(err, &pe) || errors.Is(err, segment.ErrIO) {
		code = exitcode.Usage
	}
	return fail(code, "%s: %v", what, strings.TrimPrefix(err.Error(), "tlog: "))
}

func printProof(p any) int {
	out, err := tlog.MarshalIndent(p)
	if err != nil {
		return fail(exitcode.Usage, "prove: %v", err)
	}
	os.Stdout.Write(out)
	return exitcode.OK
}
