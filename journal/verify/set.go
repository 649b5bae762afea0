package verify

import (
	"errors"
	"github.com/aegisrelay/aegis/journal/segment"
	"io"
)

// endSegment judges what a file of a set held against what its name says.
func (v *verifier) endSegment(f segment.SetFile, end readEnd) {
	if errors.Is(end.err, segment.ErrCorruptSegment) {
		v.line = 0
		v.invalid(nil, "%v", end.err)
		v.gap(f.Last + 1)
	}
	fr := FileReport{Path: f.Path, Records: v.fileRecs, First: v.fileSeqs[0], Last: v.fileSeqs[1]}
	v.rep.Files = append(v.rep.Files, fr)
	if !f.Named {
		return
	}
	v.line = 0
	switch {
	case fr.Records == 0:
		v.invalid(nil, "holds no records; its name says seqs %d–%d", f.First, f.Last)
		v.gap(f.Last + 1)
	case fr.First != f.First:
		v.invalid(nil, "begins at seq %d; its name says %d", fr.First, f.First)
	case fr.Last < f.Last:
		v.invalid(nil, "ends at seq %d; its name says %d: seqs %d–%d are missing (a cut segment, or an older copy of it)", fr.Last, f.Last, fr.Last+1, f.Last)
		v.gap(f.Last + 1)
	case fr.Last > f.Last:
		v.invalid(nil, "ends at seq %d, after the seq %d its name says", fr.Last, f.Last)
	}
}

// Set checks the files of one log as one chain: as Verify does for a
// single file, and also that the set is whole — no seq range in no file
// (a missing segment), none in two (a duplicated one), every sealed
// segment holding exactly the range its name states (an older copy of a
// segment holds less). Each is reported once, by its seq range. The error
// is non-nil only when a file could not be read.
func Set(s *segment.Set, opts Options) (*Report, error) {
	files, problems, notes, err := s.Plan()
	if err != nil {
		return nil, err
	}
	v := newVerifier(opts)
	defer func() {
		if v.jobs != nil {
			v.finish()
		}
	}()
	v.rep.Notes = notes
	for _, p := range problems {
		v.problem(&v.rep.Problems, 0, false, "%s", p)
	}
	srcs := make([]source, len(files))
	for i, f := range files {
		srcs[i] = source{
			open: func() (io.ReadCloser, error) { return segment.Open(f.Path, opts.Progress) },
			begin: func() {
				if f.GapBefore {
					v.gap(f.GapEnd)
				}
				v.file, v.fileRecs = f.Path, 0
			},
			end: func(end readEnd) { v.endSegment(f, end) },
		}
	}
	if err := v.run(srcs, nil); err != nil {
		return nil, err
	}
	v.finish()
	rep := v.rep
	v.jobs = nil
	return rep, nil
}
