package errorfs

import (
	"slices"
	"sync"
	"syscall"
)

// Errors the system returns, for Fail and ShortWrite: the disk is broken
// (EIO), full (ENOSPC), or read-only (EROFS); the process has no file
// descriptor left (EMFILE).
var (
	EIO    error = syscall.EIO
	ENOSPC error = syscall.ENOSPC
	EROFS  error = syscall.EROFS
	EMFILE error = syscall.EMFILE
)

// A Fault is what an injected failure does to the operation it hits.
type Fault struct {
	// Err is returned in place of the operation's own result; the
	// operation is not done (but see Short).
	Err error
	// Short makes a write write the first half of its bytes before it
	// returns Err; with Err nil, the write reports that short count and
	// no error, as no well-behaved file does, and the caller must notice.
	Short bool
}

// Cut is how many of a write's n bytes the fault lets through: half of
// them for a short write, none for one that fails, all of them otherwise.
func (f Fault) Cut(n int) int {
	switch {
	case f.Short:
		return n / 2
	case f.Err != nil:
		return 0
	}
	return n
}

// A Rule injects Fault into the operations When matches.
type Rule struct {
	When  Predicate
	Fault Fault
}

// Fail is the rule that fails the operations when matches with err.
func Fail(when Predicate, err error) Rule { return Rule{When: when, Fault: Fault{Err: err}} }

// ShortWrite is the rule that cuts the writes when matches short, then
// returns err (which may be nil).
func ShortWrite(when Predicate, err error) Rule {
	return Rule{When: when, Fault: Fault{Err: err, Short: true}}
}

// An Injector decides the fate of every operation a wrapped FS asks it
// about, and counts them by kind. It is safe for concurrent use; its zero
// value and a nil *Injector inject nothing (the nil one counts nothing
// either).
type Injector struct {
	mu       sync.Mutex
	rules    []Rule
	counts   [numOps]int
	injected int
}

// New returns an Injector with rules, tried in order.
func New(rules ...Rule) *Injector {
	return &Injector{rules: rules}
}

// Inject counts op and returns the Fault of the first rule that matches
// it (ok false if none does). Every rule's predicate is asked about every
// operation, whichever rule fires, so that counting predicates (Nth) count
// the same operations in any order of rules.
func (in *Injector) Inject(op Op) (f Fault, ok bool) {
	if in == nil {
		return Fault{}, false
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if op.Kind < numOps {
		in.counts[op.Kind]++
	}
	for _, r := range in.rules {
		if r.When.Match(op) && !ok {
			f, ok = r.Fault, true
		}
	}
	if ok {
		in.injected++
	}
	return f, ok
}

// Count returns how many operations of the kinds named it has been asked
// about (of every kind, if none is named).
func (in *Injector) Count(kinds ...OpKind) int {
	if in == nil {
		return 0
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	total := 0
	for k, c := range in.counts {
		if len(kinds) == 0 || slices.Contains(kinds, OpKind(k)) {
			total += c
		}
	}
	return total
}

// Injected returns how many faults it has injected.
func (in *Injector) Injected() int {
	if in == nil {
		return 0
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.injected
}
