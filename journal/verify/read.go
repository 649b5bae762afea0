package verify

import (
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

// Reading for Stream and Set, on every core. Decoding a line (the
// canonical scanner, or the general decoder and a re-encoding,
// record.Decoder.DecodeInto) and hashing it is the per-record cost of verify,
// and each line's is independent of the others': a reader cuts the input
// — the files of a set one after the other — into chunks of whole lines
// (segment.LineReader), decoders on every core decode and hash them, and
// the verifier takes the results chunk by chunk, in order, for what must
// be sequential (the chain, seqs, sessions, the torn-line lookahead,
// where a file begins and ends). Signatures are checked by the
// sigChecker's workers. One pipeline spans every file of a set, so that
// many small segments keep every core busy as well as one big file does.
//
// Memory: at most inFlight×workers chunks queued, one being read, one
// being judged and the one the verifier holds (take), each about
// chunkSize bytes of input and its decoded records. A chunk is recycled
// with its buffers and the slots its lines decode into, so that reading,
// decoding and judging a line allocates nothing in steady state.
//
// What the pipeline holds is most of what verify's process touches: a
// line's decoded slot is about three times its bytes, and memory a
// process touches first costs a page fault per page and the collector's
// scans. So chunks are small and few are queued: enough that no core
// waits for work, and no more.

// chunkSize is the input cut into one decoder's task: large enough that
// handing it over (a channel send, perhaps a wake-up) costs little next
// to decoding it, small enough that the chunks in flight stay few pages.
const chunkSize = 32 << 10

// inFlight is the chunks queued per worker: one queued while one is
// decoded keeps a worker busy.
const inFlight = 1

// chunk is a run of whole lines and, once decoded, their records; or a
// marker of where a file begins or ends. The records alias buf (slot), so
// a chunk is recycled only once no record of it is in use.
type chunk struct {
	buf   []byte // the lines, each without its '\n'
	ends  []int  // end of each line in buf
	recs  []decoded
	ready chan struct{} // closed once recs is filled
	// long, if on, is the chunk's last line: one longer than
	// record.MaxLine, which buf holds none of (chunkReader.next).
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
// SHA-256 of its bytes. long: the line is longer than record.MaxLine,
// not held and not decoded (err says so).
type decoded struct {
	record.Slot
	err  error
	hash record.Digest
	long bool
}

// longLine is a line longer than any record (record.MaxLine): what the
// reader keeps of it, its length and the SHA-256 of its bytes, so that
// the chain is checked across it (the next line's prev) without holding
// it.
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

// freeChunks recycles chunks: at most cap(freeChunks) wait to be used
// again, enough for the chunks a verify keeps in flight, and a chunk put
// when it is full is left to the collector. A channel rather than a
// sync.Pool, which may drop what is put (it does so at random under the
// race detector, and at every collection): what verify allocates stays
// the few chunks in flight, whatever the log's length (TestVerifyFootprint).
// A new chunk's buffer starts empty and grows: a small log (most Verify
// calls in tests and fuzzing) never pays for a whole chunkSize buffer.
var freeChunks = make(chan *chunk, 16)

// getChunk returns a recycled chunk, or a new one.
func getChunk() *chunk {
	select {
	case c := <-freeChunks:
		return c
	default:
		return &chunk{}
	}
}

// putChunk recycles c, whose lines are all judged.
func putChunk(c *chunk) {
	select {
	case freeChunks <- c:
	default:
	}
}

// readEnd is how the input ended.
type readEnd struct {
	err     error  // a read error (not io.EOF)
	torn    []byte // bytes after the last '\n'
	tooLong int64  // > 0: the bytes after the last '\n' (not in torn) are this many, more than record.MaxLine
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

// reading is where the verifier is in the file it reads: the line read
// but not yet judged, a torn run being read, the lines read, the records
// and the seqs of its first and last records, and the chunk whose records
// it may still use.
type reading struct {
	p        pending
	torn     tornRun
	n        uint64 // lines of the file read
	fileRecs uint64
	fileSeqs [2]uint64
	held     *chunk
}

// pending is a line read but not yet judged: whether it is a torn line
// depends on the line after it. buf and rec are in the chunk the verifier
// holds (take).
type pending struct {
	buf  []byte
	rec  *record.Record
	err  error
	hash record.Digest
	line uint64
	ok   bool
	long bool // a line longer than record.MaxLine: buf holds none of it
}

// runFile verifies one reader as a whole log (Verify). An input of one
// chunk is decoded right here: no goroutine is worth starting for it.
func (v *verifier) runFile(r io.Reader) error {
	v.in.n = 0
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
	ordered := make(chan *chunk, inFlight*workers)
	work := make(chan *chunk, inFlight*workers)
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
			v.in.n = 0
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
		v.in.n++
		v.judge(line, &c.recs[i])
	}
	if len(c.ends) == 0 {
		putChunk(c)
		return
	}
	v.release()
	v.in.held = c
}

// release recycles the chunk the verifier holds. No pending line may be
// in it: take calls it once the lines of the next chunk are judged,
// endFile once the last line is.
func (v *verifier) release() {
	if v.in.held != nil {
		putChunk(v.in.held)
		v.in.held = nil
	}
}

// endFile judges the last line and how the input ended. last says whether
// it is the last file: a torn last line is what a crash leaves at the end
// of a log (a gap), but never inside a set (a problem).
func (v *verifier) endFile(end readEnd, last bool) error {
	in, out := &v.in, &v.out
	v.flush()
	v.release()
	if in.torn.on {
		in.torn.on = false
		out.line = in.torn.line
		n := in.torn.n + int64(len(end.torn))
		switch {
		case !last:
			out.invalid(nil, "NUL bytes at line %d of a file that is not the last of its set", in.torn.line)
		case in.torn.signed:
			// Never let NULs pass signed records off as torn (a hole in
			// a group whose signed last record reached the disk reads so
			// until the next Open answers it).
			out.invalid(nil, "NUL bytes at line %d, and signatures in or after its line", in.torn.line)
		default:
			out.incomplete(0, false, "torn write at the end (%d bytes from line %d on, with NUL bytes: a power loss during a write over pre-zeroed space); the next aegis wrap on this file records its recovery", n, in.torn.line)
		}
		return end.err
	}
	switch {
	case end.tooLong > 0:
		// No crash leaves this: no record is longer than record.MaxLine.
		out.line = in.n + 1
		out.invalid(nil, "last line (%d bytes without a line end) is longer than any record (%d bytes)", end.tooLong, record.MaxLine)
	case len(end.torn) > 0 && end.err == nil:
		out.line = in.n + 1
		if last {
			out.incomplete(0, false, "torn last line (%d bytes without a line end): a crash during a write; the next aegis wrap on this file records its recovery", len(end.torn))
		} else {
			out.invalid(nil, "torn line (%d bytes without a line end) at the end of a file that is not the last of its set", len(end.torn))
		}
	}
	return end.err
}

// judge takes the next line and its decoding, in order. Both stay valid
// while pending, until the next line is judged (take).
func (v *verifier) judge(line []byte, d *decoded) {
	in, p, out := &v.in, &v.in.p, &v.out
	rec := d.record()
	if in.torn.on {
		if rec != nil && in.torn.answeredBy(rec) {
			in.torn.on = false
			out.line = in.n
			v.process(rec, d.err, d.hash, len(line), true)
			return
		}
		if !d.long && in.torn.add(line) {
			return
		}
		in.torn.on = false
		out.line = in.torn.line
		out.invalid(nil, "NUL bytes in a line, and no recovery record answers them within %d bytes", maxTornRun)
		v.chain.resync = true // one problem, not one per line after it
	}
	if rec != nil && rec.Kind == record.KindRecovery && p.ok && !p.long {
		if rv := rec.Body.(*record.Recovery); int64(rv.TornBytes) == int64(len(p.buf)) && rv.TornDigest == p.hash {
			// The line before was torn by a crash and is answered by
			// this recovery, which chains past it: not tampering.
			p.ok = false
			out.line = in.n
			v.process(rec, d.err, d.hash, len(line), true)
			return
		}
	}
	v.flush()
	if d.err != nil && bytes.IndexByte(line, 0) >= 0 {
		in.torn.start(line, in.n)
		return
	}
	p.buf, p.rec, p.err, p.hash, p.line, p.ok, p.long = line, rec, d.err, d.hash, in.n, true, d.long
}

// flush judges the pending line, if any, as an ordinary line.
func (v *verifier) flush() {
	p := &v.in.p
	if !p.ok {
		return
	}
	p.ok = false
	v.out.line = p.line
	v.process(p.rec, p.err, p.hash, len(p.buf), false)
}

// maxTornRun bounds a torn run: the unsynced bytes a power loss may have
// left holes in (segment.MaxUnsynced), from the start of the line they
// begin in.
const maxTornRun = segment.MaxUnsynced + record.MaxLine

// tornRun is a run of lines whose first holds a NUL byte: what a power
// loss during a write over pre-zeroed space leaves, a hole and maybe lines
// of a later page after it (segment.ReadTail). A recovery record whose
// torn_bytes and torn_digest are those of the whole run, its lines joined
// by '\n', answers it.
type tornRun struct {
	on     bool
	line   uint64 // its first line
	n      int64
	h      hash.Hash
	signed bool // a signature at or after the hole (start)
}

// start begins a run at line, line n of its file.
func (t *tornRun) start(line []byte, n uint64) {
	if t.h == nil {
		t.h = sha256.New()
	}
	t.h.Reset()
	t.h.Write(line)
	// A signature before the line's first NUL byte (an att its record
	// carries, or its own sig with the line's end torn off) reached the
	// disk with what it covers, all of it before the hole: the hole hides
	// nothing a cut there would not. One at or after the hole is what
	// torn bytes must never pass off.
	hole := max(bytes.IndexByte(line, 0), 0)
	t.on, t.line, t.n, t.signed = true, n, int64(len(line)), bytes.Contains(line[hole:], []byte(record.SigField))
}

// add adds the next line; false if the run is then too long to be torn.
func (t *tornRun) add(line []byte) bool {
	t.signed = t.signed || bytes.Contains(line, []byte(record.SigField))
	t.h.Write([]byte{'\n'})
	t.h.Write(line)
	t.n += 1 + int64(len(line))
	return t.n <= maxTornRun
}

// answeredBy reports whether r is the recovery record of the run: its
// torn_bytes and torn_digest those of the run.
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
// record.MaxLine (c.long) is not decoded: it is no record the journal
// writes.
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

// chunkReader cuts its input into chunks of whole lines, read by a
// segment.LineReader, which hashes the lines too long to hold.
type chunkReader struct {
	lr  *segment.LineReader
	lh  hash.Hash // the SHA-256 of the last line too long to hold
	end readEnd   // how the input ended, once next has said so
	// big: a chunk was cut at chunkSize, so the input is no small one
	// and a new chunk's buffer is made whole at once, not grown.
	big bool
}

// newChunkReader reads r's content: a NUL run at its end is pre-zeroed
// space (segment.NewNulTail), not a torn line.
func newChunkReader(r io.Reader) *chunkReader {
	cr := &chunkReader{lr: segment.NewLineReader(segment.NewNulTail(r)), lh: sha256.New()}
	cr.lr.HashLongLines(cr.lh)
	return cr
}

// next returns the next chunk, and false if the input ended with it (cr.end
// says how). A line longer than record.MaxLine ends its chunk (c.long),
// and reading goes on after it: the lines after it are checked as if it
// were any line that does not decode.
func (cr *chunkReader) next() (*chunk, bool) {
	c := newChunk()
	if cr.big && cap(c.buf) == 0 {
		c.buf = make([]byte, 0, chunkSize+chunkSize/8)
	}
	for {
		line, err := cr.lr.Next()
		if err == nil {
			c.buf = append(c.buf, line...)
			c.ends = append(c.ends, len(c.buf))
			if len(c.buf) >= chunkSize {
				cr.big = true
				return c, true
			}
			continue
		}
		if le, ok := err.(*segment.LongLineError); ok {
			c.long.on, c.long.n = true, le.N
			cr.lh.Sum(c.long.hash[:0])
			c.ends = append(c.ends, len(c.buf))
			return c, true
		}
		if cr.lr.Long() {
			cr.end.tooLong = cr.lr.LongLen()
		} else {
			cr.end.torn = bytes.Clone(cr.lr.Partial())
		}
		if err != io.EOF {
			cr.end.err = err
		}
		return c, false
	}
}

// newChunk returns an empty data chunk, recycled if the pool has one.
func newChunk() *chunk {
	c := getChunk()
	c.buf, c.ends, c.recs, c.long = c.buf[:0], c.ends[:0], c.recs[:0], longLine{}
	c.ready, c.mark = make(chan struct{}), markData
	return c
}
