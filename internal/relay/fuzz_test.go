package relay_test

import (
	"bytes"
	"cmp"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/frame"
	"github.com/aegisrelay/aegis/internal/relay"
	"github.com/aegisrelay/aegis/internal/vfs"
	"github.com/aegisrelay/aegis/journal"
	"github.com/aegisrelay/aegis/journal/record"
)

// FuzzRelay runs the relay in process over real pipes, Upstream over the
// client stream up, then Downstream over the child stream down, each written
// into its pipe in pieces whose sizes come from splits. It checks, against a
// reference that reads each stream as whole lines with a fresh Classifier
// per line and keeps its own table of calls in flight:
//
//   - byte identity: each pump delivers its input exactly, up to the first
//     line longer than the frame limit (then relay.ErrFrameTooLarge, and
//     nothing of that line);
//   - the journal holds, in order and nothing else: per client line, an
//     anomaly if the line is not exactly one JSON value (or is an oversized
//     batch), then one intent per tools/call it carries with the line's
//     digest; an unanswered outcome for each call evicted from a full
//     pending table; one outcome per response that answers a call in
//     flight, oldest call first; at End, one unanswered outcome per call
//     still in flight;
//   - no line on which the Classifier sees no anomaly carries fewer intents
//     than encoding/json finds tools/calls in it, reading keys exactly
//     (JSON.parse, Python) or case-insensitively (Go structs);
//   - Counts agrees with the records.
//
// maxFrame 0 is the default limit; maxPending 0 the default table size.
func FuzzRelay(f *testing.F) {
	fj := openFuzzJournal(f, "FuzzRelay")
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`+"\n"),
		[]byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`+"\n"), []byte{3, 200, 7}, uint16(0), uint8(0))
	f.Add([]byte("[{\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"a\"}},{\"id\":2,\"method\":\"tools/call\"}]\n{\"id\":3,\n\"method\":\"tools/call\"}\n\n"),
		[]byte("{\"id\":2,\"error\":{}}\n{\"id\":1.0,\"result\":{\"isError\":true}}"), []byte{0}, uint16(0), uint8(1))
	f.Add([]byte("{\"id\":1,\"method\":\"tools/call\"}\n"+strings.Repeat("x", 40)+"\n{\"id\":2,\"method\":\"tools/call\"}\n"),
		[]byte("{\"id\":1,\"result\":{}}\n"), []byte{}, uint16(40), uint8(0))
	call := func(id string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"a"}}`
	}
	// Calls that readers splitting at CR, stream decoders and recursive
	// batch handlers find, and answers only some clients take.
	f.Add([]byte("{\"x\":\r"+call("1")+"\r}\n[["+call("2")+"]]\n"+call("3")+call("4")+"\n"+call("5")+"\n"+call("6")+"\n"),
		[]byte("{\"x\":\r{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\r}\n"+`{"id":"2","result":{}}`+"\n"+`{"id":3.5,"result":{}}`+"\n"+
			`{"id":9,"id":4,"result":{}}`+"\n"+`{"id":5,"method":"x","result":{}}`+"\n"+`{"id":" 6 ","error":{}}`+"\n"+`{"id":6,"result":{}}`+"\n"),
		[]byte{5, 90, 200}, uint16(0), uint8(0))
	// The revision, cancellations, rounds and tasks: a session settled
	// on 2026-07-28 whose server sends a request, a call cancelled and
	// answered late, answers input_required, task (both revisions, one
	// id claimed twice) and other, a task notification.
	f.Add([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`+"\n"+call("1")+"\n"+call("2")+"\n"+call("3")+"\n"+call("4")+"\n"+call("5")+"\n"+
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`+"\n"+
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"a","requestState":"s","inputResponses":{"k":{"action":"accept"}},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`+"\n"),
		[]byte(`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2026-07-28"}}`+"\n"+`{"jsonrpc":"2.0","id":"e","method":"elicitation/create"}`+"\n"+
			`{"jsonrpc":"2.0","id":1,"result":{}}`+"\n"+`{"jsonrpc":"2.0","id":2,"result":{"resultType":"input_required","inputRequests":{"k":{"method":"x"}},"requestState":"s"}}`+"\n"+
			`{"jsonrpc":"2.0","id":3,"result":{"resultType":"task","taskId":"t"}}`+"\n"+`{"jsonrpc":"2.0","id":4,"result":{"task":{"taskId":"t"}}}`+"\n"+
			`{"jsonrpc":"2.0","id":5,"result":{"resultType":"later"}}`+"\n"+`{"jsonrpc":"2.0","method":"notifications/tasks","params":{"taskId":"t","status":"input_required","inputRequests":{"q":{}}}}`+"\n"),
		[]byte{9, 250}, uint16(0), uint8(0))
	f.Fuzz(func(t *testing.T, up, down, splits []byte, maxFrame uint16, maxPending uint8) {
		up, down = up[:min(len(up), maxStream)], down[:min(len(down), maxStream)]
		fj.check(t, up, down, splits, int(maxFrame), int(maxPending))
	})
}

