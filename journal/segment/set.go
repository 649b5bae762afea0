package segment

import (
	"cmp"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/aegisrelay/aegis/internal/regular"
	"github.com/aegisrelay/aegis/internal/vfs"
	"github.com/aegisrelay/aegis/journal/record"
)

// A Set is the files of one log: its sealed segments, plain or compressed,
// and its live file. verify.Set checks them as one chain, whatever order they
// were given in; OrderedFiles lists them in seq order for reading.
type Set struct {
	// Base is the log's live file, which need not be among Paths.
	Base string
	// Paths are the set's files, as given or found.
	Paths []string
	// FS is the file system the files are read through; nil is vfs.OS.
	FS vfs.FS
}

// fs returns the file system of s.
func (s *Set) fs() vfs.FS { return vfs.Or(s.FS) }

// Open opens the file of s at path for reading its lines, as OpenFS does.
func (s *Set) Open(path string, progress func(n int)) (io.ReadCloser, error) {
	return OpenFS(s.fs(), path, progress)
}

// Sets groups paths into the logs they belong to; it is Collect without
// its notes.
func Sets(paths []string, expand bool) ([]*Set, error) { return SetsFS(nil, paths, expand) }

// SetsFS is Sets on the file system fsys (nil: vfs.OS).
func SetsFS(fsys vfs.FS, paths []string, expand bool) ([]*Set, error) {
	in, err := CollectFS(fsys, paths, expand)
	if err != nil {
		return nil, err
	}
	return in.Sets, nil
}

// Inputs is what a list of paths holds: the logs to read, and notes on the
// entries of directories that are not read, each with the reason.
type Inputs struct {
	Sets  []*Set
	Notes []string
}

// Collect groups paths into the logs they belong to. A sealed segment
// FILE.<first>-<last>.jsonl[.zst], an unfinished compressed copy
// (….zst.tmp) and the spare FILE.next belong to FILE; any other file is a
// log's live file, whatever its name. With expand, a live file stands for
// its whole log: the segments and spare found beside it are added (so that
// `aegis verify audit.jsonl` checks everything the log holds).
//
// A directory stands for every regular file in it, grouped so: a log under
// any name is read, and a file that is not a log is read as one and found
// not to be (Set.plan), never passed over. The files aegis writes beside
// its logs are recognised by their content and noted instead: a head file
// (wrap --head-file) and a key (keygen's FILE and FILE.pub).
// Subdirectories and other entries that are not regular files are not
// read, and noted. A path given that is not a regular file or a directory
// is an error (regular.ErrNotRegular): a FIFO would be read once, and a log is read
// more than once.
//
// Sets come in the order their first path was given; a path given twice
// counts once.
func Collect(paths []string, expand bool) (*Inputs, error) { return CollectFS(nil, paths, expand) }

// CollectFS is Collect on the file system fsys (nil: vfs.OS), which each
// Set keeps to be read through.
func CollectFS(fsys vfs.FS, paths []string, expand bool) (*Inputs, error) {
	ofs := vfs.Or(fsys)
	var order []string
	sets := map[string]*Set{}
	seen := map[string]bool{}
	in := &Inputs{}
	add := func(p string) {
		p = filepath.Clean(p)
		if seen[p] {
			return
		}
		seen[p] = true
		base := baseOf(p)
		s := sets[base]
		if s == nil {
			s = &Set{Base: base, FS: fsys}
			sets[base] = s
			order = append(order, base)
		}
		s.Paths = append(s.Paths, p)
	}
	var expandBases []string
	for _, p := range paths {
		st, err := ofs.Stat(p)
		if err != nil {
			return nil, err
		}
		if st.IsDir() {
			files, notes, err := logsInDir(ofs, p)
			if err != nil {
				return nil, err
			}
			for _, f := range files {
				add(f)
			}
			in.Notes = append(in.Notes, notes...)
			continue
		}
		if !st.Mode().IsRegular() {
			return nil, fmt.Errorf("%w: %s is %s; logs are read from regular files (save a stream to a file first)", regular.ErrNotRegular, p, regular.Describe(st.Mode()))
		}
		add(p)
		if expand && baseOf(filepath.Clean(p)) == filepath.Clean(p) {
			expandBases = append(expandBases, filepath.Clean(p))
		}
	}
	for _, base := range expandBases {
		entries, err := Siblings(ofs, base)
		if err != nil {
			return nil, err
		}
		slices.SortFunc(entries, func(a, b Sibling) int { return strings.Compare(a.Path, b.Path) })
		for _, e := range entries {
			add(e.Path)
		}
		if st, err := ofs.Stat(base + SpareExt); err == nil && st.Mode().IsRegular() {
			add(base + SpareExt)
		}
	}
	in.Sets = make([]*Set, len(order))
	for i, b := range order {
		in.Sets[i] = sets[b]
	}
	return in, nil
}

