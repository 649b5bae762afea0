package verify

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"slices"
	"sync"

	"github.com/aegisrelay/aegis/journal/record"
	"github.com/aegisrelay/aegis/journal/segment"
)

// Reading for Stream and Set, on every core. Decoding a line (parse,
// canonical re-encoding) and hashing it is the per-record cost of verify,
// and each line's is independent of the others': a reader cuts the input
// — the files of a set one after the other — into chunks of whole lines,
// decoders on every core decode and hash them, and the verifier takes the
// results chunk by chunk, in order, for what must be sequential (the
// chain, seqs, sessions, the torn-line lookahead, where a file begins and
// ends). Signatures are checked by the verifier's own workers (checkSigs).
// One pipeline spans every file of a set, so that many small segments
// keep every core busy as well as one big file does.
//
// Memory: at most 4×workers chunks in flight, each about chunkSize bytes
// of input and its decoded records, and the chunk the verifier holds
// (take). A chunk is recycled with its buffers and the slots its lines
// decode into, so that reading, decoding and judging a line allocates
// nothing in steady state.

// chunkSize is the input cut into one decoder's task: large enough that
// handing it over costs nothing next to decoding it, small enough that
// every core gets work from a small file.
const chunkSize = 256 << 10

// chunk is a run of whole lines and, once decoded, their records; or a
// marker of where a file begins or ends. The records alias buf (slot), so
// a chunk is recycled only once no record of it is in use.
type chunk struct {
	buf   []byte // the lines, each without its '\n'
	ends  []int  // end of each line in buf
	recs  []decoded
	ready chan struct{} // closed once recs is filled
	// long, if on, is the chunk's last line: one longer than maxLine,
	// which buf holds none of (chunkReader.skipLong).
	long longLine

	mark  mark
	file  int     // the source it belongs to
	end   readEnd // for markEnd
	fatal error   // for markFail: a file could not be opened or read
}

type mark uint8

const (
	markData mark = iota
	markBegin
	markEnd
	markFail
)

// decoded is one line decoded: its record (valid if err is nil) and the
// SHA-256 of its bytes. long: the line is longer than maxLine, not held
// and not decoded (err says so).
type decoded struct {
	record.Slot
	err  error
	hash record.Digest
	long bool
}

// longLine is a line longer than any record (maxLine): what the reader
// keeps of it, its length and the SHA-256 of its bytes, so that the chain
// is checked across it (the next line's prev) without holding it.
type longLine struct {
	on   bool
	n    int64
	hash record.Digest
}

// record returns the line's record, or nil if it did not decode.
func (d *decoded) record() *record.Record {
	if d.err != nil {
		return nil
	}
	return d.Record()
}

// chunkPool recycles chunks. A new chunk's buffer starts empty and grows:
// a small log (most Verify calls in tests and fuzzing) never pays for a
// whole chunkSize buffer.
var chunkPool = sync.Pool{New: func() any { return &chunk{} }}

// readEnd is how the input ended.
type readEnd struct {
	err     error  // a read error (not io.EOF)
	torn    []byte // bytes after the last '\n'
	tooLong int64  // > 0: the bytes after the last '\n' (not in torn) are this many, more than maxLine
}

// source is one input of a verification: the one reader of Verify, or a
// file of a set.
type source struct {
	open func() (io.ReadCloser, error)
	// begin and end, if set, are called by the verifier's goroutine where
	// the source begins and after it ended (and its end was judged).
	begin func()
	end   func(readEnd)
}

// runFile verifies one reader as a whole log (Verify). An input of one
// chunk is decoded right here: no goroutine is worth starting for it.
func (v *verifier) runFile(r io.Reader) error {
	v.n = 0
	cr := newChunkReader(r)
	c, more := cr.next()
	if !more {
		c.decode(&v.dec)
		v.take(c)
		return v.endFile(cr.end, true)
	}
	return v.run([]source{{}}, &begun{cr: cr, c: c})
}

// begun is a first source already being read: the reader and the chunk it
// gave.
type begun struct {
	cr *chunkReader
	c  *chunk
}