const (
	// maxStream bounds each direction, so that one exec stays in the
	// milliseconds.
	maxStream = 64 << 10
	// maxWrites bounds the writes into a pipe: after that many, the rest
	// goes in one write (a 64 KiB stream in 1-byte writes is slow to no
	// purpose once the reads have been shaken).
	maxWrites = 1024
)

// fuzzJournal is the one journal of a fuzz process, at durability none,
// with a deterministic key, session id and clock, writing into memory
// (memFile): opening a journal, with its file, lock and directory scans,
// costs more than an exec, so every exec of the process appends to this
// one, and reads back only what it appended.
type fuzzJournal struct {
	j    *journal.Journal
	file *memFile
	base uint64 // seq of the next record: one past the last marker
	dec  record.Decoder
}

var fuzzEpoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// openFuzzJournal opens the fuzz process's journal and writes its
// session_start. name is the fuzz target's, for that record.
func openFuzzJournal(f *testing.F, name string) *fuzzJournal {
	seed := sha256.Sum256([]byte("aegis " + name))
	file := &memFile{}
	j, err := journal.Open("/fuzz/audit.jsonl", journal.Options{
		Durability: journal.Durability{Level: journal.None},
		Key:        ed25519.NewKeyFromSeed(seed[:]),
		FS:         memFS{file},
		Now:        func() time.Time { return fuzzEpoch },
		SID:        [16]byte{'f', 'u', 'z', 'z'},
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { j.Close() })
	seq, err := j.Append(&record.SessionStart{Aegis: "fuzz", Argv: []string{name}, Durability: "none", PolicySet: record.PassThroughSet})
	if err == nil {
		err = j.Wait(seq, journal.BeforeRequest)
	}
	if err != nil {
		f.Fatal(err)
	}
	file.take() // the session_start
	return &fuzzJournal{j: j, file: file, base: seq + 1}
}

// records appends a marker, waits for it (so that every record before it
// is in the file) and returns the records written since the last marker.
func (fj *fuzzJournal) records() ([]*record.Record, error) {
	seq, err := fj.j.Append(&record.PolicyReload{Set: "fuzz", Status: "marker"})
	if err != nil {
		return nil, err
	}
	if err := fj.j.Wait(seq, journal.BeforeResponse); err != nil {
		return nil, err
	}
	b := fj.file.take()
	var recs []*record.Record
	for len(b) > 0 {
		line, rest, ok := bytes.Cut(b, []byte{'\n'})
		if !ok {
			return nil, fmt.Errorf("audit file ends in a torn line %.80q", line)
		}
		b = rest
		r, err := fj.dec.Decode(line)
		if err != nil {
			return nil, fmt.Errorf("audit line %.200q: %v", line, err)
		}
		r.Signed = nil // aliases line
		recs = append(recs, r)
	}
	if n := len(recs); n == 0 || recs[n-1].Seq != seq || recs[n-1].Kind != record.KindPolicyReload {
		return nil, fmt.Errorf("the marker (seq %d) is not the last record written", seq)
	}
	if recs[0].Seq != fj.base {
		return nil, fmt.Errorf("first record written has seq %d; want %d", recs[0].Seq, fj.base)
	}
	fj.base = seq + 1
	return recs[:len(recs)-1], nil
}

// memFile is an audit file in memory that forgets what has been read
// back (take), so that a fuzz process of days holds one exec's records,
// not all of them. The journal reads its file only when it opens it
// (empty then); a read of forgotten bytes fails, so that a journal that
// read more would not pass unnoticed.
type memFile struct {
	mu   sync.Mutex
	buf  []byte // written and not yet taken
	size int64  // every byte ever written
}

// WriteAt appends: the journal writes at the content end, and nowhere
// else at durability none.
func (m *memFile) WriteAt(p []byte, off int64) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if off != m.size {
		return 0, fmt.Errorf("memFile: write at %d, not at the end (%d)", off, m.size)
	}
	m.buf = append(m.buf, p...)
	m.size += int64(len(p))
	return len(p), nil
}