// baseOf returns the live file of the log that path belongs to.
func baseOf(path string) string {
	p := strings.TrimSuffix(path, TmpExt)
	if s, ok := ParseName(p); ok {
		return s.Base
	}
	if b, ok := strings.CutSuffix(path, SpareExt); ok && filepath.Base(b) != "" {
		return b
	}
	return path
}

// logsInDir lists the regular files of dir, in name order, that are read
// as logs or parts of logs (Collect), and notes the entries that are not.
func logsInDir(fsys vfs.FS, dir string) (files, notes []string, err error) {
	names, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	slices.Sort(names)
	for _, n := range names {
		p := filepath.Join(dir, n)
		st, err := fsys.Stat(p)
		switch {
		case err != nil:
			notes = append(notes, fmt.Sprintf("%s: not read: %v", p, err))
		case st.IsDir():
			notes = append(notes, fmt.Sprintf("%s: a directory: not read (name it to verify what it holds)", p))
		case !st.Mode().IsRegular():
			notes = append(notes, fmt.Sprintf("%s: %s: not read", p, regular.Describe(st.Mode())))
		default:
			if what := companion(fsys, p, st); what != "" {
				notes = append(notes, fmt.Sprintf("%s: %s, not a log: not read", p, what))
				continue
			}
			files = append(files, p)
		}
	}
	return files, notes, nil
}

// companion says what a file that aegis writes beside its logs is (a head
// file, a public key, a signing key), recognised by its whole content, or
// returns "". Nothing of the content is quoted.
func companion(fsys vfs.FS, path string, st fs.FileInfo) string {
	if isCheckpoint(fsys, path) {
		return "a checkpoint or a history of them (check the log against it with --checkpoint)"
	}
	if st.Size() > record.MaxPrivateKeyFile {
		return ""
	}
	data, _, err := regular.ReadFile(path, "a key or head file", record.MaxPrivateKeyFile)
	if err != nil || len(data) == 0 {
		return ""
	}
	if _, err := record.ParseHead(data); err == nil {
		return "a head file (check it with --head-file)"
	}
	if _, err := record.ParsePublicKey(string(data)); err == nil {
		return "a public key (pin it with --key @FILE)"
	}
	if _, err := record.ParsePrivateKey(data); err == nil {
		return "a private key (whoever can read the logs here can read it too)"
	}
	return ""
}

// checkpointOrigin begins a checkpoint's first line (package tlog's
// OriginPrefix, which imports this package).
const checkpointOrigin = "aegis.log/"

// isCheckpoint reports whether the file at path begins as a checkpoint
// does: its origin line, then the tree size in decimal. A history is a run
// of checkpoints, so it begins the same way; only its first bytes are read.
func isCheckpoint(fsys vfs.FS, path string) bool {
	f, err := fsys.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	b := make([]byte, 128)
	n, _ := io.ReadFull(f, b)
	origin, rest, ok := strings.Cut(string(b[:n]), "\n")
	if !ok || !strings.HasPrefix(origin, checkpointOrigin) {
		return false
	}
	size, _, ok := strings.Cut(rest, "\n")
	return ok && size != "" && strings.Trim(size, "0123456789") == ""
}

// notALog says why the file of a set at path is not a log, or returns ""
// if it may be one: a log's content begins with a record (record.LineStart) or,
// after a power loss, with a hole of NULs. Only the first bytes are read,
// so a file that is not a log (a key, a binary) is never decoded line by
// line into a report that would quote it.
func notALog(fsys vfs.FS, path string) (string, error) {
	rc, err := OpenFS(fsys, path, nil)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	head := make([]byte, len(record.LineStart))
	n, err := io.ReadFull(rc, head)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		if errors.Is(err, ErrCorruptSegment) {
			return "", nil // reported as such when the file is read
		}
		return "", err
	}
	if head = head[:n]; n == 0 || head[0] == 0 || strings.HasPrefix(record.LineStart, string(head)) {
		return "", nil
	}
	why := "not an aegis audit log: it does not begin with a record (" + record.LineStart + "…); not read"
	if st, err := fsys.Stat(path); err == nil {
		if what := companion(fsys, path, st); what != "" {
			why = "not an aegis audit log but " + what + "; not read"
		}
	}
	return why, nil
}

// SetFile is one file of a set as planned for reading.
// SetFile is one file of a Set as Plan orders it: where it is, the seqs it
// holds, and whether records are missing before it.
type SetFile struct {
	Path        string
	seg         Info
	Named       bool   // the name states the range
	zst         bool   // zstd-compressed
	ranged      bool   // first and last are known
	First, Last uint64 // from the name, or else from the content
	size        int64  // bytes on disk
	GapBefore   bool   // records are missing before it (reported)
	GapEnd      uint64
}

