package errorfs

import (
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
)

// Op is one operation the wrapped FS is about to do.
type Op struct {
	Kind OpKind
	// Path is the file or directory it is on; for a rename, the old path.
	Path string
}

// OpKind is the kind of an operation.
type OpKind uint8

// The kinds of operation, by the method that does them.
const (
	OpOpen            OpKind = iota + 1 // FS.Open; FS.OpenLocked with OpenOrCreate
	OpCreate                            // FS.Create; FS.OpenLocked with CreateNew
	OpRead                              // File.Read, File.ReadAt
	OpWrite                             // File.WriteAt
	OpSync                              // File.Sync
	OpZero                              // File.Zero: writing the zeros
	OpZeroSync                          // File.Zero: syncing them
	OpTruncate                          // File.Truncate
	OpStat                              // FS.Stat, File.Stat
	OpClose                             // File.Close (the file is closed all the same)
	OpRename                            // FS.Rename with RenameReplace
	OpRenameNoReplace                   // FS.Rename with RenameNoReplace
	OpRenameExchange                    // FS.Rename with RenameExchange
	OpRemove                            // FS.Remove
	OpSyncDir                           // FS.SyncDir
	OpReadDir                           // FS.ReadDir
	numOps
)

// Kinds is every OpKind, in order.
var Kinds = func() []OpKind {
	var k []OpKind
	for i := OpOpen; i < numOps; i++ {
		k = append(k, i)
	}
	return k
}()

var opNames = [numOps]string{"", "open", "create", "read", "write", "sync", "zero", "zero-sync", "truncate", "stat",
	"close", "rename", "rename-noreplace", "rename-exchange", "remove", "syncdir", "readdir"}

func (k OpKind) String() string {
	if k < numOps && k > 0 {
		return opNames[k]
	}
	return "op(" + strconv.Itoa(int(k)) + ")"
}

// A Predicate says whether an operation matches. Predicates made by Nth
// and FromNth count the operations they are asked about, so they are
// stateful: use one in one Rule, and ask it about each operation once
// (as an Injector does). Every predicate of this package is safe for
// concurrent use.
type Predicate interface {
	Match(Op) bool
}

// PredicateFunc is a Predicate made of a function.
type PredicateFunc func(Op) bool

// Match implements Predicate.
func (f PredicateFunc) Match(op Op) bool { return f(op) }

// Any matches every operation.
var Any Predicate = PredicateFunc(func(Op) bool { return true })

// Kind matches operations of any of the kinds named.
func Kind(kinds ...OpKind) Predicate {
	kinds = slices.Clone(kinds)
	return PredicateFunc(func(op Op) bool { return slices.Contains(kinds, op.Kind) })
}

// Path matches operations whose path matches pattern, in the syntax of
// filepath.Match: "/tmp/x/audit.jsonl" only that path, "*/audit.jsonl.*"
// every file beside it whose name extends it. A malformed pattern is a
// mistake in the test that wrote it: Path panics on it, as
// regexp.MustCompile does.
func Path(pattern string) Predicate {
	if _, err := filepath.Match(pattern, ""); err != nil {
		panic("errorfs: Path(" + pattern + "): " + err.Error())
	}
	return PredicateFunc(func(op Op) bool {
		ok, _ := filepath.Match(pattern, op.Path)
		return ok
	})
}

// Base matches operations whose path's last element matches pattern (as
// Path does), wherever the file is: Base("*.zst.tmp").
func Base(pattern string) Predicate {
	if _, err := filepath.Match(pattern, ""); err != nil {
		panic("errorfs: Base(" + pattern + "): " + err.Error())
	}
	return PredicateFunc(func(op Op) bool {
		ok, _ := filepath.Match(pattern, filepath.Base(op.Path))
		return ok
	})
}

// And matches operations that every p matches. Every p is asked about
// every operation, so that counting predicates among them count the same
// operations whatever the others say.
func And(ps ...Predicate) Predicate {
	ps = slices.Clone(ps)
	return PredicateFunc(func(op Op) bool {
		all := true
		for _, p := range ps {
			if !p.Match(op) {
				all = false
			}
		}
		return all
	})
}

// Or matches operations that any p matches. Every p is asked, as in And.
func Or(ps ...Predicate) Predicate {
	ps = slices.Clone(ps)
	return PredicateFunc(func(op Op) bool {
		anyOf := false
		for _, p := range ps {
			if p.Match(op) {
				anyOf = true
			}
		}
		return anyOf
	})
}

// Not matches operations p does not match.
func Not(p Predicate) Predicate {
	return PredicateFunc(func(op Op) bool { return !p.Match(op) })
}

// Nth matches the nth operation (from 1) that p matches, and no other:
// Nth(3, Kind("write")) is the third write. With n < 1 it matches
// nothing.
func Nth(n int, p Predicate) Predicate {
	var seen atomic.Int64
	return PredicateFunc(func(op Op) bool {
		return p.Match(op) && seen.Add(1) == int64(n)
	})
}

// FromNth matches the nth operation that p matches and every later one:
// the device that fails and stays failed.
func FromNth(n int, p Predicate) Predicate {
	var seen atomic.Int64
	return PredicateFunc(func(op Op) bool {
		return p.Match(op) && seen.Add(1) >= int64(n)
	})
}
