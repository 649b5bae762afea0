package segment

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/aegisrelay/aegis/journal/record"
)

// Segment file names. They are part of the format: verify finds a log's
// sealed segments, and the range each must hold, by these names.
const (
	// Ext ends the name of a sealed segment: FILE.<first>-<last>.jsonl.
	Ext = ".jsonl"
	// CompressedExt is added to a segment compressed with zstd.
	CompressedExt = ".zst"
	// TmpExt ends a compressed copy still being written; it is never the
	// only copy of anything and is removed by the next Open.
	TmpExt = ".tmp"
	// SpareExt ends the spare: the empty file that becomes the live file at
	// the next rotation, created ahead of time so that the swap costs one
	// rename. Between the swap and the seal it holds the old live file.
	SpareExt = ".next"
)

// Name returns the name under which the records first..last of the
// log at path are sealed: path.<first>-<last>.jsonl.
func Name(path string, first, last uint64) string {
	return path + "." + strconv.FormatUint(first, 10) + "-" + strconv.FormatUint(last, 10) + Ext
}

// Info is what a sealed segment's name says.
type Info struct {
	Base        string // the log's live file: the name without ".<first>-<last>.jsonl[.zst]"
	First, Last uint64 // the seqs of its first and last records
	Compressed  bool   // ".zst": zstd
}

// ParseName parses path.<first>-<last>.jsonl and the same with .zst.
// The numbers are canonical decimal (no leading zeros) and first <= last.
func ParseName(path string) (Info, bool) {
	var s Info
	name, ok := strings.CutSuffix(path, CompressedExt)
	s.Compressed = ok
	name, ok = strings.CutSuffix(name, Ext)
	if !ok {
		return s, false
	}
	dot := strings.LastIndexByte(name, '.')
	if dot <= 0 || name[dot-1] == filepath.Separator {
		return s, false
	}
	a, b, ok := strings.Cut(name[dot+1:], "-")
	if !ok {
		return s, false
	}
	first, ok1 := parseSeq(a)
	last, ok2 := parseSeq(b)
	if !ok1 || !ok2 || first > last {
		return s, false
	}
	s.Base, s.First, s.Last = name[:dot], first, last
	return s, true
}

func parseSeq(s string) (uint64, bool) {
	if s == "" || len(s) > 1 && s[0] == '0' {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

// FirstSeq returns the seq of the first record among the first few lines
// of r (the first line may be torn and answered by a recovery after it).
func FirstSeq(r io.Reader) (uint64, bool) {
	lr := NewLineReader(r)
	var d record.Decoder
	for range 4 {
		line, err := lr.Next()
		if len(line) > 0 && err == nil {
			if rec, derr := d.Decode(line); derr == nil {
				return rec.Seq, true
			}
		}
		if err != nil {
			return 0, false
		}
	}
	return 0, false
}

// StreamTail reads r to its end and returns its last intact line's seq and
// hash, as readTail does for a file it can seek in; for compressed
// segments, which must be read from the start.
func StreamTail(r io.Reader) (Tail, error) {
	var t Tail
	lr := NewLineReader(r)
	var last []byte
	longLast := false // the last line read was too long to be a record
	for {
		line, err := lr.Next()
		if errors.Is(err, ErrLongLine) {
			// No record, as verify reports; the tail is what comes after.
			longLast = true
			continue
		}
		if err == io.EOF {
			if torn := lr.Partial(); len(torn) > 0 {
				t.TornBytes = int64(len(torn))
				t.TornDigest = sha256.Sum256(torn)
			}
			longLast = longLast || lr.Long()
			break
		}
		if err != nil {
			return t, err
		}
		last, longLast = append(last[:0], line...), false
	}
	if longLast {
		return t, fmt.Errorf("%w: last line is longer than %d bytes", ErrNotLog, record.MaxLine)
	}
	if last == nil {
		return t, nil
	}
	var d record.Decoder
	rec, err := d.Decode(last)
	if err != nil {
		return t, fmt.Errorf("%w: last line: %v", ErrNotLog, err)
	}
	t.Intact, t.Seq, t.Hash = true, rec.Seq, sha256.Sum256(last)
	return t, nil
}

// Sibling is a file beside a log that belongs to it.
type Sibling struct {
	Path string
	Seg  Info
	Tmp  bool // an unfinished compressed copy (.jsonl.zst.tmp)
}

// Lister lists the names of the entries of a directory: every vfs.FS is
// one.
type Lister interface {
	ReadDir(dir string) ([]string, error)
}

// Siblings lists the sealed segments of the log at base found in its
// directory, and the unfinished compressed copies (tmp).
func Siblings(fsys Lister, base string) ([]Sibling, error) {
	dir := filepath.Dir(base)
	names, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	prefix := filepath.Base(base) + "."
	var out []Sibling
	for _, name := range names {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		p := filepath.Join(dir, name)
		tmp := false
		if n, ok := strings.CutSuffix(p, CompressedExt+TmpExt); ok {
			p, tmp = n+CompressedExt, true
		}
		s, ok := ParseName(p)
		if !ok || s.Base != base {
			continue
		}
		if tmp {
			p += TmpExt
		}
		out = append(out, Sibling{Path: p, Seg: s, Tmp: tmp})
	}
	return out, nil
}
