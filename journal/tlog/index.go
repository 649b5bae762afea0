package tlog

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"

	"github.com/transparency-dev/merkle/compact"

	"github.com/aegisrelay/aegis/internal/atomicfile"
	"github.com/aegisrelay/aegis/internal/vfs"
	"github.com/aegisrelay/aegis/journal/record"
	"github.com/aegisrelay/aegis/journal/segment"
)

// IndexVersion is the "v" of an index entry: part of the format.
const IndexVersion = 1

// An Index is a folder of summaries of sealed segments (doc.go, "Index"),
// one file per segment named for the SHA-256 of the segment's bytes. It
// is a cache: an entry missing, unreadable or not of the segment is
// computed from the segment, and one that cannot be written is not kept.
// An Index is safe for concurrent use, by one process or several (an
// entry replaces its file atomically, atomicfile).
//
// Its entries are read through a vfs.FS, and the segments it summarizes
// through the FS of their set (Add: the Index's); an entry that cannot be
// read for an I/O error is computed from the segment and left as it is,
// not replaced. Entries are written through package atomicfile, on the
// operating system's file system.
type Index struct {
	dir string
	fs  vfs.FS
}

// NewIndex returns the index kept in dir, created when an entry is first
// written.
func NewIndex(dir string) *Index { return NewIndexFS(vfs.OS, dir) }

// NewIndexFS is NewIndex reading through fsys.
func NewIndexFS(fsys vfs.FS, dir string) *Index { return &Index{dir: dir, fs: fsys} }

// indexEntry is what an index holds of one sealed segment read on its
// own: its leaves are records First to First+Leaves−1 and hash to the
// compact range Range; In is the prev of its first leaf, Out the SHA-256
// of its last, LastPrev the last one's prev; Origin is the log's origin
// when the segment holds seq 0.
type indexEntry struct {
	V        int           `json:"v"`
	File     string        `json:"file"` // hex SHA-256 of the segment's bytes
	First    uint64        `json:"first"`
	Leaves   uint64        `json:"leaves"`
	In       record.Digest `json:"-"`
	Out      record.Digest `json:"-"`
	LastPrev record.Digest `json:"-"`
	Origin   string        `json:"origin,omitempty"`
	Range    []Hash        `json:"range"`

	InHex       string `json:"in"`
	OutHex      string `json:"out"`
	LastPrevHex string `json:"last_prev"`
}

// Add computes the entry of the sealed segment at path and writes it,
// replacing one there. It is what the journal's sealer may call once a
// segment is sealed, so that prove reads nothing of it but its bytes'
// hash; prove adds the entries it misses itself.
func (x *Index) Add(path string) error {
	sum, err := fileSum(x.fs, path)
	if err != nil {
		return err
	}
	e, err := summarize(x.fs, path, sum)
	if err != nil || e == nil {
		return err // nil e: a segment with no entry (no leaf, or records that do not chain within it)
	}
	return x.write(e)
}

// entry returns the entry of the segment at path on fsys, computing and
// writing it if the index lacks it; nil (and no error) if the segment has
// none (no leaf, or records that do not chain within it). An entry that
// cannot be read (an I/O error, not a missing or malformed one) is
// computed and not written: the file may be sound and the disk failing.
func (x *Index) entry(fsys vfs.FS, path string) (*indexEntry, error) {
	sum, err := fileSum(fsys, path)
	if err != nil {
		return nil, err
	}
	e, rerr := x.read(sum)
	if e != nil {
		return e, nil
	}
	e, err = summarize(fsys, path, sum)
	if err != nil || e == nil {
		return nil, err
	}
	if rerr == nil {
		x.write(e) // a cache: an entry not written is computed again next time
	}
	return e, nil
}

func (x *Index) name(sum string) string { return filepath.Join(x.dir, sum) }

// maxEntry bounds what is read of an entry's file: an entry holds at
// most 64 hashes of a compact range and a few numbers.
const maxEntry = 64 << 10

// read returns the entry named sum, if it is there and well formed; err
// is an error reading it that is not its absence.
func (x *Index) read(sum string) (e *indexEntry, err error) {
	f, err := x.fs.Open(x.name(sum))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxEntry+1))
	if err != nil {
		return nil, err
	}
	e = &indexEntry{}
	if len(data) > maxEntry || json.Unmarshal(data, e) != nil || e.V != IndexVersion || e.File != sum || e.Leaves == 0 ||
		e.First+e.Leaves < e.First || len(e.Range) != compact.RangeSize(e.First, e.First+e.Leaves) ||
		!unhex(e.InHex, &e.In) || !unhex(e.OutHex, &e.Out) || !unhex(e.LastPrevHex, &e.LastPrev) {
		return nil, nil
	}
	return e, nil
}

func unhex(s string, d *record.Digest) bool {
	n, err := hex.Decode(d[:], []byte(s))
	return err == nil && n == len(d) && len(s) == 2*len(d)
}

func (x *Index) write(e *indexEntry) error {
	e.InHex, e.OutHex, e.LastPrevHex = hex.EncodeToString(e.In[:]), hex.EncodeToString(e.Out[:]), hex.EncodeToString(e.LastPrev[:])
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(x.dir, 0o700); err != nil {
		return err
	}
	return atomicfile.WriteFile(x.name(e.File), append(data, '\n'), 0o600)
}

