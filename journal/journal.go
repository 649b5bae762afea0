package journal

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aegisrelay/aegis/internal/vfs"
	"github.com/aegisrelay/aegis/journal/record"
	"github.com/aegisrelay/aegis/journal/segment"
	"github.com/aegisrelay/aegis/journal/tlog"
)

// Options configure Open. Key is required; the rest have defaults.
type Options struct {
	// Durability is the level; the zero value is None, so callers normally
	// pass the result of ParseDurability (default "strict").
	Durability Durability
	// Key is the log's root key: an ed25519.PrivateKey, or any
	// crypto.Signer of Ed25519 (a key an ssh-agent holds). It certifies
	// the session key that signs the records, once at Open, and signs the
	// head file and the checkpoints, off the records' path (doc.go,
	// "Session keys").
	Key crypto.Signer
	// Rand is the source of the session key. Default crypto/rand.Reader.
	Rand io.Reader
	// FS is the file system every file of the log, its head file and its
	// checkpoints are written and read through. Default vfs.OS; tests
	// wrap it to inject faults (package errorfs).
	FS vfs.FS
	// Now is the clock of "ts" and of nothing else. Default time.Now.
	Now func() time.Time
	// SID is the session id. Default: 16 random bytes.
	SID [16]byte

	// MaxSize, when positive, rotates the log: once the live file holds at
	// least MaxSize bytes it is sealed as path.<first>-<last>.jsonl and a
	// new live file continues the chain (rotate.go, doc.go "Segments").
	// Default 0: one file that grows without bound.
	MaxSize int64
	// Compress zstd-compresses sealed segments in a background goroutine,
	// including segments left uncompressed by earlier sessions. Default off.
	Compress bool
	// Index, when set, is given an entry for each segment this journal
	// seals (tlog.Index.Add), so that prove passes over the segment
	// without reading its records: for the file that stays, the .zst once
	// compressed (Compress) or the plain segment once sealed. It is written
	// by the compressor's goroutine, off the records' path; an entry
	// that cannot be written is left out, as a cache's may be (prove makes
	// it). Default nil: none.
	Index *tlog.Index
	// HeadFile, when set, is kept holding a signed head of the log, replaced
	// atomically every HeadEvery (default DefaultHeadEvery) while records
	// are written, and at Close (head.go). Default: none.
	HeadFile  string
	HeadEvery time.Duration
	// Checkpoint, with its File set, keeps signed checkpoints of the log's
	// Merkle tree (checkpoint.go, doc.go "Checkpoints"). Default: none.
	Checkpoint CheckpointOptions
	// Logf reports what goes wrong in the background without failing the
	// journal (a segment that could not be compressed). Default: discard.
	Logf func(format string, args ...any)
	// Tap, when set, is given the bytes of each group of lines once they
	// are written (and synced, when the group is), in log order, on the
	// writer's path: it copies what it keeps and returns at once
	// (package otelexport reads the calls it exports from them). A torn
	// line's ending '\n' may come before the group. Default: none.
	Tap func(lines []byte)
	// TapSync, when set, is given how long each fdatasync of a group
	// took, on the writer's path, before Tap is given the group; like
	// Tap it returns at once (otelexport's fsync latency). Default: none.
	TapSync func(time.Duration)
	// TapLines, when set, is given what Tap is given, with the SHA-256
	// of each of its lines but an empty one (a torn line's ending), in
	// order: the digest the next line's prev names, which the journal
	// computes for the chain, so that a tap that names lines by their
	// digest (otelexport's aegis.record.digest) does not hash them
	// again. The digests, like the lines, are valid only until it
	// returns. Default: none.
	TapLines func(lines []byte, digests [][32]byte)

	// onStep, set only by tests, is called at each step of sealing and
	// compressing (rotate.go's step names): the crash tests SIGKILL their
	// own process there.
	onStep stepHook
	// attestHook, if set, runs on the attester's goroutine before each
	// signature it makes (attest.go): tests hold signatures back with it.
	attestHook func(attestLine)
}

// Journal appends records to one audit file. Its methods are safe for
// concurrent use by any number of goroutines. Every record it appends
// carries its session id (sid); Session returns another handle on the same
// log for another session.
type Journal struct {
	*log
	sid [32]byte // hex; the records this handle appends carry it
}

