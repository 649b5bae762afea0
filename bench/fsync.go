package bench

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"math"
	"path/filepath"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// floorLine is the small append of the fdatasync floor: about the size of
// an intent or outcome record (300–450 bytes).
var floorLine = append(bytes.Repeat([]byte("x"), 399), '\n')

// syncFile is the raw fdatasync floor: floorLine appended to an O_APPEND
// file in the audit directory and fdatasync'd, as the journal does per
// commit group. Like the audit log, the file grows, so each sync also
// carries the size change.
//
// ow is the floor of the means the journal chooses at strict and reply
// (journal/prezero.go): floorLine written over a file of zeros already
// written and synced, then fdatasync'd, which commits no size change.
type syncFile struct {
	fd  int
	ow  int
	off int64
}

// overwriteSize is the pre-zeroed file's size; writes wrap around in it.
const overwriteSize = 4 << 20

func openSyncFile(dir string) (*syncFile, error) {
	fd, err := unix.Open(filepath.Join(dir, "fdatasync-floor.log"), unix.O_WRONLY|unix.O_APPEND|unix.O_CREAT|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, err
	}
	ow, err := unix.Open(filepath.Join(dir, "fdatasync-overwrite-floor.log"), unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC, 0o600)
	if err == nil {
		zeros := make([]byte, overwriteSize)
		if _, err = unix.Write(ow, zeros); err == nil {
			err = unix.Fsync(ow)
		}
		if err != nil {
			unix.Close(ow)
		}
	}
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	return &syncFile{fd: fd, ow: ow}, nil
}

// overwrite writes one line over pre-zeroed space and fdatasyncs it.
func (s *syncFile) overwrite() (time.Duration, error) {
	if s.off+int64(len(floorLine)) > overwriteSize {
		s.off = 0
	}
	t0 := time.Now()
	if _, err := unix.Pwrite(s.ow, floorLine, s.off); err != nil {
		return 0, err
	}
	s.off += int64(len(floorLine))
	err := fdatasync(s.ow)
	return time.Since(t0), err
}

// hopLine is the size of a record at strict: an intent or outcome of a
// small tools/call (the journal's lines of the durability rounds are
// 490–540 bytes).
var hopLine = append(bytes.Repeat([]byte("x"), 511), '\n')

// overwriteAfterHops is the pre-zeroed floor taken the way the journal
// takes its syncs at strict: twice, a lock-step round trip through p (the
// echo server alone), then a line written over synced zeros and
// fdatasync'd. Each sync follows a hop between processes, as each of the
// journal's does (the client's request before the intent's, the child's
// answer before the outcome's), not another sync: a floor sampled in
// bursts, sync after sync, meets a disk and a thread still busy from the
// last one. It returns each sync's time, and the time of the round trip
// right after the first sync and of one right after another round trip
// (two more at the end): what the idle of a sync costs the hop after it,
// in processes that are not aegis.
func (s *syncFile) overwriteAfterHops(p *proc) (d [2]time.Duration, afterSync, afterHop time.Duration, err error) {
	for k := range d {
		var rt time.Duration
		if rt, _, err = p.roundTrip(callReq); err != nil {
			return
		}
		if k == 1 {
			afterSync = rt
		}
		if s.off+int64(len(hopLine)) > overwriteSize {
			s.off = 0
		}
		t0 := time.Now()
		if _, err = unix.Pwrite(s.ow, hopLine, s.off); err != nil {
			return
		}
		s.off += int64(len(hopLine))
		err = fdatasync(s.ow)
		d[k] = time.Since(t0)
		if err != nil {
			return
		}
	}
	if _, _, err = p.roundTrip(callReq); err != nil {
		return
	}
	afterHop, _, err = p.roundTrip(callReq)
	return
}

// sync appends one line and fdatasyncs it.
func (s *syncFile) sync() (time.Duration, error) {
	t0 := time.Now()
	if _, err := unix.Write(s.fd, floorLine); err != nil {
		return 0, err
	}
	err := fdatasync(s.fd)
	return time.Since(t0), err
}

