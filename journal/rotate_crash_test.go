package journal

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/internal/vfs"
	"github.com/aegisrelay/aegis/journal/record"
	"github.com/aegisrelay/aegis/journal/segment"
	"github.com/aegisrelay/aegis/journal/verify"
)

// rotateChild appends from two goroutines with rotation (2 KiB segments)
// and compression until it is killed, printing the seq of every record
// whose Wait returned. With JOURNAL_ROTATE_STEP set it SIGKILLs itself the
// JOURNAL_ROTATE_NTH time that step of sealing or compressing is reached
// (Options.onStep); if that never happens within 20s it exits 0 and prints
// "unreached".
func rotateChild(path string) {
	key, err := record.ParsePrivateKey([]byte(os.Getenv("JOURNAL_ROTATE_KEY")))
	if err != nil {
		panic(err)
	}
	step := os.Getenv("JOURNAL_ROTATE_STEP")
	nth, _ := strconv.Atoi(os.Getenv("JOURNAL_ROTATE_NTH"))
	var mu sync.Mutex
	seen := 0
	// With a step to reach, appends wait while two segments swapped out
	// are not yet compressed and removed: unpaced, the appenders outrun
	// the race-built compressor by thousands of records before a third
	// compression, each then signed, verified twice and compressed on
	// recovery, none of it reaching a step the test does not already.
	// Records are still appended while every step runs.
	var (
		pace             = sync.NewCond(new(sync.Mutex))
		swapped, removed int
	)
	onStep := func(s string) {
		if step != "" && (s == stepSwap || s == stepZstRemoved) {
			pace.L.Lock()
			if s == stepSwap {
				swapped++
			} else {
				removed++
				pace.Broadcast()
			}
			pace.L.Unlock()
		}
		if s != step {
			return
		}
		mu.Lock()
		seen++
		kill := seen == nth
		mu.Unlock()
		if kill {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
	}
	dur, err := ParseDurability(os.Getenv("JOURNAL_ROTATE_DURABILITY"))
	if err != nil {
		panic(err)
	}
	j, err := Open(path, Options{Durability: dur, Key: key, MaxSize: 2048, Compress: true, onStep: onStep})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var outMu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	ack := func(seq uint64) {
		outMu.Lock()
		fmt.Fprintln(out, seq)
		out.Flush()
		outMu.Unlock()
	}
	seq, _ := j.Append(&record.SessionStart{Aegis: "crash", Durability: dur.String(), PolicySet: record.PassThroughSet})
	if j.Wait(seq, BeforeRequest) != nil {
		os.Exit(1)
	}
	ack(seq)
	var wg sync.WaitGroup
	deadline := time.Now().Add(20 * time.Second)
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; step == "" || time.Now().Before(deadline); i++ {
				pace.L.Lock()
				for swapped-removed >= 2 {
					pace.Wait()
				}
				pace.L.Unlock()
				seq, err := j.Append(&record.Intent{RequestDigest: record.Digest{byte(w), byte(i)}})
				if err == nil {
					err = j.Wait(seq, BeforeRequest)
				}
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(1)
				}
				ack(seq)
			}
		}()
	}
	wg.Wait()
	if step != "" {
		j.Close()
		outMu.Lock()
		fmt.Fprintln(out, "unreached")
		out.Flush()
		os.Exit(0)
	}
	select {} // the random-kill test kills it
}