// log is the state every handle on one audit file shares.
type log struct {
	path string
	f    *file
	dur  Durability
	key  crypto.Signer // the root; it signs the head and checkpoints
	sign *signer       // the leader's, with the session key
	pub  ed25519.PublicKey
	now  func() time.Time

	// session is the session key's public half and certificate (sign.go).
	session sessionKey

	mu      sync.Mutex
	cond    sync.Cond
	q       queue  // appended, not yet taken by a flush
	spare   queue  // the other buffer, reused
	nextSeq uint64 // seq of the next Append
	written uint64 // every seq below it has been written
	synced  uint64 // every seq below it has been synced
	// flushing is true while one goroutine (the leader) owns the fields
	// below and the file; every other waiter sleeps on cond.
	flushing bool
	err      error // sticky; set once, never cleared
	closed   bool
	stop     chan struct{} // stops the interval syncer
	done     chan struct{}

	// Owned by the leader.
	lead []byte        // bytes to write before the next group ("\n" ending a torn line)
	prev record.Digest // hash of the last line written
	head record.Head
	out  []byte

	// Attestation (attest.go): the attester, the bytes of the lines this
	// journal has encoded (each with its '\n'), where the last line a
	// signature covers ends in them, and the seq after it.
	att        *attester
	lineEnd    uint64
	coveredEnd uint64
	attested   uint64
	// headSID and headKind are the last line's session and kind: a close
	// record (Close) belongs to that session.
	headSID  *[32]byte
	headKind record.Kind
	// asked is the line the attester was last asked to sign, not yet
	// carried (askedOK), at the ts askedAt, urgently (a synced group's).
	asked       attestLine
	askedOK     bool
	askedAt     time.Time
	askedUrgent bool

	// Linger (linger.go): what the leader expects, its timer, and the
	// fdatasync cost that bounds its wait.
	calls     calls
	lingerer  *lingerer // nil: never linger
	lingering bool
	lingers   uint64 // waits so far, for tests and benchmarks
	// lingerTimeouts counts lingers that ended at their bound with
	// records still expected.
	lingerTimeouts uint64
	syncCost       time.Duration

	tap   func([]byte) // Options.Tap; called by the leader only
	rot   *rotator     // nil unless Options.MaxSize or Options.Compress
	heads *headWriter  // nil unless Options.HeadFile

	tapSync func(time.Duration) // Options.TapSync; called by the leader only
	// tapLines is Options.TapLines, called by the leader only; digests
	// holds the SHA-256 of each line of the group encode made last, for
	// it (nil without it).
	tapLines func([]byte, [][32]byte)
	digests  [][32]byte

	// Checkpoints (checkpoint.go), nil unless Options.Checkpoint.File:
	// the tree of every record written (owned by the leader) and the
	// log's origin, set once seq 0 is written; cpSince is the records
	// written at the last checkpoint's snapshot (mu).
	tree      *tlog.Tree
	origin    string
	cps       *checkpointer
	cpSince   uint64
	cpWriting atomic.Uint64 // checkpoints signed, for tests and benchmarks
}

type queue struct {
	fields []byte // the kind fields of every record, back to back
	recs   []queued
}

type queued struct {
	seq  uint64
	ts   time.Time
	kind record.Kind
	sid  *[32]byte // the appending handle's
	end  int       // end of this record's fields in queue.fields
}

func (q *queue) reset() {
	q.fields = q.fields[:0]
	q.recs = q.recs[:0]
}

