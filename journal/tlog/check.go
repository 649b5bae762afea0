package tlog

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"slices"

	"github.com/aegisrelay/aegis/internal/regular"
	"github.com/aegisrelay/aegis/journal/segment"
)

// MaxCheckpointFile is the largest checkpoint file CheckFiles reads: a
// history of about a million checkpoints.
const MaxCheckpointFile = 256 << 20

// A Named checkpoint is one read from a file: Where says which ("FILE",
// or "FILE #3" for the third of a history) in what Check reports.
type Named struct {
	Checkpoint
	Where string
}

// CheckFiles reads the checkpoint files (each one checkpoint or a history
// of them, Split), opens each checkpoint with pub, and checks the log set
// against them all (Check). A checkpoint that does not open (a bad
// signature, not a checkpoint) is an error matching ErrCheckpoint,
// reported with the rest; a torn last entry of a history (SplitHistory)
// is not opened but reported as a *TornError (ErrTorn), as a log's torn
// tail is reported incomplete, not invalid.
func CheckFiles(set *segment.Set, files []string, pub ed25519.PublicKey) (*Result, error) {
	var cps []Named
	var errs []error
	for _, f := range files {
		data, _, err := regular.ReadFile(f, "a checkpoint file", MaxCheckpointFile)
		if err != nil {
			return nil, err
		}
		notes, torn := SplitHistory(data)
		if torn != nil {
			errs = append(errs, &TornError{Where: f, Bytes: len(torn)})
		}
		for i, n := range notes {
			where := f
			if len(notes) > 1 || torn != nil {
				where = fmt.Sprintf("%s #%d", f, i+1)
			}
			c, err := Open(n, pub)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", where, err))
				continue
			}
			cps = append(cps, Named{c, where})
		}
		if len(notes) == 0 && torn == nil {
			errs = append(errs, fmt.Errorf("%s: %w: empty", f, ErrCheckpoint))
		}
	}
	r, err := Check(set, cps)
	return r, errors.Join(append(errs, err)...)
}

// Findings lists the findings an error of CheckFiles or Check joins
// (errors.Join, at any depth), and reports whether every one is a
// history's torn last checkpoint (ErrTorn): the check is then
// incomplete, as a log's torn tail makes verify's, not failed.
func Findings(err error) (errs []error, tornOnly bool) {
	errs = unjoin(err)
	tornOnly = len(errs) > 0
	for _, e := range errs {
		tornOnly = tornOnly && errors.Is(e, ErrTorn)
	}
	return errs, tornOnly
}

// unjoin lists the errors errors.Join put together, or err alone.
func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, unjoin(e)...)
		}
		return out
	}
	return []error{err}
}

// Result is what Check read: the log's origin and records, and how many
// checkpoints it checked.
type Result struct {
	Origin      string
	Records     uint64 // leaves: the records of the hash chain
	Checkpoints int
}