func (m *memFile) ReadAt(p []byte, off int64) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	kept := m.size - int64(len(m.buf))
	if off < kept {
		return 0, fmt.Errorf("memFile: read at %d of bytes already taken (below %d)", off, kept)
	}
	if off >= m.size {
		return 0, io.EOF
	}
	n := copy(p, m.buf[off-kept:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (m *memFile) Stat() (fs.FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return memInfo(m.size), nil
}

func (m *memFile) Read([]byte) (int, error)         { return 0, errMemFS }
func (m *memFile) Zero(int64, int64) (int64, error) { return 0, errMemFS }
func (m *memFile) Truncate(int64) error             { return errMemFS }
func (m *memFile) Sync() error                      { return nil }
func (m *memFile) Close() error                     { return nil }

// memInfo is a memFile's size as an fs.FileInfo.
type memInfo int64

func (i memInfo) Name() string       { return "audit.jsonl" }
func (i memInfo) Size() int64        { return int64(i) }
func (i memInfo) Mode() fs.FileMode  { return 0o600 }
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return false }
func (i memInfo) Sys() any           { return nil }

// take returns the bytes written since the last take and forgets them.
// The slice stays valid: the next write appends to a new array.
func (m *memFile) take() []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.buf
	m.buf = nil
	return b
}

// memFS holds one memFile in a folder of its own: the journal's FS for a
// log that is not rotated, compressed or given a head file, which need
// nothing more than OpenAppend and an empty directory listing.
type memFS struct{ f *memFile }

var errMemFS = errors.New("memFS: not a rotating journal's file system")

func (m memFS) OpenLocked(_ string, mode vfs.OpenMode) (vfs.File, bool, error) {
	if mode != vfs.OpenOrCreate {
		return nil, false, errMemFS
	}
	return m.f, false, nil
}
func (m memFS) ReadDir(string) ([]string, error)            { return nil, nil }
func (m memFS) Open(string) (vfs.File, error)               { return nil, errMemFS }
func (m memFS) Create(string) (vfs.File, error)             { return nil, errMemFS }
func (m memFS) Rename(string, string, vfs.RenameMode) error { return errMemFS }
func (m memFS) Remove(string) error                         { return errMemFS }
func (m memFS) Stat(string) (fs.FileInfo, error)            { return nil, errMemFS }
func (m memFS) SyncDir(string) error                        { return errMemFS }

func (fj *fuzzJournal) check(t *testing.T, up, down, splits []byte, maxFrame, maxPending int) {
	fixed := fuzzEpoch.Add(time.Hour)
	r := relay.New(relay.Config{Journal: fj.j, MaxFrame: maxFrame, MaxPending: maxPending,
		Clock: func() time.Time { return fixed }})
	want := model(up, down, maxFrame, maxPending, fj.base)

	gotUp, upErr := pump(t, r.Upstream, up, splits)
	gotDown, downErr := pump(t, r.Downstream, down, splits)
	counts, endErr := r.End(record.StatusUnanswered, "fuzz: session ended")
	recs, recErr := fj.records()

	if !bytes.Equal(gotUp, want.up) {
		t.Errorf("Upstream delivered %d bytes %.200q; want %d bytes %.200q", len(gotUp), gotUp, len(want.up), want.up)
	}
	if !errors.Is(upErr, want.upErr) || (upErr == nil) != (want.upErr == nil) {
		t.Errorf("Upstream = %v; want %v", upErr, want.upErr)
	}
	if !bytes.Equal(gotDown, want.down) {
		t.Errorf("Downstream delivered %d bytes %.200q; want %d bytes %.200q", len(gotDown), gotDown, len(want.down), want.down)
	}
	if !errors.Is(downErr, want.downErr) || (downErr == nil) != (want.downErr == nil) {
		t.Errorf("Downstream = %v; want %v", downErr, want.downErr)
	}
	if endErr != nil {
		t.Errorf("End = %v; want nil", endErr)
	}
	if recErr != nil {
		t.Fatalf("reading the journal back: %v", recErr)
	}
	for i := 0; i < max(len(recs), len(want.recs)); i++ {
		var got, w string
		if i < len(recs) {
			got = render(recs[i].Kind, recs[i].Body)
			if recs[i].Seq != want.base+uint64(i) {
				t.Fatalf("record %d has seq %d; want %d", i, recs[i].Seq, want.base+uint64(i))
			}
		}
		if i < len(want.recs) {
			w = render(want.recs[i].Kind(), want.recs[i])
		}
		if got != w {
			t.Fatalf("record %d of %d = %s\nwant %d records, record %d = %s", i, len(recs), got, len(want.recs), i, w)
		}
	}
	if counts != want.counts {
		t.Errorf("End counts = %+v; want %+v", counts, want.counts)
	}
	for _, l := range want.short {
		t.Errorf("client line %.200q: %s", l.line, l.why)
	}
	recorded := map[record.Digest]bool{}
	for _, r := range recs {
		switch b := r.Body.(type) {
		case *record.Outcome:
			recorded[b.ResponseDigest] = b.HasResponse
		case *record.Anomaly:
			recorded[b.Digest] = true
		}
	}
	for _, a := range want.answered {
		if !recorded[a.digest] {
			t.Errorf("a child's line (sha256 %x) answers a call in flight for %s, and is in no record", a.digest, a.client)
		}
	}
}