// Plan orders the files of s and finds what is missing, doubled or set
// aside, before any record is checked. problems are set-level findings
// (verify reports them as Invalid); notes are not findings. Package verify
// reads the files in the order returned.
func (s *Set) Plan() (files []SetFile, problems, notes []string, err error) {
	files, unranged, problems, notes, err := s.survey()
	if err != nil {
		return nil, nil, nil, err
	}
	sortSegments(files)
	var out []SetFile
	var next uint64
	for _, f := range files {
		if len(out) > 0 {
			prev := out[len(out)-1]
			if f.Last < next || f.First == prev.First && f.Last == prev.Last {
				if copyOf(f, prev) {
					same, err := sameContent(s.fs(), f, prev)
					if err != nil {
						return nil, nil, nil, err
					}
					if same {
						notes = append(notes, fmt.Sprintf("%s: a second copy of %s (a compression not yet finished); equal, read once", f.Path, prev.Path))
					} else {
						problems = append(problems, fmt.Sprintf("%s and %s are copies of one segment (seqs %d–%d) and differ", f.Path, prev.Path, f.First, f.Last))
					}
					continue
				}
				problems = append(problems, fmt.Sprintf("duplicated segment: seqs %d–%d of %s are already in the set (%s); not read", f.First, f.Last, f.Path, prev.Path))
				continue
			}
			if f.First < next {
				problems = append(problems, fmt.Sprintf("overlapping segments: seqs %d–%d are in both %s and %s", f.First, next-1, prev.Path, f.Path))
				f.GapBefore, f.GapEnd = true, next
			}
		}
		if f.First > next {
			switch {
			case len(out) > 0:
				problems = append(problems, fmt.Sprintf("missing segment: seqs %d–%d are in no file of the set, between %s and %s", next, f.First-1, out[len(out)-1].Path, f.Path))
			case f.Named:
				problems = append(problems, fmt.Sprintf("missing segment: seqs %d–%d are in no file of the set, before %s (a log starts at seq 0)", next, f.First-1, f.Path))
			default:
				problems = append(problems, fmt.Sprintf("missing records: %s starts at seq %d, and seqs %d–%d are in no file (a log starts at seq 0: its first lines or segments are gone)", f.Path, f.First, next, f.First-1))
			}
			f.GapBefore, f.GapEnd = true, f.First
		}
		out = append(out, f)
		next = max(next, f.Last+1)
	}
	return append(out, unranged...), problems, notes, nil
}

// survey reads what each path of s is: a named segment (its range from
// its name), a file whose range its content gives, one without a range
// (ranged false), or something that is no part of the set (a problem or a
// note).
func (s *Set) survey() (files, unranged []SetFile, problems, notes []string, err error) {
	fsys := s.fs()
	for _, p := range s.Paths {
		f := SetFile{Path: p}
		if strings.HasSuffix(p, CompressedExt+TmpExt) {
			notes = append(notes, fmt.Sprintf("%s: an unfinished compressed copy (compression was interrupted): not read", p))
			continue
		}
		st, err := fsys.Stat(p)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		f.size = st.Size()
		if seg, ok := ParseName(p); ok {
			f.seg, f.Named, f.zst, f.ranged, f.First, f.Last = seg, true, seg.Compressed, true, seg.First, seg.Last
			files = append(files, f)
			continue
		}
		f.zst = strings.HasSuffix(p, CompressedExt)
		if f.size > 0 {
			why, err := notALog(fsys, p)
			if err != nil {
				return nil, nil, nil, nil, err
			}
			if why != "" {
				problems = append(problems, p+": "+why)
				continue
			}
		}
		if f.size == 0 {
			if strings.HasSuffix(p, SpareExt) {
				notes = append(notes, fmt.Sprintf("%s: an empty spare (made ahead of the next rotation)", p))
			}
			continue
		}
		if f.First, f.Last, f.ranged, err = contentRange(fsys, p, f.zst); err != nil {
			return nil, nil, nil, nil, err
		}
		if f.ranged {
			files = append(files, f)
		} else {
			unranged = append(unranged, f)
		}
	}
	return files, unranged, problems, notes, nil
}

// sortSegments orders files by first seq, the longer range first, and a
// segment's plain copy before its compressed one.
func sortSegments(files []SetFile) {
	slices.SortStableFunc(files, func(a, b SetFile) int {
		if c := cmp.Compare(a.First, b.First); c != 0 {
			return c
		}
		if c := cmp.Compare(b.Last, a.Last); c != 0 {
			return c
		}
		switch { // the plain copy of a segment before the compressed one
		case a.zst == b.zst:
			return 0
		case !a.zst:
			return -1
		}
		return 1
	})
}