// runRotateChild starts rotateChild on path and returns the seqs it
// acknowledged once it has exited (killed by its hook) or, with killAfter
// > 0, once it has been killed that long after its first acknowledgement.
func runRotateChild(t *testing.T, path string, keyPEM []byte, durability, step string, nth int, killAfter time.Duration) (acked []uint64, unreached bool) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "JOURNAL_ROTATE_CHILD="+path, "JOURNAL_ROTATE_KEY="+string(keyPEM),
		"JOURNAL_ROTATE_DURABILITY="+durability, "JOURNAL_ROTATE_STEP="+step, "JOURNAL_ROTATE_NTH="+strconv.Itoa(nth))
	stdout, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	forkMu.Lock()
	err := cmd.Start()
	forkMu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	first := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if sc.Text() == "unreached" {
				unreached = true
				continue
			}
			seq, err := strconv.ParseUint(sc.Text(), 10, 64)
			if err != nil {
				t.Errorf("child printed %q", sc.Text())
				continue
			}
			if len(acked) == 0 {
				close(first)
			}
			acked = append(acked, seq)
		}
	}()
	timeout := time.After(60 * time.Second)
	if killAfter > 0 {
		select {
		case <-first:
		case <-timeout:
			cmd.Process.Kill()
			t.Fatalf("child acknowledged nothing: %s", stderr.String())
		}
		time.Sleep(killAfter)
		cmd.Process.Kill()
	}
	select {
	case <-done:
	case <-timeout:
		cmd.Process.Kill()
		<-done
		t.Fatalf("step %s #%d: child neither died nor finished in 60s: %s", step, nth, stderr.String())
	}
	err = cmd.Wait()
	if st, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); killAfter == 0 && !unreached && (!ok || st.Signal() != syscall.SIGKILL) {
		t.Fatalf("step %s #%d: child ended with %v, not by its SIGKILL: %s", step, nth, err, stderr.String())
	}
	return acked, unreached
}

// forkMu keeps a child from starting while a parallel subtest's own
// journals are open (held for reading there, for writing by
// runRotateChild's Start). A journal's lock is a flock, held by an open
// file, and a child forked while the test holds one shares that open
// file until it execs: closed by the test then, the file stays locked,
// and the test's next Open of it, a moment later, was refused as in use
// by another process (seen once on a loaded machine).
var forkMu sync.RWMutex

// checkSet verifies the log at path as a set, pinned, and checks that
// every acknowledged seq is in it exactly once and that its seqs run
// 0..n-1 with nothing doubled.
func checkSet(t *testing.T, what, path string, pub ed25519.PublicKey, acked []uint64) *verify.Report {
	t.Helper()
	rep := verifySetPath(t, path, verify.Options{Key: pub})
	if rep.Status == verify.Invalid {
		t.Fatalf("%s: verify = invalid %v; want valid or incomplete (files %v)", what, rep.Problems, dirNames(t, filepath.Dir(path)))
	}
	count := setSeqs(t, path)
	for seq := range uint64(len(count)) {
		if count[seq] != 1 {
			t.Fatalf("%s: seq %d is in the set %d times; want once (files %v)", what, seq, count[seq], dirNames(t, filepath.Dir(path)))
		}
	}
	for _, seq := range acked {
		if seq >= uint64(len(count)) {
			t.Fatalf("%s: acknowledged seq %d is not in the set (%d records)", what, seq, len(count))
		}
	}
	return rep
}

func dirNames(t *testing.T, dir string) []string {
	names, _ := vfs.OS.ReadDir(dir)
	slices.Sort(names)
	return names
}