// fileSum is the hex SHA-256 of the bytes of the file at path on fsys, as
// stored.
func fileSum(fsys vfs.FS, path string) (string, error) {
	f, err := fsys.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// summarize reads the segment at path on its own: its first candidate
// line is its first leaf, whatever the seq and prev (they chain to the
// file before), and the chain follows as in ReadSet. It returns nil if
// the segment holds no leaf or ends with a record that does not chain
// (Chain.Broken): such a segment is read whole, in its place, by prove.
func summarize(fsys vfs.FS, path, sum string) (*indexEntry, error) {
	e := &indexEntry{V: IndexVersion, File: sum}
	var t *Tree // the segment's leaves, from its first
	ch := &Chain{open: true}
	ch.Leaf = func(seq uint64, line []byte) error {
		if t == nil {
			e.First, e.In = seq, ch.pendP
			t = &Tree{}
			t.f = &compact.RangeFactory{Hash: t.hashChildren}
			t.r = t.f.NewEmptyRange(seq)
			if seq == 0 {
				e.Origin = Origin(line)
			}
		}
		t.AppendLeaf(ch.LeafHash())
		e.Leaves++
		e.Out, e.LastPrev = ch.pendH, ch.pendP
		return nil
	}
	var err error
	if ferr := readFile(fsys, path, func(line []byte) bool {
		err = ch.Line(line)
		return err == nil
	}); ferr != nil {
		return nil, ferr
	}
	if err == nil {
		err = ch.End()
	}
	if err != nil {
		return nil, err
	}
	if _, broken := ch.Broken(); broken || t == nil {
		return nil, nil
	}
	for _, h := range t.r.Hashes() {
		e.Range = append(e.Range, Hash(h))
	}
	return e, nil
}

// errIndexMismatch stops an indexed reading whose entries do not fit the
// log as read: the whole log is read instead.
var errIndexMismatch = errors.New("tlog: the index does not fit the log")

// sealed is an entry of a sealed segment as the indexed reading needs
// it: computed ahead by a worker, ready once done is closed.
type sealed struct {
	e    *indexEntry
	err  error
	done chan struct{}
}

// entries looks up (or computes) the entries of the sealed segments among
// paths on every core, ahead of the caller, at most window files ahead;
// the result for paths[i] is ready once out[i].done is closed (nil for a
// file that is not a sealed segment). release(i) tells it the caller is
// done with paths[i]; stop ends the workers.
func (x *Index) entries(fsys vfs.FS, paths []string) (out []*sealed, release func(), stop func()) {
	workers := runtime.GOMAXPROCS(0)
	window := make(chan struct{}, 4*workers)
	quit := make(chan struct{})
	jobs := make(chan int)
	out = make([]*sealed, len(paths))
	for i, p := range paths {
		if _, ok := segment.ParseName(p); ok {
			out[i] = &sealed{done: make(chan struct{})}
		}
	}
	go func() {
		defer close(jobs)
		for i := range paths {
			if out[i] == nil {
				continue
			}
			select {
			case window <- struct{}{}:
			case <-quit:
				return
			}
			select {
			case jobs <- i:
			case <-quit:
				return
			}
		}
	}()
	for range workers {
		go func() {
			for i := range jobs {
				out[i].e, out[i].err = x.entry(fsys, paths[i])
				close(out[i].done)
			}
		}()
	}
	release = func() {
		select {
		case <-window:
		default:
		}
	}
	return out, release, func() { close(quit) }
}

// indexed is the indexed reading of collectAt (doc.go, "Index"): every
// sealed segment whose entry fits the chain where it begins, and holds
// none of the leaves asked for, is passed over (its leaves are its
// entry's compact range, merged into t); the others, and the live file,
// are read through ch. It returns errIndexMismatch, or any other error,
// when the whole set is to be read instead.
func (x *Index) indexed(set *segment.Set, t *Tree, ch *Chain, visit compact.VisitFn, size uint64, must func(first, end uint64) bool, origin func(string) error, merged func()) error {
	paths, err := planPaths(set)
	if err != nil {
		return err
	}
	fsys := vfs.Or(set.FS)
	ents, release, stop := x.entries(fsys, paths)
	defer stop()
	for i, p := range paths {
		if t.Size() >= size {
			break
		}
		var e *indexEntry
		if s := ents[i]; s != nil {
			<-s.done
			release()
			if s.err != nil {
				return s.err
			}
			e = s.e
		}
		if e != nil && ch.at(e) && e.First+e.Leaves <= size && !must(e.First, e.First+e.Leaves) {
			if err := ch.End(); err != nil {
				return err
			}
			if t.Size() != e.First {
				return errIndexMismatch
			}
			if e.First == 0 {
				if err := origin(e.Origin); err != nil {
					return err
				}
			}
			if err := t.appendRange(e, visit); err != nil {
				return err
			}
			ch.skip(e)
			merged()
			continue
		}
		if _, err := streamPaths(fsys, []string{p}, ch, func() bool { return t.Size() >= size }); err != nil {
			return err
		}
	}
	if t.Size() < size {
		return ch.End()
	}
	return nil
}

// appendRange appends the leaves of e, given as their compact range,
// visiting the range's nodes and those the merge makes.
func (t *Tree) appendRange(e *indexEntry, visit compact.VisitFn) error {
	hs := make([][]byte, len(e.Range))
	for i := range e.Range {
		hs[i] = e.Range[i][:]
	}
	r, err := t.f.NewRange(e.First, e.First+e.Leaves, hs)
	if err != nil {
		return err
	}
	if visit != nil {
		for i, id := range compact.RangeNodes(e.First, e.First+e.Leaves, nil) {
			visit(id, hs[i])
		}
	}
	return t.r.AppendRange(r, visit)
}