// copyOf: f and g are the plain and compressed copies of one segment.
func copyOf(f, g SetFile) bool {
	return f.Named && g.Named && f.First == g.First && f.Last == g.Last &&
		strings.TrimSuffix(f.Path, CompressedExt) == strings.TrimSuffix(g.Path, CompressedExt)
}

// sameContent compares two copies; one that does not decompress differs.
func sameContent(fsys vfs.FS, f, g SetFile) (bool, error) {
	a, err := hashFile(fsys, f)
	if err == nil {
		var b record.Digest
		b, err = hashFile(fsys, g)
		if err == nil {
			return a == b, nil
		}
	}
	if errors.Is(err, ErrCorruptSegment) {
		return false, nil
	}
	return false, err
}

func hashFile(fsys vfs.FS, f SetFile) (record.Digest, error) {
	var d record.Digest
	rc, err := OpenFS(fsys, f.Path, nil)
	if err != nil {
		return d, err
	}
	defer rc.Close()
	h := sha256.New()
	if _, err := io.Copy(h, rc); err != nil {
		return d, err
	}
	h.Sum(d[:0])
	return d, nil
}

// contentRange reads the seqs of a file's first and last records.
func contentRange(fsys vfs.FS, path string, zst bool) (first, last uint64, ok bool, err error) {
	rc, err := OpenFS(fsys, path, nil)
	if err != nil {
		return 0, 0, false, err
	}
	first, ok = FirstSeq(rc)
	rc.Close()
	if !ok {
		return 0, 0, false, nil
	}
	var t Tail
	if zst {
		rc, err := OpenFS(fsys, path, nil)
		if err != nil {
			return 0, 0, false, err
		}
		t, err = StreamTail(rc)
		rc.Close()
		if err != nil {
			return 0, 0, false, nil
		}
	} else {
		f, err := openFile(fsys, path)
		if err != nil {
			return 0, 0, false, err
		}
		t, err = ReadTail(f, path, false)
		f.Close()
		if err != nil {
			return 0, 0, false, nil
		}
	}
	if !t.Intact || t.Seq < first {
		return 0, 0, false, nil
	}
	return first, t.Seq, true, nil
}

// Open opens a file of a set for reading its lines, as OpenFS does on
// vfs.OS.
func Open(path string, progress func(n int)) (io.ReadCloser, error) {
	return OpenFS(vfs.OS, path, progress)
}

// OpenFS opens a file of a set on fsys for reading its lines: a .zst
// file is decompressed as it is read. progress, if not nil, is called
// with the bytes read from the file itself (compressed bytes for .zst).
func OpenFS(fsys vfs.FS, path string, progress func(n int)) (io.ReadCloser, error) {
	f, err := fsys.Open(path)
	if err != nil {
		return nil, err
	}
	plain := !strings.HasSuffix(path, CompressedExt)
	var r io.Reader = f
	if plain {
		r = NewContentReader(f) // the live file may be being written
	}
	if progress != nil {
		r = &countingReader{r: r, fn: progress}
	}
	if plain {
		return readCloser{r, f.Close}, nil
	}
	zr, err := NewZstdReader(r, 2)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return readCloser{zstdErrors{zr}, func() error { zr.Close(); return f.Close() }}, nil
}

type readCloser struct {
	io.Reader
	close func() error
}

func (r readCloser) Close() error { return r.close() }

type countingReader struct {
	r  io.Reader
	fn func(int)
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 {
		c.fn(n)
	}
	return n, err
}

// zstdErrors marks decoding errors with ErrCorruptSegment: a corrupt
// compressed segment is a finding about the log, not a failure to read it.
type zstdErrors struct {
	r io.Reader
}

func (z zstdErrors) Read(p []byte) (int, error) {
	n, err := z.r.Read(p)
	if err != nil && err != io.EOF {
		var pe *fs.PathError
		if !errors.As(err, &pe) {
			err = fmt.Errorf("%w: %v", ErrCorruptSegment, err)
		}
	}
	return n, err
}

// OrderedFiles returns the files of s in seq order, as verify.Set reads
// them (one copy of a segment kept in two forms; unfinished copies, an
// empty spare and files that are not logs left out), with notes on what
// was left out and on what verify.Set would find missing or doubled. For
// reading the log; it checks nothing.
func (s *Set) OrderedFiles() (paths, notes []string, err error) {
	files, problems, notes, err := s.Plan()
	for _, f := range files {
		paths = append(paths, f.Path)
	}
	return paths, append(problems, notes...), err
}