// TestRotateCrashSteps kills an appender with SIGKILL at every step of
// sealing and compressing (through Options.onStep), at none and at strict:
// the set left behind verifies (valid or incomplete) with every
// acknowledged record exactly once; the next Open finishes the step, and
// after its Close the set has no spare, no unfinished copy and no
// uncompressed segment left.
func TestRotateCrashSteps(t *testing.T) {
	key := testKey(t)
	pemBytes, _ := record.MarshalPrivateKey(key)
	pub := key.Public().(ed25519.PublicKey)
	for _, durability := range []string{"none", "strict"} {
		for i, step := range steps {
			// At none every step, at the first rotation or at the third
			// (with segments before it); at strict, where the old file is
			// synced before the swap and directories are synced, the steps
			// of sealing and one of compressing (the rest do not depend on
			// the level).
			nths := []int{1 + 2*(i%2)}
			if durability == "strict" {
				switch step {
				case stepSpare, stepSwap, stepSealed, stepSealDir, stepZstRenamed:
					nths = []int{2}
				default:
					continue
				}
			}
			for _, nth := range nths {
				name := fmt.Sprintf("%s/%s#%d", durability, step, nth)
				// Each step's crash has a log of its own: the children run at once.
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					path := filepath.Join(t.TempDir(), "audit.jsonl")
					acked, unreached := runRotateChild(t, path, pemBytes, durability, step, nth, 0)
					if unreached {
						t.Fatalf("%s: the step was never reached", name)
					}
					if len(acked) == 0 {
						t.Fatalf("%s: nothing acknowledged before the crash", name)
					}
					t.Logf("%s: %d acknowledged; left %v", name, len(acked), dirNames(t, filepath.Dir(path)))
					checkSet(t, name+" after the crash", path, pub, acked)

					// The next Open finishes what the crash interrupted, with or
					// without rotation; one with compression compresses what is
					// left.
					forkMu.RLock()
					locked := true
					unlock := func() {
						if locked {
							locked = false
							forkMu.RUnlock()
						}
					}
					defer unlock()
					session(t, path, key, 3)
					j, err := Open(path, Options{Durability: mustDurability(t, "none"), Key: key, MaxSize: 2048, Compress: true})
					if err != nil {
						t.Fatalf("%s: Open after the crash: %v", name, err)
					}
					seq, _ := j.Append(&record.SessionStart{Aegis: "t", Durability: "none", PolicySet: record.PassThroughSet})
					for range 20 {
						seq, _ = j.Append(&record.Intent{RequestDigest: record.Digest{7}})
						j.Wait(seq, BeforeRequest)
					}
					seq, _ = j.Append(&record.SessionEnd{Reason: record.EndClientEOF, Counts: record.Counts{Intents: 20}})
					if err := j.Wait(seq, BeforeResponse); err != nil {
						t.Fatal(err)
					}
					if err := j.Close(); err != nil {
						t.Fatalf("%s: Close: %v", name, err)
					}
					unlock()
					rep := checkSet(t, name+" after recovery", path, pub, acked)
					// The killed session has no session_end; and, as the
					// signing rule allows a crash to leave (journal/doc.go,
					// "Signatures"), its last group may be unattested, which
					// verify says of that same session (a longer tail is
					// invalid, and checkSet fails on it).
					ended, tail := 0, 0
					for _, g := range rep.Gaps {
						switch {
						case strings.Contains(g.Msg, "no session_end"):
							ended++
						case strings.Contains(g.Msg, "(at most one group)") && g.Seq == rep.Gaps[0].Seq:
							tail++
						default:
							ended = -1
						}
					}
					if ended != 1 || tail > 1 {
						t.Errorf("%s: gaps %v; want only the killed session's missing session_end (and at most its last group unattested)", name, rep.Gaps)
					}
					for _, n := range dirNames(t, filepath.Dir(path)) {
						if strings.HasSuffix(n, segment.SpareExt) || strings.HasSuffix(n, segment.TmpExt) || strings.HasSuffix(n, ".jsonl") && n != "audit.jsonl" {
							t.Errorf("%s: %s left after recovery and Close (files %v)", name, n, dirNames(t, filepath.Dir(path)))
						}
					}
				})
			}
		}
	}
}

// TestRotateRandomKill kills a rotating, compressing appender at random
// moments, eight times on the same log: after each, the set verifies and
// holds every acknowledged record once.
func TestRotateRandomKill(t *testing.T) {
	key := testKey(t)
	pemBytes, _ := record.MarshalPrivateKey(key)
	pub := key.Public().(ed25519.PublicKey)
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	r := rand.New(rand.NewPCG(3, 4))
	var acked []uint64
	for round := range 8 {
		a, _ := runRotateChild(t, path, pemBytes, "none", "", 0, time.Duration(1+r.IntN(30_000))*time.Microsecond)
		acked = append(acked, a...)
		checkSet(t, fmt.Sprintf("round %d", round), path, pub, acked)
	}
	if len(acked) < 50 {
		t.Errorf("only %d records acknowledged over 8 rounds; the test exercised little", len(acked))
	}
}