// Open opens (or creates) the audit file at path for appending. An existing
// file is continued: the next record chains to its last intact line, and a
// torn last line is ended and answered by a Recovery record, which is
// queued as the first record of this journal. The caller appends
// SessionStart next. Options whose head or checkpoint file names the log,
// one of its segments or the head file are refused (ErrClash).
func Open(path string, opts Options) (*Journal, error) {
	if err := checkFiles(path, opts); err != nil {
		return nil, err
	}
	rootPub, err := rootPublicKey(opts.Key)
	if err != nil {
		return nil, err
	}
	if opts.Rand == nil {
		opts.Rand = rand.Reader
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.SID == ([16]byte{}) {
		if _, err := rand.Read(opts.SID[:]); err != nil {
			return nil, err
		}
	}
	dfs := logFS{vfs.Or(opts.FS)}
	f, err := dfs.OpenAppend(path)
	if err != nil {
		if errors.Is(err, ErrLocked) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, path)
		}
		if errors.Is(err, ErrNotRegular) {
			return nil, err
		}
		return nil, &IOError{Op: "open", Path: path, Err: err}
	}
	// A file that is not a log is refused before anything beside it is
	// touched, and closed unchanged.
	if _, err := segment.ReadTail(f, path, true); err != nil {
		f.Close()
		return nil, err
	}
	// Finish a rotation a crash interrupted (rotate.go); f may change.
	if f, err = reconcile(dfs, path, f); err != nil {
		f.Close()
		return nil, err
	}
	j := &Journal{log: &log{
		path: path,
		f:    f,
		dur:  opts.Durability,
		key:  opts.Key,
		pub:  rootPub,
		now:  opts.Now,
		tap:  opts.Tap,
	}}
	j.tapSync = opts.TapSync
	j.tapLines = opts.TapLines
	hex.Encode(j.sid[:], opts.SID[:])
	j.cond.L = &j.mu
	live, err := segment.ReadTail(f, path, true)
	if err != nil {
		f.Close()
		return nil, err
	}
	tail := live
	if !tail.Intact {
		// A new or rotated live file continues the last sealed segment.
		if tail, err = sealedTail(dfs, path); err != nil {
			f.Close()
			return nil, err
		}
	}
	if tail.Intact {
		j.prev, j.nextSeq = tail.Hash, tail.Seq+1
		j.head = record.Head{Seq: tail.Seq, Hash: tail.Hash}
	}
	j.written, j.synced = j.nextSeq, j.nextSeq
	j.calls.qFirst, j.calls.tFirst, j.calls.gFirst = j.nextSeq, j.nextSeq, j.nextSeq
	if j.sign, j.session, err = newSession(opts, j.nextSeq, j.prev); err != nil {
		f.Close()
		return nil, err
	}
	j.attested = j.nextSeq
	if err := j.startCompanions(path, opts, dfs); err != nil {
		f.Close()
		return nil, err
	}
	if live.TornBytes > 0 {
		if !live.TornEnded {
			j.lead = []byte{'\n'}
		}
		j.Append(&record.Recovery{TornBytes: int(live.TornBytes), TornDigest: live.TornDigest})
	}
	j.att = newAttester(j.sign, opts.attestHook)
	if j.dur.Level >= Reply {
		j.lingerer = newLingerer()
		j.f.preZero(preZeroChunkFor(opts.MaxSize))
	}
	if j.dur.Level == Interval {
		j.stop, j.done = make(chan struct{}), make(chan struct{})
		go j.syncEvery(j.dur.Every)
	}
	return j, nil
}

// startCompanions starts what runs beside the writer, as opts asks: the
// rotator, the checkpointer (after rebuilding the tree and checking the
// log against its last checkpoint) and the head writer. If one fails, those
// already started are stopped, in reverse, and the error returned; the
// caller closes the file.
func (j *Journal) startCompanions(path string, opts Options, dfs logFS) (err error) {
	defer func() {
		if err != nil {
			if j.cps != nil {
				j.cps.abort()
			}
			if j.rot != nil {
				j.rot.close()
			}
		}
	}()
	if opts.MaxSize > 0 || opts.Compress {
		first, ok := fileFirstSeq(j.f)
		if !ok {
			first = j.nextSeq
		}
		if j.rot, err = newRotator(j, opts, dfs, j.f, first); err != nil {
			return err
		}
	}
	if opts.Checkpoint.File != "" {
		last, err := lastCheckpoint(dfs, opts.Checkpoint.File, j.pub)
		if err != nil {
			return err
		}
		if j.tree, j.origin, err = rebuildTree(dfs, path, j.nextSeq, last); err != nil {
			return err
		}
		if j.cps, err = newCheckpointer(j, opts.Checkpoint, dfs, opts.Logf); err != nil {
			return err
		}
	}
	if opts.HeadFile != "" {
		if j.heads, err = newHeadWriter(j, opts, dfs); err != nil {
			return err
		}
	}
	return nil
}