func render(k record.Kind, b record.Body) string {
	return k.String() + " " + string(b.AppendFields(nil))
}

// pump runs fn (a Relay pump) from one pipe to another, writing in into the
// first in pieces sized by splits, and returns what came out of the second.
func pump(t *testing.T, fn func(io.Reader, io.Writer) error, in, splits []byte) ([]byte, error) {
	srcR, srcW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	dstR, dstW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		defer srcW.Close()
		rest := in
		for k := 0; len(rest) > 0; k++ {
			n := len(rest)
			if len(splits) > 0 && k < maxWrites {
				n = min(n, splitSize(splits[k%len(splits)]))
			}
			// After an early return (frame too large) the read end is
			// closed and this fails with EPIPE.
			if _, err := srcW.Write(rest[:n]); err != nil {
				return
			}
			rest = rest[n:]
		}
	}()
	read := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(dstR)
		read <- b
	}()
	err = fn(srcR, dstW)
	dstW.Close()
	srcR.Close()
	<-wrote
	out := <-read
	dstR.Close()
	return out, err
}

// splitSize maps a byte to a write size: 1..240 bytes, or 4..64 KiB.
func splitSize(b byte) int {
	if b < 0xf0 {
		return int(b) + 1
	}
	return int(b-0xef) << 12
}

// want is what the reference expects of one exec.
type want struct {
	up, down       []byte
	upErr, downErr error
	base           uint64 // seq of the first record
	recs           []record.Body
	counts         record.Counts
	short          []shortLine // lines with fewer intents than encoding/json finds calls
	answered       []answeredLine
}

// answeredLine is a child's line that a client takes as the answer to a
// call in flight: the record must hold its digest.
type answeredLine struct {
	digest record.Digest
	client string
}

type shortLine struct {
	line []byte
	why  string
}

// refCall is a call in the reference's table of calls in flight: a
// tools/call, or a request followed without an intent (init).
type refCall struct {
	key       string
	call      record.Call
	seq       uint64
	init      bool // an initialize
	cancelled bool // in late: a call the client cancelled
}

// refTask is a live task of the reference.
type refTask struct {
	id      string
	intent  uint64
	v2025   bool
	waiting bool
	seen    []string
}

