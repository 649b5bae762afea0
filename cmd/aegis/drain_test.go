package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// cutSaid is what wrap says when the child's output outlasts the drain's
// grace after the child exited.
const cutSaid = "did not end within the grace period"

// stderrWatch copies cmd's stderr into a buffer and closes said when a line
// holding want arrives.
func stderrWatch(t *testing.T, r io.Reader, want string) (said chan struct{}, all *syncBuffer) {
	t.Helper()
	said, all = make(chan struct{}), &syncBuffer{}
	go func() {
		sc := bufio.NewScanner(r)
		once := false
		for sc.Scan() {
			fmt.Fprintln(all, sc.Text())
			if !once && strings.Contains(sc.Text(), want) {
				once = true
				close(said)
			}
		}
	}()
	return said, all
}

// TestDrainSlowClient: a child that writes its whole output and exits while
// the client has not read it yet (a client reading slowly, or a journal
// syncing slowly, leaves it in the child's pipe and aegis's read-ahead):
// when the drain's grace ends, everything the child wrote is still relayed,
// its last line without a newline too, and wrap exits with the child's 0.
func TestDrainSlowClient(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var out bytes.Buffer
	pad := strings.Repeat("x", 64<<10)
	for i := range 24 {
		fmt.Fprintf(&out, `{"jsonrpc":"2.0","method":"notifications/n","params":{"i":%d,"p":"%s"}}`+"\n", i, pad)
	}
	fmt.Fprintf(&out, `{"jsonrpc":"2.0","method":"notifications/last","params":{"p":"%s"}}`, pad[:5000])
	inPath, outPath := filepath.Join(f.dir, "in"), filepath.Join(f.dir, "out")
	if err := os.WriteFile(outPath, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := f.wrapCmd([]string{"--grace", "300ms", "--durability", "none"}, child("copy")...)
	cmd.Env = append(os.Environ(), "AEGIS_TEST_IN="+inPath, "AEGIS_TEST_OUT="+outPath)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	said, errs := stderrWatch(t, stderr, cutSaid)
	stdin.Close() // the child reads EOF, writes its output and exits
	select {
	case <-said:
	case <-time.After(30 * time.Second):
		t.Errorf("wrap did not say its drain was cut within 30s (the client has read nothing); stderr:\n%s", errs.String())
	}
	got, _ := io.ReadAll(stdout)
	if err := cmd.Wait(); err != nil {
		t.Errorf("wrap: %v\n%s", err, errs.String())
	}
	if !bytes.Equal(got, out.Bytes()) {
		t.Errorf("client read %d bytes; child wrote %d (first difference at %d)\n%s", len(got), out.Len(), firstDiff(got, out.Bytes()), errs.String())
	}
	f.mustVerify(t, 0)
}

// TestDrainGrandchildHoldsStdout: a child that exits while a grandchild
// holds its stdout open ends its session after the drain's grace, with
// what the child wrote relayed, rather than waiting for the grandchild.
func TestDrainGrandchildHoldsStdout(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	pidPath := filepath.Join(f.dir, "grandchild")
	cmd := f.wrapCmd([]string{"--grace", "300ms"}, child("orphan")...)
	cmd.Env = append(os.Environ(), "AEGIS_TEST_IN="+pidPath)
	stdin, _ := cmd.StdinPipe()
	var got bytes.Buffer
	cmd.Stdout = &got
	errs := &syncBuffer{}
	cmd.Stderr = errs
	t.Cleanup(func() {
		if b, err := os.ReadFile(pidPath); err == nil {
			if pid, err := strconv.Atoi(string(b)); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	stdin.Close()
	runBounded(t, cmd, 30*time.Second)
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("wrap exit %d\n%s", code, errs.String())
	}
	if want := `{"jsonrpc":"2.0","method":"notifications/orphaned"}` + "\n"; got.String() != want {
		t.Errorf("client read %q; want %q", got.String(), want)
	}
	if !strings.Contains(errs.String(), cutSaid) {
		t.Errorf("wrap did not say its drain was cut; stderr:\n%s", errs.String())
	}
	f.mustVerify(t, 0)
}