// sealedTail returns the tail of the log's last sealed segment, for a live
// file that holds no intact line yet (tail.intact is false if there is no
// segment either). Its seq must be the one its name says.
func sealedTail(fsys logFS, path string) (segment.Tail, error) {
	entries, err := segment.Siblings(fsys, path)
	if err != nil {
		return segment.Tail{}, &IOError{Op: "readdir", Path: path, Err: err}
	}
	e, ok := lastSealed(entries)
	if !ok {
		return segment.Tail{}, nil
	}
	t, err := segmentTail(fsys, e.Path, e.Seg.Compressed)
	if err != nil {
		return t, err
	}
	if !t.Intact || t.Seq != e.Seg.Last {
		return t, fmt.Errorf("%w: %s: its last record is not seq %d, as its name says; the chain cannot be continued", ErrNotLog, e.Path, e.Seg.Last)
	}
	return t, nil
}

// Session returns another handle on j's log whose records carry sid: how
// several sessions (aegis wrap --listen runs one per client) share one log,
// each record naming its session as package record's format says. The
// handles share everything else — the chain, the group commit, the sticky
// error — and are as safe for concurrent use as j. Close closes the log for
// every handle: call it once, when no session appends any more.
func (j *Journal) Session(sid [16]byte) *Journal {
	s := &Journal{log: j.log}
	hex.Encode(s.sid[:], sid[:])
	return s
}

// PublicKey returns the public half of the root key.
func (j *Journal) PublicKey() ed25519.PublicKey { return j.pub }

// Durability returns the journal's level.
func (j *Journal) Durability() Durability { return j.dur }

// Append queues a record and returns its seq. It does no I/O: call Wait to
// have it written and, as the level requires, synced. A SessionStart with a
// nil Key gets the session key's public half and its certificate. Append copies what it needs; b may
// be reused when it returns. A record too long for a line (MaxLine) is
// refused with an error matching ErrRecord, and nothing is queued: the
// journal goes on (CheckFields).
func (j *Journal) Append(b record.Body) (uint64, error) {
	return j.AppendHint(b, Hint{})
}

// AppendHint is Append with what the appender knows of the record's place
// in a call, which lets the group commit wait for the records it makes
// likely (linger.go). A wrong hint costs latency, never durability.
func (j *Journal) AppendHint(b record.Body, h Hint) (uint64, error) {
	mark(markAppend)
	if s, ok := b.(*record.SessionStart); ok && s.Key == nil {
		s.Key, s.Cert = j.session.pub, j.session.cert
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		return 0, j.err
	}
	if j.closed {
		return 0, ErrClosed
	}
	k, start := b.Kind(), len(j.q.fields)
	j.q.fields = b.AppendFields(j.q.fields)
	if err := record.CheckFields(k, len(j.q.fields)-start); err != nil {
		j.q.fields = j.q.fields[:start]
		return 0, err
	}
	seq := j.nextSeq
	j.nextSeq++
	j.q.recs = append(j.q.recs, queued{seq: seq, ts: j.now(), kind: k, sid: &j.sid, end: len(j.q.fields)})
	j.calls.appended(h)
	if j.lingering {
		j.lingerer.wake()
	}
	return seq, nil
}

// Wait blocks until the record seq is as durable as the level requires
// before the frame it describes crosses b, and returns nil; or returns the
// journal's first I/O error, after which nothing more is ever written.
// Waiting for a record waits for every record before it too.
func (j *Journal) Wait(seq uint64, b Barrier) error {
	mark(markWait)
	sync := j.dur.needsSync(b)
	j.mu.Lock()
	defer j.mu.Unlock()
	if seq >= j.nextSeq {
		return fmt.Errorf("journal: Wait(%d): not appended", seq)
	}
	for {
		if j.err != nil {
			return j.err
		}
		if seq < j.synced || (!sync && seq < j.written) {
			mark(markReturn)
			return nil
		}
		if !j.flushing {
			j.flushing = true
			if sync {
				j.linger()
			}
			j.flush(sync)
			continue
		}
		j.cond.Wait()
	}
}