// run reads the sources, in order, through the pipeline; pre, if not nil,
// is the first source, already begun. A source that cannot be opened or
// read stops everything: its error is returned. A compressed segment that
// does not decode is a finding, which its end callback judges, and reading
// goes on.
func (v *verifier) run(srcs []source, pre *begun) error {
	workers := v.opts.Workers
	ordered := make(chan *chunk, 4*workers)
	work := make(chan *chunk, 4*workers)
	go func() {
		defer close(work)
		defer close(ordered)
		for i, src := range srcs {
			ordered <- marker(markBegin, i)
			var rc io.ReadCloser
			var cr *chunkReader
			var c *chunk // a chunk read but not yet sent
			if i == 0 && pre != nil {
				cr, c = pre.cr, pre.c
			} else {
				var err error
				if rc, err = src.open(); err != nil {
					m := marker(markFail, i)
					m.fatal = err
					ordered <- m
					return
				}
				cr = newChunkReader(rc)
			}
			for more := true; more; {
				if c == nil {
					c, more = cr.next()
				}
				// (pre.c is never the last chunk: runFile decodes a
				// one-chunk input itself.)
				c.file = i
				ordered <- c
				work <- c
				c = nil
			}
			if rc != nil {
				rc.Close()
			}
			m := marker(markEnd, i)
			m.end = cr.end
			ordered <- m
			if cr.end.err != nil && !errors.Is(cr.end.err, segment.ErrCorruptSegment) {
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var d record.Decoder
			for c := range work {
				c.decode(&d)
			}
		}()
	}
	defer wg.Wait()
	var fatal error
	for c := range ordered {
		switch c.mark {
		case markData:
			<-c.ready
			v.take(c)
		case markBegin:
			v.n = 0
			if f := srcs[c.file].begin; f != nil {
				f()
			}
		case markEnd:
			err := v.endFile(c.end, c.file == len(srcs)-1)
			if f := srcs[c.file].end; f != nil {
				f(c.end)
			} else if err != nil {
				fatal = err
			}
			if c.end.err != nil && !errors.Is(c.end.err, segment.ErrCorruptSegment) {
				fatal = c.end.err
			}
		case markFail:
			fatal = c.fatal
		}
	}
	return fatal
}

func marker(m mark, file int) *chunk {
	c := &chunk{mark: m, file: file, ready: closed}
	return c
}

var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// take judges the lines of a decoded chunk, in order. The chunk's last
// line may be left pending (judge), its record in the chunk: so the
// verifier holds the chunk until the next line is judged, and recycles
// the chunk it held before, whose lines are all judged.
func (v *verifier) take(c *chunk) {
	start := 0
	for i, e := range c.ends {
		line := c.buf[start:e]
		start = e
		v.n++
		v.judge(&v.p, line, &c.recs[i])
	}
	if len(c.ends) == 0 {
		chunkPool.Put(c)
		return
	}
	v.release()
	v.held = c
}

// release recycles the chunk the verifier holds. No pending line may be
// in it: take calls it once the lines of the next chunk are judged,
// endFile once the last line is.
func (v *verifier) release() {
	if v.held != nil {
		chunkPool.Put(v.held)
		v.held = nil
	}
}

// endFile judges the last line and how the input ended. last says whether
// it is the last file: a torn last line is what a crash leaves at the end
// of a log (a gap), but never inside a set (a problem).
func (v *verifier) endFile(end readEnd, last bool) error {
	v.flush(&v.p)
	v.release()
	if v.torn.on {
		v.torn.on = false
		v.line = v.torn.line
		n := v.torn.n + int64(len(end.torn))
		switch {
		case !last:
			v.invalid(nil, "NUL bytes at line %d of a file that is not the last of its set", v.torn.line)
		case v.torn.signed:
			// Never let NULs pass signed records off as torn (a hole in
			// a group whose signed last record reached the disk reads so
			// until the next Open answers it).
			v.invalid(nil, "NUL bytes at line %d, and signatures in or after its line", v.torn.line)
		default:
			v.problem(&v.rep.Gaps, 0, false, "torn write at the end (%d bytes from line %d on, with NUL bytes: a power loss during a write over pre-zeroed space); the next aegis wrap on this file records its recovery", n, v.torn.line)
		}
		return end.err
	}
	switch {
	case end.tooLong > 0:
		// No crash leaves this: no record is longer than maxLine.
		v.line = v.n + 1
		v.invalid(nil, "last line (%d bytes without a line end) is longer than any record (%d bytes)", end.tooLong, record.MaxLine)
	case len(end.torn) > 0 && end.err == nil:
		v.line = v.n + 1
		if last {
			v.problem(&v.rep.Gaps, 0, false, "torn last line (%d bytes without a line end): a crash during a write; the next aegis wrap on this file records its recovery", len(end.torn))
		} else {
			v.invalid(nil, "torn line (%d bytes without a line end) at the end of a file that is not the last of its set", len(end.torn))
		}
	}
	return end.err
}

// judge takes the next line and its decoding, in order. Both stay valid
// while pending, until the next line is judged (take).
func (v *verifier) judge(p *pending, line []byte, d *decoded) {
	rec := d.record()
	if v.torn.on {
		if rec != nil && v.torn.answeredBy(rec) {
			v.torn.on = false
			v.line = v.n
			v.process(rec, d.err, d.hash, true)
			return
		}
		if !d.long && v.torn.add(line) {
			return
		}
		v.torn.on = false
		v.line = v.torn.line
		v.invalid(nil, "NUL bytes in a line, and no recovery record answers them within %d bytes", maxTornRun)
		v.resync = true // one problem, not one per line after it
	}
	if rec != nil && rec.Kind == record.KindRecovery && p.ok && !p.long {
		if rv := rec.Body.(*record.Recovery); int64(rv.TornBytes) == int64(len(p.buf)) && rv.TornDigest == p.hash {
			// The line before was torn by a crash and is answered by
			// this recovery, which chains past it: not tampering.
			p.ok = false
			v.line = v.n
			v.process(rec, d.err, d.hash, true)
			return
		}
	}
	v.flush(p)
	if d.err != nil && bytes.IndexByte(line, 0) >= 0 {
		v.torn.start(line, v.n)
		return
	}
	p.buf, p.rec, p.err, p.hash, p.line, p.ok, p.long = line, rec, d.err, d.hash, v.n, true, d.long
}

// maxTornRun bounds a torn run: the unsynced bytes a power loss may have
// left holes in (maxUnsynced), from the start of the line they begin in.
const maxTornRun = segment.MaxUnsynced + record.MaxLine

// tornRun is a run of lines whose first holds a NUL byte: what a power
// loss during a write over pre-zeroed space leaves, a hole and maybe lines
// of a later page after it (readTail). A recovery record whose torn_bytes
// and torn_digest are those of the whole run, its lines joined by '\n',
// answers it.
type tornRun struct {
	on     bool
	line   uint64 // its first line
	n      int64
	h      hash.Hash
	signed bool // a line of it carries a signature
}

func (t *tornRun) start(line []byte, n uint64) {
	if t.h == nil {
		t.h = sha256.New()
	}
	t.h.Reset()
	t.h.Write(line)
	t.on, t.line, t.n, t.signed = true, n, int64(len(line)), bytes.Contains(line, []byte(record.SigField))
}

// add adds the next line; false if the run is then too long to be torn.
func (t *tornRun) add(line []byte) bool {
	t.signed = t.signed || bytes.Contains(line, []byte(record.SigField))
	t.h.Write([]byte{'\n'})
	t.h.Write(line)
	t.n += 1 + int64(len(line))
	return t.n <= maxTornRun
}

func (t *tornRun) answeredBy(r *record.Record) bool {
	rv, ok := r.Body.(*record.Recovery)
	if !ok || int64(rv.TornBytes) != t.n {
		return false
	}
	var sum record.Digest
	t.h.Sum(sum[:0])
	return rv.TornDigest == sum
}

// decode decodes and hashes every line of c into c.recs, reusing the
// slots a recycled chunk holds, then marks it ready. A line longer than
// maxLine (c.long) is not decoded: it is no record the journal writes.
func (c *chunk) decode(d *record.Decoder) {
	c.recs = slices.Grow(c.recs[:0], len(c.ends))[:len(c.ends)]
	start := 0
	for i, e := range c.ends {
		line := c.buf[start:e]
		start = e
		r := &c.recs[i]
		if r.long = c.long.on && i == len(c.ends)-1; r.long {
			r.err = fmt.Errorf("%w: line of %d bytes, longer than any record (%d bytes): not read", record.ErrRecord, c.long.n, record.MaxLine)
			r.hash = c.long.hash
			continue
		}
		r.err = d.DecodeInto(&r.Slot, line)
		r.hash = sha256.Sum256(line)
	}
	close(c.ready)
}

// chunkReader cuts its input into chunks of whole lines.
type chunkReader struct {
	br  *bufio.Reader
	end readEnd   // how the input ended, once next has said so
	h   hash.Hash // for skipLong, made on first use
}

// newChunkReader reads r's content: a NUL run at its end is pre-zeroed
// space (prezero.go), not a torn line.
func newChunkReader(r io.Reader) *chunkReader {
	return &chunkReader{br: bufio.NewReaderSize(segment.NewNulTail(r), 64<<10)}
}

// next returns the next chunk, and false if the input ended with it (cr.end
// says how).
func (cr *chunkReader) next() (*chunk, bool) {
	c := newChunk()
	lineStart := 0
	for {
		frag, err := cr.br.ReadSlice('\n')
		n := len(frag)
		if err == nil {
			n-- // the '\n'
		}
		if len(c.buf)-lineStart+n > record.MaxLine {
			return cr.skipLong(c, lineStart, frag, err)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			c.buf = append(c.buf, frag...)
			continue
		}
		if err != nil {
			c.buf = append(c.buf, frag...)
			cr.end.torn = append([]byte(nil), c.buf[lineStart:]...)
			c.buf = c.buf[:lineStart]
			if err != io.EOF {
				cr.end.err = err
			}
			return c, false
		}
		c.buf = append(c.buf, frag[:len(frag)-1]...)
		c.ends = append(c.ends, len(c.buf))
		lineStart = len(c.buf)
		if len(c.buf) >= chunkSize {
			return c, true
		}
	}
}

// skipLong reads the rest of a line longer than maxLine — its first bytes
// in c.buf from lineStart, then frag and err, what ReadSlice returned —
// hashing it as it goes and holding none of it. A line ended by '\n' is
// c's last line (c.long), and reading goes on after it: the lines after
// it are checked as if it were any line that does not decode. One not
// ended is the end of the input (readEnd.tooLong).
func (cr *chunkReader) skipLong(c *chunk, lineStart int, frag []byte, err error) (*chunk, bool) {
	if cr.h == nil {
		cr.h = sha256.New()
	}
	h := cr.h
	h.Reset()
	h.Write(c.buf[lineStart:])
	n := int64(len(c.buf) - lineStart)
	c.buf = c.buf[:lineStart]
	for errors.Is(err, bufio.ErrBufferFull) {
		h.Write(frag)
		n += int64(len(frag))
		frag, err = cr.br.ReadSlice('\n')
	}
	if err != nil {
		cr.end = readEnd{tooLong: n + int64(len(frag))}
		if err != io.EOF {
			cr.end.err = err
		}
		return c, false
	}
	h.Write(frag[:len(frag)-1])
	c.long.on, c.long.n = true, n+int64(len(frag)-1)
	h.Sum(c.long.hash[:0])
	c.ends = append(c.ends, len(c.buf))
	return c, true
}

func newChunk() *chunk {
	c := chunkPool.Get().(*chunk)
	c.buf, c.ends, c.recs, c.long = c.buf[:0], c.ends[:0], c.recs[:0], longLine{}
	c.ready, c.mark = make(chan struct{}), markData
	return c
}
