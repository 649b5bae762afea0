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
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/journal/record"
	"github.com/aegisrelay/aegis/journal/verify"
)

// crashChild appends at strict from 4 goroutines until killed, printing
// the seq of every record whose Wait returned (acknowledged) on stdout.
func crashChild(path string, keyPEM []byte) {
	key, err := record.ParsePrivateKey(keyPEM)
	if err != nil {
		panic(err)
	}
	j, err := Open(path, Options{Durability: Durability{Level: Strict}, Key: key})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	ack := func(seq uint64) {
		mu.Lock()
		fmt.Fprintln(out, seq)
		out.Flush()
		mu.Unlock()
	}
	seq, _ := j.Append(&record.SessionStart{Aegis: "crash", Durability: "strict", PolicySet: record.PassThroughSet})
	if j.Wait(seq, BeforeRequest) == nil {
		ack(seq)
	}
	for range 4 {
		go func() {
			for i := 0; ; i++ {
				seq, err := j.Append(&record.Intent{RequestDigest: record.Digest{byte(i)}})
				if err == nil {
					err = j.Wait(seq, BeforeRequest)
				}
				if err != nil {
					os.Exit(1)
				}
				ack(seq)
			}
		}()
	}
	select {}
}

func TestMain(m *testing.M) {
	if path := os.Getenv("JOURNAL_CRASH_CHILD"); path != "" {
		crashChild(path, []byte(os.Getenv("JOURNAL_CRASH_KEY")))
	}
	if path := os.Getenv("JOURNAL_ROTATE_CHILD"); path != "" {
		rotateChild(path) // rotate_crash_test.go
	}
	os.Exit(m.Run())
}

// TestCrash kills a process appending at strict with SIGKILL at random
// moments, ten times on the same file: every acknowledged record is in the
// file, and verify never reports tampering.
func TestCrash(t *testing.T) {
	key := testKey(t)
	pemBytes, _ := record.MarshalPrivateKey(key)
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	r := rand.New(rand.NewPCG(1, 2))
	var acked []uint64
	for round := range 10 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "JOURNAL_CRASH_CHILD="+path, "JOURNAL_CRASH_KEY="+string(pemBytes))
		stdout, _ := cmd.StdoutPipe()
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		first := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			once := false
			for sc.Scan() {
				seq, err := strconv.ParseUint(sc.Text(), 10, 64)
				if err != nil {
					t.Errorf("round %d: child printed %q", round, sc.Text())
					continue
				}
				acked = append(acked, seq)
				if !once {
					once = true
					close(first)
				}
			}
		}()
		select {
		case <-first:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("round %d: the child acknowledged nothing in 10s: %s", round, stderr.String())
		}
		time.Sleep(time.Duration(r.IntN(40_000)) * time.Microsecond)
		cmd.Process.Kill()
		<-done
		cmd.Wait()

		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		present := map[uint64]bool{}
		var d record.Decoder
		for _, line := range bytes.Split(data, []byte("\n")) {
			if rec, err := d.Decode(line); err == nil {
				present[rec.Seq] = true
			}
		}
		for _, seq := range acked {
			if !present[seq] {
				t.Fatalf("round %d: acknowledged seq %d is not in the file", round, seq)
			}
		}
		rep := verifyBytes(t, data, verify.Options{Key: key.Public().(ed25519.PublicKey)})
		if rep.Status == verify.Invalid {
			t.Fatalf("round %d: verify = invalid %v after a crash; want valid or incomplete", round, rep.Problems)
		}
	}
	if len(acked) < 20 {
		t.Errorf("only %d appends acknowledged over 10 rounds; the test exercised little", len(acked))
	}
}