// model is the reference: it reads each stream as whole lines (no reads,
// no chunks), classifies each line with a fresh Classifier, and records
// as the package documentation says.
func model(up, down []byte, maxFrame, maxPending int, base uint64) *want {
	if maxFrame <= 0 {
		maxFrame = relay.DefaultMaxFrame
	}
	if maxPending <= 0 {
		maxPending = relay.DefaultMaxPending
	}
	w := &want{base: base}
	var inflight []*refCall // oldest first
	add := func(b record.Body) uint64 {
		w.recs = append(w.recs, b)
		return base + uint64(len(w.recs)-1)
	}
	unanswered := func(c *refCall, reason string) {
		add(&record.Outcome{Call: c.call, Intent: c.seq, Status: record.StatusUnanswered, Reason: reason})
		w.counts.Outcomes++
		w.counts.Unanswered++
	}

	var (
		late      []*refCall // calls the client cancelled, oldest first
		tasks     []*refTask // live tasks, oldest first
		stateless bool       // the session's revision has servers send no requests
		settled   bool
	)
	enter := func(c *refCall) {
		if len(inflight) == maxPending {
			old := inflight[0]
			inflight = inflight[1:]
			if !old.init {
				unanswered(old, "evicted: more calls in flight than the pending table holds")
			}
		}
		inflight = append(inflight, c)
	}
	w.up, w.upErr = lines(up, maxFrame, func(line []byte) {
		w.counts.FramesIn++
		var f frame.Frame
		frame.NewClassifier().Classify(line, &f)
		anomaly := f.Anomaly != ""
		if anomaly {
			add(&record.Anomaly{Digest: digest(line), Bytes: len(line), Reason: f.Anomaly, Forwarded: true})
			w.counts.Anomalies++
		}
		defer func() {
			if anomaly || f.Kind != frame.Single && f.Kind != frame.Batch {
				return
			}
			// What the line says besides its calls (tasks are made only
			// by the child's answers, which come after every client line).
			for i := range f.Msgs {
				m := &f.Msgs[i]
				if m.Malformed != "" {
					continue
				}
				if m.HasRevision && m.Type == frame.Request && !settled {
					stateless = string(m.Revision) >= "2026-07-28"
				}
				switch {
				case m.Op == frame.OpInitialize && m.Type == frame.Request && m.ID.Key != nil:
					enter(&refCall{key: string(m.ID.Key), init: true})
				case m.Op == frame.OpCancelled && m.Type == frame.Notification && m.HasCancelID && m.CancelID.Key != nil:
					at := -1
					for k, c := range inflight {
						if c.key == string(m.CancelID.Key) {
							at = k
							break
						}
					}
					if at < 0 || inflight[at].init {
						continue
					}
					c := inflight[at]
					inflight = append(inflight[:at:at], inflight[at+1:]...)
					if len(late) == maxPending {
						late = late[1:]
					}
					late = append(late, &refCall{key: c.key, call: c.call, seq: c.seq, cancelled: true})
					add(&record.Outcome{Call: c.call, Intent: c.seq, Status: record.StatusCancelled, Reason: relay.ReasonCancelled})
					w.counts.Outcomes++
				}
			}
		}()
		intents := 0
		for k, msgs := range [][]frame.Message{f.Msgs, f.Hidden} {
			for i := range msgs {
				m := &msgs[i]
				if !m.IsToolCall {
					continue
				}
				in := &record.Intent{Call: callOf(m), Tool: bytes.Clone(m.Tool), HasTool: m.HasTool,
					RequestDigest: digest(line), Malformed: m.Malformed}
				if k == 0 && f.Kind == frame.Batch {
					in.BatchIndex, in.BatchSize = i, len(f.Msgs)
				}
				if k == 1 && in.Malformed == "" {
					in.Malformed = f.Anomaly
				}
				if k == 0 {
					// No outcome has issued a state yet: a retry's state
					// is unknown.
					if m.HasRevision {
						in.Revision, in.HasRevision = record.BoundedOf(bytes.Clone(m.Revision)), true
					}
					if m.HasInputResponses {
						in.InputResponses = []record.InputResponse{}
						for _, r := range m.InputResponses {
							e := record.InputResponse{Key: record.BoundedOf(bytes.Clone(r.Key))}
							if a := string(r.Value); r.HasValue && (a == "accept" || a == "decline" || a == "cancel") {
								e.Action = a
							}
							in.InputResponses = append(in.InputResponses, e)
						}
						in.InputResponsesMore = m.InputResponsesN - len(m.InputResponses)
					}
					if m.HasRequestState && m.Malformed == "" && !anomaly {
						in.RequestState, in.HasRequestState = sha256.Sum256(m.RequestState), true
						in.Round = record.Round{By: record.RoundUnknownState}
					}
				}
				seq := add(in)
				intents++
				w.counts.Intents++
				if in.Call.Type == record.IDNull || m.Malformed != "" && m.ID.Type == frame.IDInvalid {
					continue // nothing can answer it
				}
				enter(&refCall{key: string(m.ID.Key), call: in.Call, seq: seq})
			}
		}
		if n := jsonToolCalls(line); intents < n {
			w.short = append(w.short, shortLine{bytes.Clone(line), fmt.Sprintf("%d intents; encoding/json reads %d tools/calls", intents, n)})
		}
	})
	find := func(key []byte) int {
		for k, c := range inflight {
			if c.key == string(key) {
				return k
			}
		}
		return -1
	}
	var kbuf []byte
	findLate := func(key []byte) int {
		for k, c := range late {
			if c.key == string(key) {
				return k
			}
		}
		return -1
	}
	findTask := func(id []byte) *refTask {
		for _, k := range tasks {
			if k.id == string(id) {
				return k
			}
		}
		return nil
	}
	endTask := func(k *refTask, via string, d *record.Digest, status string) {
		t := &record.Task{TaskID: record.BoundedOf([]byte(k.id)), Intent: k.intent, Event: record.TaskEnd, Via: via, Status: status}
		if d != nil {
			t.Digest, t.HasDigest = *d, true
		}
		add(t)
		tasks = slices.DeleteFunc(tasks, func(o *refTask) bool { return o == k })
	}
	inputs := func(m *frame.Message) []record.InputRequest {
		out := []record.InputRequest{}
		for _, r := range m.InputRequests {
			e := record.InputRequest{Key: record.BoundedOf(bytes.Clone(r.Key))}
			if r.HasValue {
				e.Method, e.HasMethod = record.BoundedOf(bytes.Clone(r.Value)), true
			}
			out = append(out, e)
		}
		return out
	}
	w.down, w.downErr = lines(down, maxFrame, func(line []byte) {
		w.counts.FramesOut++
		if len(inflight) == 0 && len(late) == 0 && len(tasks) == 0 {
			return
		}
		for _, c := range clientsAccepting(line, inflight) {
			w.answered = append(w.answered, answeredLine{digest(line), c})
		}
		var f frame.Frame
		frame.NewClassifier().Classify(line, &f)
		reason := ""
		cancelled := 0
		d := digest(line)
		for k, msgs := range [][]frame.Message{f.Msgs, f.Hidden} {
			for i := range msgs {
				m := &msgs[i]
				if !m.Answers {
					switch {
					case k == 0 && f.Anomaly == "" && m.Type == frame.Request:
						sr := &record.ServerRequest{Call: callOf(m), Method: record.BoundedOf(bytes.Clone(m.Method)), ResponseDigest: d, Calls: []uint64{}}
						var seqs []uint64
						for _, c := range inflight {
							if !c.init {
								seqs = append(seqs, c.seq)
							}
						}
						for _, k := range tasks {
							seqs = append(seqs, k.intent)
						}
						slices.Sort(seqs)
						for _, seq := range seqs {
							if len(sr.Calls) < record.MaxListEntries {
								sr.Calls = append(sr.Calls, seq)
							} else {
								sr.CallsMore++
							}
						}
						add(sr)
						if stateless && reason == "" {
							reason = relay.ReasonServerRequest
						}
					case k == 0 && (m.Op == frame.OpTasksNotify || m.Op == frame.OpTaskStatus) && m.Type == frame.Notification && len(tasks) > 0:
						if f.Anomaly != "" || m.Malformed != "" {
							if reason == "" {
								reason = cmp.Or(f.Anomaly, m.Malformed)
							}
							continue
						}
						t := findTask(m.TaskID)
						if !m.HasTaskID || !m.HasStatus || t == nil {
							continue
						}
						via := "notifications/tasks"
						if m.Op == frame.OpTaskStatus {
							via = "notifications/tasks/status"
						}
						switch string(m.Status) {
						case "completed":
							if t.v2025 {
								t.waiting = false
								continue
							}
							status := record.StatusOK
							if m.TaskHasError {
								status = record.StatusRPCError
							} else if m.TaskResultIsError {
								status = record.StatusToolError
							}
							endTask(t, via, &d, status)
						case "failed":
							endTask(t, via, &d, record.StatusFailed)
						case "cancelled":
							endTask(t, via, &d, record.StatusCancelled)
						case "input_required":
							fresh := false
							for _, r := range m.InputRequests {
								if !slices.Contains(t.seen, string(r.Key)) {
									fresh = true
									t.seen = append(t.seen, string(r.Key))
									if len(t.seen) > 32 {
										t.seen = t.seen[1:]
									}
								}
							}
							if t.waiting && !fresh {
								continue
							}
							t.waiting = true
							add(&record.Task{TaskID: record.BoundedOf([]byte(t.id)), Intent: t.intent, Event: record.TaskInputRequired, Via: via,
								Digest: d, HasDigest: true, InputRequests: inputs(m), InputRequestsMore: m.InputRequestsN - len(m.InputRequests)})
						default:
							t.waiting = false
						}
					}
					continue
				}
				clean := k == 0 && f.Anomaly == "" && m.Type == frame.Response && m.Malformed == ""
				if l := findLate(m.ID.Key); clean && l >= 0 && find(m.ID.Key) < 0 {
					late = append(late[:l:l], late[l+1:]...)
					cancelled++
					continue
				}
				at := find(m.ID.Key)
				if clean && at >= 0 {
					other := false
					kbuf = m.ID.LooseKeys(kbuf, func(key []byte) {
						if o := find(key); o >= 0 && o != at {
							other = true
						}
					})
					if other {
						if reason == "" {
							reason = relay.ReasonTwoCalls
						}
						continue
					}
					c := inflight[at]
					if c.init {
						inflight = append(inflight[:at:at], inflight[at+1:]...)
						if !m.IsError && m.HasProtocolVersion {
							add(&record.Protocol{Revision: record.BoundedOf(bytes.Clone(m.ProtocolVersion))})
							settled, stateless = true, string(m.ProtocolVersion) >= "2026-07-28"
						}
						continue
					}
					rt := string(m.ResultType)
					status := record.StatusOK
					switch {
					case m.IsError:
						status = record.StatusRPCError
					case m.HasResultType && rt == "input_required":
						status = record.StatusInputRequired
					case m.HasResultType && rt == "task", !m.HasResultType && m.HasResultTaskID && m.ResultTaskNested:
						status = record.StatusTask
					case m.HasResultType && rt != "complete":
						status = record.StatusOther
					case m.ToolError:
						status = record.StatusToolError
					}
					o := &record.Outcome{Call: c.call, Intent: c.seq, ResponseDigest: d, HasResponse: true, Status: status}
					var nt *refTask
					if status == record.StatusTask && m.HasResultTaskID {
						if findTask(m.ResultTaskID) != nil {
							if reason == "" {
								reason = relay.ReasonTaskClaimed
							}
							continue
						}
						nt = &refTask{id: string(m.ResultTaskID), intent: c.seq, v2025: !m.HasResultType}
						o.TaskID, o.HasTaskID = record.BoundedOf(bytes.Clone(m.ResultTaskID)), true
					}
					inflight = append(inflight[:at:at], inflight[at+1:]...)
					if m.HasResultType && !m.IsError {
						o.ResultType, o.HasResultType = record.BoundedOf(bytes.Clone(m.ResultType)), true
					}
					if status == record.StatusInputRequired {
						if m.HasInputRequests {
							o.InputRequests, o.InputRequestsMore = inputs(m), m.InputRequestsN-len(m.InputRequests)
						}
						if m.HasResultState {
							o.RequestState, o.HasRequestState = sha256.Sum256(m.ResultState), true
						}
					}
					add(o)
					w.counts.Outcomes++
					if nt != nil {
						if len(tasks) == maxPending {
							endTask(tasks[0], record.ViaEvicted, nil, record.StatusUnfinished)
						}
						tasks = append(tasks, nt)
					}
					continue
				}
				hit := false
				for _, id := range append([]frame.ID{m.ID}, m.AltIDs...) {
					hit = hit || id.Key != nil && (find(id.Key) >= 0 || findLate(id.Key) >= 0)
					kbuf = id.LooseKeys(kbuf, func(key []byte) { hit = hit || find(key) >= 0 || findLate(key) >= 0 })
				}
				if !hit || reason != "" {
					continue
				}
				switch {
				case f.Anomaly != "":
					reason = f.Anomaly
				case m.Malformed != "":
					reason = m.Malformed
				case m.Type != frame.Response:
					reason = relay.ReasonAnswerWithMethod
				default:
					reason = relay.ReasonLooseID
				}
			}
		}
		if cancelled > 0 && reason == "" {
			reason = relay.ReasonAnswerAfterCancel
		}
		if reason != "" {
			add(&record.Anomaly{Digest: digest(line), Response: true, Bytes: len(line), Reason: reason, Forwarded: true})
			w.counts.Anomalies++
		}
	})
	for _, c := range inflight {
		if !c.init {
			unanswered(c, "fuzz: session ended")
		}
	}
	for len(tasks) > 0 {
		endTask(tasks[0], record.ViaSessionEnd, nil, record.StatusUnfinished)
	}
	return w
}