// flush writes every queued record as one group and, if sync, fdatasyncs.
// Called with mu held and no other flush in progress (the caller may have
// set flushing already, to linger first); returns with mu held.
//
// Rules of the group commit:
//   - only the leader (flushing == true) touches the file, lead, prev, head
//     and out; it drops mu for the I/O so that appenders queue meanwhile;
//   - the leader takes the whole queue: one write covers every record
//     appended before it started, and the sync after it covers them all;
//   - the leader signs no group on its way (but for a session_end, a
//     record after record.MaxUnattested unattested bytes, and the last
//     record Close writes): the attester signs the group's last line
//     while it is written and synced, and a later group carries the
//     signature (attest.go);
//   - on error nothing is written or synced again; every waiter wakes and
//     sees the error.
func (j *Journal) flush(sync bool) {
	j.flushing = true
	q := j.q
	j.q, j.spare = j.spare, queue{}
	target := j.written + uint64(len(q.recs))
	needSync := sync && j.synced < target
	outcomes := j.calls.taken(j.nextSeq)
	final := j.closed
	j.mu.Unlock()
	mark(markLead)

	var err error
	var n int
	op := "write"
	if len(q.recs) > 0 || len(j.lead) > 0 {
		out := j.encode(&q, needSync, final)
		mark(markEncoded)
		n, err = j.f.Write(out)
		mark(markWritten)
		if err == nil && n < len(out) {
			err = io.ErrShortWrite
		}
	}
	if err == nil && needSync {
		op = "fdatasync"
		t := time.Now()
		err = j.f.Sync()
		mark(markSynced)
		d := time.Since(t)
		if j.syncCost == 0 {
			j.syncCost = d
		} else {
			j.syncCost += (d - j.syncCost) / 8
		}
		if j.tapSync != nil && err == nil {
			j.tapSync(d)
		}
	}
	if err == nil && j.tap != nil && n > 0 {
		j.tap(j.out[:n])
	}
	if err == nil && j.tapLines != nil && n > 0 {
		j.tapLines(j.out[:n], j.digests)
	}
	if err == nil && j.rot != nil && n > 0 {
		// Rotation: between two groups the leader may swap in a new live
		// file (one rename; rotate.go). It never waits for the sealer.
		// After a write, the file is all synced if and only if we synced.
		op = "rotate"
		err = j.rot.afterWrite(n, j.head.Seq, needSync)
	}

	j.mu.Lock()
	mark(markRelocked)
	if err != nil {
		if j.err == nil {
			var ioe *IOError
			if !errors.As(err, &ioe) {
				err = &IOError{Op: op, Path: j.path, Err: err}
			}
			j.err = err
		}
	} else {
		j.written = target
		if j.cps != nil {
			j.cps.written(j.written, j.cpSince)
		}
		if needSync {
			j.synced = target
			j.calls.synced(outcomes)
		}
	}
	q.reset()
	j.spare = q
	j.flushing = false
	j.cond.Broadcast()
}

// encode turns the queued records into lines, chaining them. The first
// carries the signature last asked of the attester if it is due (a
// synced group's, or one asked attestDelay or more before the group's
// last ts), waiting for it if it is not made yet; a session_end, a record
// after record.MaxUnattested unattested bytes and, if final, the last
// record are signed themselves. Then, if no signature covers the group's
// last line, it asks the attester to sign it: if synced, or if no
// signature is asked for. Only the leader calls it.
func (j *Journal) encode(q *queue, synced, final bool) []byte {
	out := append(j.out[:0], j.lead...)
	j.lead = nil
	if j.tapLines != nil {
		j.digests = j.digests[:0]
	}
	start := 0
	n := len(q.recs)
	carry := false
	if n > 0 && j.askedOK && (j.askedUrgent || q.recs[n-1].ts.Sub(j.askedAt) >= attestDelay) {
		j.askedOK = false
		carry = j.asked.seq >= j.attested
	}
	for i, r := range q.recs {
		line := len(out)
		out = record.AppendCommon(out, r.seq, r.ts, r.sid, r.kind, j.prev)
		out = append(out, q.fields[start:r.end]...)
		start = r.end
		if i == 0 && carry {
			sig := j.att.wait(j.asked.seq)
			mark(markCarried)
			out = record.AppendAtt(out, j.asked.seq, sig[:])
			j.attested, j.coveredEnd = j.asked.seq+1, j.asked.end
		}
		// The last record Close writes is signed, but for a recovery:
		// its session's key is named only by the session_start after it.
		signed := r.kind == record.KindSessionEnd || final && i == n-1 && r.kind != record.KindRecovery ||
			j.lineEnd-j.coveredEnd >= record.MaxUnattested
		if signed {
			sig := j.sign.Sign(out[line:])
			out = record.AppendSig(out, sig[:])
		} else {
			out = append(out, '}')
		}
		j.prev = sha256.Sum256(out[line:])
		if j.tapLines != nil {
			j.digests = append(j.digests, j.prev)
		}
		if j.tree != nil {
			if r.seq == 0 {
				j.origin = tlog.Origin(out[line:])
			}
			j.tree.AppendLine(out[line:])
		}
		j.head = record.Head{Seq: r.seq, Hash: j.prev}
		j.headSID, j.headKind = r.sid, r.kind
		out = append(out, '\n')
		j.lineEnd += uint64(len(out) - line)
		if signed {
			j.attested, j.coveredEnd = r.seq+1, j.lineEnd
			if j.askedOK && j.asked.seq < j.attested {
				j.askedOK = false // covered: never carried
			}
		}
	}
	if n > 0 && j.attested <= j.head.Seq && (synced || !j.askedOK) {
		j.asked = attestLine{seq: j.head.Seq, hash: j.prev, end: j.lineEnd}
		j.askedOK, j.askedAt, j.askedUrgent = true, q.recs[n-1].ts, synced
		mark(markAsk)
		j.att.ask(j.asked)
		mark(markAsked)
	}
	j.out = out
	return out
}