// write appends one line without syncing: the cost a record pays at
// none besides its signature and hash.
func (s *syncFile) write() (time.Duration, error) {
	t0 := time.Now()
	_, err := unix.Write(s.fd, floorLine)
	return time.Since(t0), err
}

// replyShape is what reply's fdatasync has to do, without aegis: append
// (the intent), a round trip through p (the child's answer; its time is
// not counted), append (the outcome), fdatasync both.
func (s *syncFile) replyShape(p *proc) (time.Duration, error) {
	t0 := time.Now()
	if _, err := unix.Write(s.fd, floorLine); err != nil {
		return 0, err
	}
	rt, _, err := p.roundTrip(callReq)
	if err != nil {
		return 0, err
	}
	if _, err := unix.Write(s.fd, floorLine); err != nil {
		return 0, err
	}
	err = fdatasync(s.fd)
	return time.Since(t0) - rt, err
}

func (s *syncFile) close() {
	unix.Close(s.fd)
	unix.Close(s.ow)
}

// signHasher is what a record needs besides its bytes: an Ed25519
// signature over it (the journal signs the last record of every group,
// so a lock-step call's two records are both signed) and the SHA-256 that
// chains the next record to it.
type signHasher struct {
	key ed25519.PrivateKey
	rec []byte
}

func newSignHasher() *signHasher {
	return &signHasher{key: ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)), rec: floorLine[:len(floorLine)-1]}
}

// op signs and hashes one record, n times, and returns the time per record.
func (s *signHasher) op(n int) time.Duration {
	t0 := time.Now()
	for range n {
		sig := ed25519.Sign(s.key, s.rec)
		sum := sha256.Sum256(s.rec)
		_, _ = sig, sum
	}
	return time.Since(t0) / time.Duration(n)
}

// FsyncResult is the raw fdatasync floor of the audit directory.
type FsyncResult struct {
	Bytes int   `json:"append_bytes"`
	Sync  Stats `json:"fdatasync"`
	// Overwrite is fdatasync after the same bytes written over pre-zeroed
	// space: the floor of the journal's own means at strict and reply.
	Overwrite Stats `json:"fdatasync_overwrite"`
	Write     Stats `json:"write_only"`
	// SyncCPU is the CPU time (user + system) of the syncing thread per
	// append + fdatasync, ns: the filesystem's own work, done in the
	// caller's context, which a journal pays on its own CPU too.
	SyncCPU Num `json:"fdatasync_cpu_ns"`
}

func (h *harness) fsyncSection(ctx context.Context) error {
	sf, err := openSyncFile(h.work)
	if err != nil {
		return err
	}
	defer sf.close()
	var syncs, writes samples
	runtime.LockOSThread() // threadCPU reads this thread's usage
	cpu0, cpuOK := threadCPU()
	for i := 0; i < h.it.fsync && ctx.Err() == nil; i++ {
		d, err := sf.sync()
		if err != nil {
			runtime.UnlockOSThread()
			return err
		}
		syncs.add(d)
	}
	syncCPU := Num(math.NaN()) // not measured where threadCPU is unknown
	if cpu1, ok := threadCPU(); cpuOK && ok {
		syncCPU = Num(float64(cpu1-cpu0) / float64(max(syncs.n(), 1)))
	}
	runtime.UnlockOSThread()
	var overwrites samples
	for i := 0; i < h.it.fsync && ctx.Err() == nil; i++ {
		d, err := sf.write()
		if err != nil {
			return err
		}
		writes.add(d)
		if d, err = sf.overwrite(); err != nil {
			return err
		}
		overwrites.add(d)
	}
	h.res.Fsync = FsyncResult{Bytes: len(floorLine), Sync: syncs.stats(), Overwrite: overwrites.stats(), Write: writes.stats(), SyncCPU: syncCPU}
	h.res.Machine.FsyncFloor = h.res.Fsync.Sync.Median
	h.res.fsyncSamples = syncs.d
	h.logf("   fdatasync median %.0f µs, p99 %.0f µs, CPU %.0f µs; over pre-zeroed space %.0f µs", h.res.Fsync.Sync.Median/1e3, h.res.Fsync.Sync.P99/1e3, syncCPU/1e3, h.res.Fsync.Overwrite.Median/1e3)
	return nil
}
