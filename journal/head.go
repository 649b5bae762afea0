package journal

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/valyala/fastjson"
	"golang.org/x/sys/unix"
)

// DefaultHeadEvery is how often the head file is replaced while records are
// written (Options.HeadEvery).
const DefaultHeadEvery = time.Second

// SignedHead is the content of a head file: a head, when it was taken, and
// the key that signed it.
type SignedHead struct {
	Head
	TS  time.Time
	Key ed25519.PublicKey
}

// appendHeadLine appends the head file's one line, signed by key:
//
//	{"v":2,"kind":"head","seq":N,"hash":"sha256:<hex>","ts":"<TimeLayout>","key":"ed25519:<base64>","sig":"ed25519:<base64>"}\n
//
// The signature covers the bytes before `,"sig":`, as in a record. The kind
// "head" is not a record kind, so the line can never pass for a record.
func appendHeadLine(dst []byte, h Head, ts time.Time, key ed25519.PrivateKey) []byte {
	start := len(dst)
	dst = append(dst, `{"v":2,"kind":"head","seq":`...)
	dst = strconv.AppendUint(dst, h.Seq, 10)
	dst = appendDigestField(dst, "hash", h.Hash)
	dst = append(dst, `,"ts":"`...)
	dst = appendTime(dst, ts)
	dst = append(dst, `","key":"`...)
	dst = append(dst, FormatPublicKey(key.Public().(ed25519.PublicKey))...)
	dst = append(dst, '"')
	dst = appendSig(dst, ed25519.Sign(key, dst[start:]))
	return append(dst, '\n')
}

// ParseHead decodes and checks a head file's content: its form must be
// exactly what appendHeadLine writes and its signature must verify
// against the key it names. Pinning that key is the caller's business.
func ParseHead(data []byte) (SignedHead, error) {
	var sh SignedHead
	line := bytes.TrimSuffix(data, []byte("\n"))
	var p fastjson.Parser
	v, err := p.ParseBytes(line)
	if err != nil {
		return sh, recordError("head file: not JSON: %v", err)
	}
	o, err := v.Object()
	if err != nil {
		return sh, recordError("head file: not a JSON object")
	}
	g := getter{o: o}
	if k := g.str("kind"); g.err == nil && string(k) != "head" {
		return sh, recordError("head file: kind %q, want \"head\"", k)
	}
	sh.Seq = g.uint("seq")
	sh.Hash = g.digest("hash")
	if ts := g.str("ts"); g.err == nil {
		if sh.TS, err = time.Parse(TimeLayout, string(ts)); err != nil {
			g.fail("ts %q is not RFC 3339 UTC with nanoseconds", ts)
		}
	}
	if k := g.str("key"); g.err == nil {
		if sh.Key, err = ParsePublicKey(string(k)); err != nil {
			g.fail("key: %v", err)
		}
	}
	sig := g.key("sig", ed25519.SignatureSize)
	if g.err != nil {
		return sh, fmt.Errorf("head file: %w", g.err)
	}
	// Canonical form: re-encode the signed part and compare.
	want := []byte(`{"v":2,"kind":"head","seq":`)
	want = strconv.AppendUint(want, sh.Seq, 10)
	want = appendDigestField(want, "hash", sh.Hash)
	want = append(want, `,"ts":"`...)
	want = appendTime(want, sh.TS)
	want = append(want, `","key":"`...)
	want = append(want, FormatPublicKey(sh.Key)...)
	want = append(want, '"')
	signed := len(want)
	want = appendSig(want, sig)
	if !bytes.Equal(want, line) || len(data) != len(line)+1 {
		return sh, recordError("head file: not in canonical form")
	}
	if !ed25519.Verify(sh.Key, line[:signed], sig) {
		return sh, recordError("head file: signature does not verify")
	}
	return sh, nil
}

// MaxHeadFile bounds the head file ReadHead reads: its one line is about
// 260 bytes.
const MaxHeadFile = 4 << 10

// ReadHead reads and checks a head file (ParseHead). A path that is not a
// regular file (ErrNotRegular) or holds more than MaxHeadFile bytes
// (ErrTooLarge) is not read.
func ReadHead(path string) (SignedHead, error) {
	data, _, err := readWhole(path, "a head file", MaxHeadFile)
	if err != nil {
		return SignedHead{}, err
	}
	sh, err := ParseHead(data)
	if err != nil {
		return sh, fmt.Errorf("%s: %w", path, err)
	}
	return sh, nil
}

// headWriter keeps Options.HeadFile: every HeadEvery, if records were
// written since, it makes the head durable in the log (a head file must
// never name a record that a power loss could take back) and replaces the
// file atomically: write FILE.tmp, fdatasync, rename over FILE, sync the
// directory. A failure fails the journal closed, like any audit I/O.
type headWriter struct {
	j     *Journal
	fs    DirFS
	path  string
	every time.Duration
	stop  chan struct{}
	done  chan struct{}

	last  Head // owned by the goroutine, then by close
	wrote bool
	buf   []byte
}

func newHeadWriter(j *Journal, opts Options, fsys DirFS) (*headWriter, error) {
	// Refuse now rather than fail closed a second into the session: the
	// head file is replaced by rename, which fails over a directory and
	// would swap a FIFO or device node for a file.
	if err := checkRegular(opts.HeadFile, nil); errors.Is(err, ErrNotRegular) {
		return nil, fmt.Errorf("%w; a head file must be a regular file (or not exist yet)", err)
	}
	dir := filepath.Dir(opts.HeadFile)
	if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
		return nil, &IOError{Op: "head file: directory not writable", Path: dir, Err: err}
	}
	every := opts.HeadEvery
	if every <= 0 {
		every = DefaultHeadEvery
	}
	h := &headWriter{j: j, fs: fsys, path: opts.HeadFile, every: every, stop: make(chan struct{}), done: make(chan struct{})}
	go h.run()
	return h, nil
}

func (h *headWriter) run() {
	defer close(h.done)
	t := time.NewTicker(h.every)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
			if err := h.write(); err != nil {
				h.j.fail(err)
				return
			}
		}
	}
}

// close stops the ticker and writes the final head.
func (h *headWriter) close() error {
	close(h.stop)
	<-h.done
	if h.j.Err() != nil {
		return nil
	}
	return h.write()
}

func (h *headWriter) write() error {
	head, ok, err := h.j.durableHead()
	if err != nil || !ok || h.wrote && head == h.last {
		return err
	}
	h.buf = appendHeadLine(h.buf[:0], head, h.j.now(), h.j.key)
	tmp := h.path + tmpExt
	f, err := h.fs.Create(tmp)
	if err != nil {
		return &IOError{Op: "create", Path: tmp, Err: err}
	}
	_, err = f.Write(h.buf)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return &IOError{Op: "write", Path: tmp, Err: err}
	}
	if err := h.fs.Rename(tmp, h.path, RenameReplace); err != nil {
		return &IOError{Op: "rename", Path: h.path, Err: err}
	}
	if err := h.fs.SyncDir(filepath.Dir(h.path)); err != nil {
		return &IOError{Op: "fsync directory", Path: filepath.Dir(h.path), Err: err}
	}
	h.last, h.wrote = head, true
	return nil
}