// lines calls fn for each line of data up to the first one longer than
// max, and returns the bytes of the lines it called fn for, and
// relay.ErrFrameTooLarge if it stopped early.
func lines(data []byte, max int, fn func(line []byte)) ([]byte, error) {
	off := 0
	for rest := data; len(rest) > 0; {
		line, next := frame.NextLine(rest)
		if len(line) > max {
			return data[:off], relay.ErrFrameTooLarge
		}
		fn(line)
		off += len(line)
		rest = next
	}
	return data, nil
}

// digest is the SHA-256 of a line without its '\n'.
func digest(line []byte) record.Digest {
	return sha256.Sum256(bytes.TrimSuffix(line, []byte{'\n'}))
}

// callOf is the id as an intent records it: a number as written, a string
// decoded, anything else (absent, null, not an id) null.
func callOf(m *frame.Message) record.Call {
	switch {
	case !m.HasID:
	case m.ID.Type == frame.IDNumber:
		return record.Call{Type: record.IDNumber, Text: bytes.Clone(m.ID.Raw)}
	case m.ID.Type == frame.IDString:
		return record.Call{Type: record.IDString, Text: bytes.Clone(m.ID.Str)}
	}
	return record.Call{Type: record.IDNull}
}

// jsonToolCalls counts the messages of line that encoding/json reads as a
// tools/call, either with exact keys (a map: the last duplicate wins, as in
// JSON.parse) or as a Go struct does (keys matched case-insensitively).
func jsonToolCalls(line []byte) int {
	isCall := func(obj json.RawMessage) bool {
		var exact map[string]json.RawMessage
		if json.Unmarshal(obj, &exact) == nil {
			var m string
			if json.Unmarshal(exact["method"], &m) == nil && m == "tools/call" {
				return true
			}
		}
		var goStruct struct {
			Method string `json:"method"`
		}
		return json.Unmarshal(obj, &goStruct) == nil && goStruct.Method == "tools/call"
	}
	var batch []json.RawMessage
	if json.Unmarshal(line, &batch) == nil {
		n := 0
		for _, e := range batch {
			if isCall(e) {
				n++
			}
		}
		return n
	}
	if isCall(line) {
		return 1
	}
	return 0
}