// Head returns the last line written: what to keep elsewhere so that a cut
// tail can be detected (verify --head). ok is false for an empty log.
func (j *Journal) Head() (h record.Head, ok bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for j.flushing {
		j.cond.Wait()
	}
	return j.head, j.written > 0
}

// Err returns the journal's sticky I/O error, or nil.
func (j *Journal) Err() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.err
}

// Close writes what is queued, syncs it (at every level but None), and
// closes the file. It leaves every line it wrote attested: the last
// record it writes is signed, and if it has none to write while the last
// line written is unattested (its group was written, and no record after
// it carries its signature), it writes a close record (record.Close),
// signed, in that line's session. It returns the journal's first error,
// if any. Append fails with ErrClosed afterwards.
func (j *Journal) Close() error {
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return j.Err()
	}
	j.closed = true
	for j.flushing {
		j.cond.Wait()
	}
	if j.err == nil && (j.written < j.nextSeq || (j.dur.Level > None && j.synced < j.nextSeq)) {
		j.flush(j.dur.Level > None)
	}
	// A recovery's session has not begun: nothing to close in it.
	if j.err == nil && j.attested < j.written && j.headKind != record.KindRecovery {
		seq := j.nextSeq
		j.nextSeq++
		j.q.recs = append(j.q.recs, queued{seq: seq, ts: j.now(), kind: record.KindClose, sid: j.headSID, end: len(j.q.fields)})
		j.flush(j.dur.Level > None)
	}
	j.mu.Unlock()
	if j.stop != nil {
		close(j.stop)
		<-j.done
	}
	if j.lingerer != nil {
		j.lingerer.close()
	}
	j.att.close()
	if j.heads != nil {
		if err := j.heads.close(); err != nil {
			j.fail(err)
		}
	}
	if j.cps != nil {
		if err := j.cps.close(); err != nil {
			j.fail(err)
		}
	}
	if j.rot != nil {
		j.rot.close()
	}
	dumpMarks()
	err := j.Err()
	if cerr := j.f.Close(); cerr != nil && err == nil {
		err = &IOError{Op: "close", Path: j.path, Err: cerr}
	}
	return err
}

// fail makes err the journal's sticky error, unless it has one: how the
// background goroutines (sealer, head writer) fail the journal closed.
func (j *Journal) fail(err error) {
	j.mu.Lock()
	if j.err == nil {
		j.err = err
	}
	j.cond.Broadcast()
	j.mu.Unlock()
}

// durableHead writes and syncs everything appended so far and returns the
// head: a head that no power loss can take back.
func (j *Journal) durableHead() (record.Head, bool, error) {
	j.mu.Lock()
	for j.flushing {
		j.cond.Wait()
	}
	if j.err == nil && (j.written < j.nextSeq || j.synced < j.written) {
		j.flush(true)
	}
	h, ok, err := j.head, j.written > 0, j.err
	j.mu.Unlock()
	if err == nil && j.rot != nil {
		j.rot.waitSynced() // the old file of a swap, at none
	}
	return h, ok, err
}

// syncEvery is the interval level's background syncer.
func (j *Journal) syncEvery(d time.Duration) {
	defer close(j.done)
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-j.stop:
			return
		case <-t.C:
			j.mu.Lock()
			if !j.flushing && !j.closed && j.err == nil && j.synced < j.nextSeq {
				j.flush(true)
			}
			j.mu.Unlock()
		}
	}
}