// Check decides whether the log set is an append-only extension of every
// checkpoint in cps (whose signatures the caller has checked: Open). It
// reads the log once, computing the tree's root at each checkpoint's
// size, and returns an error joining one finding per checkpoint that the
// log does not extend, each matching one of:
//
//   - ErrOrigin: the checkpoint is of another log (its origin is not the
//     one the log's first line gives);
//   - ErrFork: two checkpoints of the log have one size and two roots, or
//     the log extends a checkpoint and holds, at a smaller checkpoint's
//     size, a root other than that checkpoint's: two signed states that
//     no append-only log passes through;
//   - ErrRewritten: the log's first Size records do not hash to the
//     checkpoint's root, and no larger checkpoint agrees with the log
//     (a record changed, inserted or removed); or the log holds a record
//     with the next seq that does not chain (its prev is wrong);
//   - ErrRollback: the log is shorter than the checkpoint, agrees with it
//     as far as it goes, and ends where a session ended or where an
//     earlier checkpoint of it ended: an older copy put back;
//   - ErrCut: shorter and agreeing, ending elsewhere: its tail was cut.
//
// Memory: one line, the compact range and the checkpoints; O(n) time.
func Check(set *segment.Set, cps []Named) (*Result, error) {
	res := &Result{Checkpoints: len(cps)}
	var errs []error
	// One size, two roots: a fork, whatever the log holds.
	bySize := map[[2]any]Named{}
	sizes := []uint64{}
	roots := map[uint64]Hash{} // the log's root at each size
	for _, c := range cps {
		k := [2]any{c.Origin, c.Size}
		if o, ok := bySize[k]; ok && o.Root != c.Root {
			errs = append(errs, fmt.Errorf("%w: %s and %s both sign %s at size %d, with different roots", ErrFork, o.Where, c.Where, c.Origin, c.Size))
		}
		bySize[k] = c
		sizes = append(sizes, c.Size)
	}
	slices.Sort(sizes)
	sizes = slices.Compact(sizes)
	t := NewTree()
	var last []byte // the last leaf's line
	next := 0
	ch := &Chain{}
	ch.Leaf = func(seq uint64, line []byte) error {
		if seq == 0 {
			res.Origin = Origin(line)
		}
		t.AppendLeaf(ch.LeafHash())
		last = append(last[:0], line...)
		for next < len(sizes) && sizes[next] == t.Size() {
			roots[t.Size()] = t.Root()
			next++
		}
		return nil
	}
	for next < len(sizes) && sizes[next] == 0 {
		roots[0] = EmptyRoot
		next++
	}
	if err := ReadSet(set, ch, nil); err != nil {
		return nil, err
	}
	res.Records = t.Size()
	brokenSeq, broken := ch.Broken()
	sessionEnded := bytes.Contains(last, []byte(`,"kind":"session_end",`))
	// The largest checkpoint the log agrees with.
	var agreed *Named
	for i := range cps {
		c := &cps[i]
		if c.Origin == res.Origin && c.Size <= res.Records && roots[c.Size] == c.Root {
			if agreed == nil || c.Size > agreed.Size {
				agreed = c
			}
		}
	}
	for _, c := range cps {
		switch {
		case res.Records == 0:
			errs = append(errs, fmt.Errorf("%w: %s names %d records of %s; the log holds none", ErrCut, c.Where, c.Size, c.Origin))
		case c.Origin != res.Origin:
			errs = append(errs, fmt.Errorf("%w: %s is of %s; this log is %s", ErrOrigin, c.Where, c.Origin, res.Origin))
		case c.Size <= res.Records && roots[c.Size] == c.Root:
			// the log extends it
		case c.Size <= res.Records && agreed != nil && agreed.Size == c.Size:
			// one size, two roots: reported above
		case c.Size <= res.Records && agreed != nil && agreed.Size > c.Size:
			errs = append(errs, fmt.Errorf("%w: %s (size %d) is not the first %d records of %s (size %d), which the log extends", ErrFork, c.Where, c.Size, c.Size, agreed.Where, agreed.Size))
		case c.Size <= res.Records:
			from := uint64(0)
			if agreed != nil {
				from = agreed.Size
			}
			errs = append(errs, fmt.Errorf("%w: records %d to %d of the log are not those %s signs (its root at size %d differs)", ErrRewritten, from, c.Size-1, c.Where, c.Size))
		case broken:
			errs = append(errs, fmt.Errorf("%w: the record with seq %d does not chain to the one before (its prev is wrong); %s names %d records", ErrRewritten, brokenSeq, c.Where, c.Size))
		case sessionEnded || agreed != nil && agreed.Size == res.Records:
			errs = append(errs, fmt.Errorf("%w: the log holds %d records, ending where %s; %s names %d", ErrRollback, res.Records, endedBy(sessionEnded, agreed), c.Where, c.Size))
		default:
			errs = append(errs, fmt.Errorf("%w: the log holds %d records; %s names %d", ErrCut, res.Records, c.Where, c.Size))
		}
	}
	return res, errors.Join(errs...)
}

func endedBy(sessionEnded bool, agreed *Named) string {
	if sessionEnded {
		return "a session ended"
	}
	return agreed.Where + " ended"
}

// ReadCheckpoint reads and opens one checkpoint file holding exactly one
// checkpoint (a history's last is LastOf).
func ReadCheckpoint(path string, pub ed25519.PublicKey) (Checkpoint, error) {
	data, _, err := regular.ReadFile(path, "a checkpoint file", MaxCheckpointFile)
	if err != nil {
		return Checkpoint{}, err
	}
	return ParseCheckpointFile(path, data, pub)
}

// ParseCheckpointFile opens the one checkpoint that data, the content of
// the checkpoint file at path, holds (ReadCheckpoint, for a caller that
// reads the file itself).
func ParseCheckpointFile(path string, data []byte, pub ed25519.PublicKey) (Checkpoint, error) {
	notes := Split(data)
	if len(notes) != 1 {
		return Checkpoint{}, fmt.Errorf("%s: %w: %d notes; want one checkpoint", path, ErrCheckpoint, len(notes))
	}
	c, err := Open(notes[0], pub)
	if err != nil {
		return c, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}
