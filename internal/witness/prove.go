package witness

import (
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/aegisrelay/aegis/journal/segment"
	"github.com/aegisrelay/aegis/journal/tlog"
)

// prover makes the consistency proofs a witness asks for, from the log
// at path: a witness holds a tree of some size and accepts a larger one
// only with the proof that it extends it. The journal keeps only a
// compact range (no interior nodes), so each proof reads the log once
// from its start as far as the new checkpoint (tlog.ProveConsistency);
// a witness gets at most one submission per Options.Interval, and
// witnesses that hold the same tree share the proof, off the records'
// path.
// The last proof made is kept: witnesses that hold the same tree are
// asked to extend it to the same checkpoint, and one read serves them
// all. Safe for concurrent use.
type prover struct {
	path string

	mu       sync.Mutex
	old, new tlog.Checkpoint
	last     []tlog.Hash
	made     bool
	took     time.Duration // how long the last read of the log took
}

// proofShare bounds the time spent reading the log for proofs: after a
// read that took d, a witness's next submission waits at least
// proofShare·d, so that proofs of a long log take at most about a tenth
// of one core, however often checkpoints are written.
const proofShare = 10

// pause is how long a submission waits after the last one, at least:
// Interval, or more after a long read of the log.
func (p *prover) pause(interval time.Duration) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return max(interval, proofShare*p.took)
}

func (p *prover) set() (*segment.Set, error) {
	sets, err := segment.Sets([]string{p.path}, true)
	if err != nil {
		return nil, err
	}
	if len(sets) != 1 {
		return nil, fmt.Errorf("%s: %d logs where one was expected", p.path, len(sets))
	}
	return sets[0], nil
}

// proof returns the consistency proof from old to new: none when old is
// empty or the same size.
func (p *prover) proof(old, new tlog.Checkpoint) ([]tlog.Hash, error) {
	if old.Size == 0 || old.Size == new.Size {
		return nil, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.made && p.old == old && p.new == new {
		return p.last, nil
	}
	set, err := p.set()
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	c, err := tlog.ProveConsistency(set, old, new)
	p.took = time.Since(t0)
	if err != nil {
		return nil, err
	}
	p.old, p.new, p.last, p.made = old, new, c.Hashes, true
	return c.Hashes, nil
}

// rootAt returns the root of the log's first size records: the tree a
// witness holds at size, if it holds this log's.
func (p *prover) rootAt(size uint64) (tlog.Hash, error) {
	if size == 0 {
		return tlog.EmptyRoot, nil
	}
	set, err := p.set()
	if err != nil {
		return tlog.Hash{}, err
	}
	t0 := time.Now()
	defer func() {
		p.mu.Lock()
		p.took = time.Since(t0)
		p.mu.Unlock()
	}()
	t, _, err := tlog.BuildTree(set, size, nil)
	if err != nil {
		return tlog.Hash{}, err
	}
	if t.Size() < size {
		return tlog.Hash{}, fmt.Errorf("the log holds %d records, fewer than %d", t.Size(), size)
	}
	return t.Root(), nil
}

// ReadTree reads the whole log at path and returns its tree as a
// checkpoint (unsigned): its origin, its number of records and its root.
// For a log with no checkpoint to show a witness, at wrap's start.
func ReadTree(path string) (tlog.Checkpoint, error) {
	p := &prover{path: path}
	set, err := p.set()
	if err != nil {
		return tlog.Checkpoint{}, err
	}
	t, origin, err := tlog.BuildTree(set, math.MaxUint64, nil)
	if err != nil {
		return tlog.Checkpoint{}, err
	}
	return tlog.Checkpoint{Origin: origin, Size: t.Size(), Root: t.Root()}, nil
}