// clientsAccepting names the clients that take line as the answer to a
// call in flight, read independently of package frame with
// encoding/json: a JSON.parse client splitting lines at '\n' only and
// matching Number(id) (the TypeScript SDK), one splitting at '\r' too
// (Node's readline, Python's text I/O), and the Go SDK, which reads values
// as a stream and truncates a number id to an int64.
func clientsAccepting(line []byte, inflight []*refCall) []string {
	var names []string
	type msg struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	// numbers are the values of the calls in flight with number ids;
	// strings those of the string ids.
	var numbers []float64
	strs := map[string]bool{}
	for _, c := range inflight {
		switch c.call.Type {
		case record.IDNumber:
			if f, err := strconv.ParseFloat(string(c.call.Text), 64); err == nil {
				numbers = append(numbers, f)
			}
		case record.IDString:
			strs[string(c.call.Text)] = true
		}
	}
	hasNumber := func(f float64) bool { return slices.Contains(numbers, f) }
	// jsAnswers: the value v answers a call for a client comparing
	// Number(id) (strings trimmed; decimal, 0x, 0o and 0b forms).
	jsAnswers := func(v any) bool {
		switch id := v.(type) {
		case float64:
			return id == math.Trunc(id) && hasNumber(id)
		case string:
			if strs[id] {
				return true
			}
			s := strings.TrimSpace(id)
			if f, err := strconv.ParseFloat(s, 64); err == nil && !strings.ContainsAny(s, "_xXpPiInN") {
				return hasNumber(f)
			}
			if n, err := strconv.ParseInt(s, 0, 64); err == nil && !strings.Contains(s, "_") && len(s) > 2 && s[0] == '0' {
				return hasNumber(float64(n))
			}
			return s == "" && hasNumber(0)
		}
		return false
	}
	objects := func(v json.RawMessage) []json.RawMessage {
		v = bytes.TrimSpace(v)
		if len(v) > 0 && v[0] == '[' {
			var elems []json.RawMessage
			json.Unmarshal(v, &elems)
			return elems
		}
		return []json.RawMessage{v}
	}
	answers := func(obj json.RawMessage, match func(any) bool) bool {
		var m msg
		if json.Unmarshal(obj, &m) != nil || m.ID == nil || m.Result == nil && m.Error == nil {
			return false
		}
		var id any
		return json.Unmarshal(m.ID, &id) == nil && match(id)
	}
	content := bytes.TrimSuffix(bytes.TrimSuffix(line, []byte{'\n'}), []byte{'\r'})
	if json.Valid(content) {
		for _, obj := range objects(content) {
			if answers(obj, jsAnswers) {
				names = append(names, "a JSON.parse client")
				break
			}
		}
	}
	for _, piece := range bytes.Split(content, []byte{'\r'}) {
		if !json.Valid(piece) {
			continue
		}
		for _, obj := range objects(piece) {
			if answers(obj, jsAnswers) {
				names = append(names, "a client splitting lines at CR")
				break
			}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	goAnswers := func(v any) bool {
		switch id := v.(type) {
		case float64:
			return math.Abs(id) < 1<<63 && hasNumber(float64(int64(id)))
		case string:
			return strs[id]
		}
		return false
	}
	for {
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			break
		}
		for _, obj := range objects(v) {
			if answers(obj, goAnswers) {
				names = append(names, "the Go SDK client")
			}
		}
	}
	return names
}
