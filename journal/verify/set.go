package verify

import (
	"errors"
	"io"

	"github.com/aegisrelay/aegis/journal/segment"
)

// endSegment judges what a file of a set held against what its name
// says, once its last line is judged: problems of the file as a whole
// (line 0), reported after those of its lines.
func (v *verifier) endSegment(f segment.SetFile, end readEnd) {
	out := &v.out
	if errors.Is(end.err, segment.ErrCorruptSegment) {
		out.line = 0
		out.invalid(nil, "%v", end.err)
		v.gap(f.Last + 1)
	}
	fr := FileReport{Path: f.Path, Records: v.in.fileRecs, First: v.in.fileSeqs[0], Last: v.in.fileSeqs[1]}
	v.rep.Files = append(v.rep.Files, fr)
	if !f.Named {
		return
	}
	out.line = 0
	switch {
	case fr.Records == 0:
		out.invalid(nil, "holds no records; its name says seqs %d–%d", f.First, f.Last)
		v.gap(f.Last + 1)
	case fr.First != f.First:
		out.invalid(nil, "begins at seq %d; its name says %d", fr.First, f.First)
	case fr.Last < f.Last:
		out.invalid(nil, "ends at seq %d; its name says %d: seqs %d–%d are missing (a cut segment, or an older copy of it)", fr.Last, f.Last, fr.Last+1, f.Last)
		v.gap(f.Last + 1)
	case fr.Last > f.Last:
		out.invalid(nil, "ends at seq %d, after the seq %d its name says", fr.Last, f.Last)
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
	v.rep.Notes = notes
	// Set-level problems (Plan's: a missing, duplicated or foreign file)
	// come first: they are about no line.
	for _, p := range problems {
		v.out.invalid(nil, "%s", p)
	}
	srcs := make([]source, len(files))
	for i, f := range files {
		srcs[i] = source{
			open: func() (io.ReadCloser, error) { return s.Open(f.Path, opts.Progress) },
			begin: func() {
				if f.GapBefore {
					v.gap(f.GapEnd)
				}
				v.out.file, v.in.fileRecs = f.Path, 0
			},
			end: func(end readEnd) { v.endSegment(f, end) },
		}
	}
	if err := v.run(srcs, nil); err != nil {
		v.sigs.close()
		return nil, err
	}
	v.finish()
	return v.rep, nil
}
