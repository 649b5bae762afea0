package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/aegisrelay/aegis/internal/logview"
	"github.com/aegisrelay/aegis/journal/record"
	"github.com/aegisrelay/aegis/journal/segment"
	"github.com/aegisrelay/aegis/journal/verify/verifyjson"
)

// drive sends n tools/calls through a wrap started with extra flags (the
// echo child answers each), keeping up to window calls in flight, then
// closes stdin and waits. It samples the wrap process's resident memory
// every 100ms and returns the samples (KiB) and wrap's stderr.
func (f *fixture) drive(t *testing.T, extra []string, n, window int) (rss []int, stderr string) {
	t.Helper()
	// A generous grace: under -race on a loaded machine the echo child can
	// take longer than the fixture's 300ms to exit after stdin closes.
	cmd := f.wrapCmd(append(slices.Clone(extra), "--grace", "30s"), child("echo")...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errBuf bytes.Buffer
	cmd.Stderr = &errBuf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	slots := make(chan struct{}, window)
	werr := make(chan error, 1)
	go func() {
		bw := bufio.NewWriterSize(stdin, 64<<10)
		for i := range n {
			slots <- struct{}{}
			bw.WriteString(`{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"tools/call","params":{"name":"soak_` + strconv.Itoa(i%7) + `","arguments":{"i":` + strconv.Itoa(i) + `}}}` + "\n")
			if len(slots) == window || i == n-1 {
				if err := bw.Flush(); err != nil {
					werr <- err
					return
				}
			}
		}
		werr <- nil
	}()
	stop := make(chan struct{})
	sampled := make(chan []int)
	go func() {
		var out []int
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				sampled <- out
				return
			case <-tick.C:
				if kb := vmRSS(cmd.Process.Pid); kb > 0 {
					out = append(out, kb)
				}
			}
		}
	}()
	br := bufio.NewReaderSize(stdout, 1<<20)
	for i := range n {
		line, err := br.ReadSlice('\n')
		if err != nil {
			t.Fatalf("answer %d of %d: %v (stderr: %s)", i, n, err, errBuf.String())
		}
		if !bytes.Contains(line, []byte(`"id":`+strconv.Itoa(i)+`,`)) {
			t.Fatalf("answer %d = %q; want id %d", i, line, i)
		}
		<-slots
	}
	close(stop)
	rss = <-sampled
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
	stdin.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		t.Fatalf("wrap did not exit (stderr: %s)", errBuf.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("wrap = exit %d; want 0 (stderr: %s)", code, errBuf.String())
	}
	return rss, errBuf.String()
}

// vmRSS returns a process's resident set in KiB, or 0.
func vmRSS(pid int) int {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return n
		}
	}
	return 0
}

// aegisRun runs aegis with args and returns its exit code, stdout and stderr.
func aegisRun(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(aegisBin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	runBounded(t, cmd, 5*time.Minute)
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

func segmentsIn(t *testing.T, dir string) (plain, zst []string) {
	t.Helper()
	names, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range names {
		p := filepath.Join(dir, e.Name())
		if s, ok := segment.ParseName(p); ok {
			if s.Compressed {
				zst = append(zst, p)
			} else {
				plain = append(plain, p)
			}
		}
	}
	byFirst := func(a, b string) int {
		sa, _ := segment.ParseName(a)
		sb, _ := segment.ParseName(b)
		return int(sa.First) - int(sb.First)
	}
	slices.SortFunc(plain, byFirst)
	slices.SortFunc(zst, byFirst)
	return plain, zst
}

// TestRotateWrap: wrap rotates and compresses, keeps a head file and
// prints the head; verify and log take the whole set (the live file, a
// glob, a directory, segments in any order); verify reports a removed
// middle segment, a segment replaced by an older copy and, with the kept
// head, a cut tail.
func TestRotateWrap(t *testing.T) {
	f := newFixture(t)
	headFile := filepath.Join(f.dir, "audit.head")
	const calls = 400
	// strict: the seals keep pace with the calls, so that 8 KiB segments
	// are about 8 KiB (at none the relay outruns the background seals and
	// segments grow past the size instead; the soak test runs at none).
	_, stderr := f.drive(t, []string{"--durability", "strict", "--audit-max-size", "8KiB", "--compress", "--head-file", headFile}, calls, 8)
	i := strings.Index(stderr, "audit head ")
	if i < 0 {
		t.Fatalf("wrap printed no head: %s", stderr)
	}
	printed := strings.Fields(stderr[i+len("audit head "):])[0]
	_, zst := segmentsIn(t, f.dir)
	if len(zst) < 10 {
		t.Fatalf("%d compressed segments of 8 KiB for %d calls; want rotation (files: %v)", len(zst), calls, zst)
	}
	for _, n := range []string{"audit.jsonl.next", "audit.head.tmp"} {
		if _, err := os.Stat(filepath.Join(f.dir, n)); err == nil {
			t.Errorf("%s left behind", n)
		}
	}
	sh, err := record.ReadHead(headFile)
	if err != nil || sh.Head.String() != printed {
		t.Fatalf("head file = %v, %v; want the printed head %s", sh.Head, err, printed)
	}

	pin := "@" + f.key + ".pub"
	shuffled := append(slices.Clone(zst), f.audit)
	slices.Reverse(shuffled)
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"live file", []string{f.audit}},
		{"glob", []string{filepath.Join(f.dir, "audit.jsonl*")}},
		{"directory", []string{f.dir}},
		{"any order", shuffled},
		{"head", []string{"--head", printed, f.audit}},
		{"head file", []string{"--head-file", headFile, f.audit}},
	} {
		code, out, errOut := aegisRun(t, append([]string{"verify", "--key", pin}, tt.args...)...)
		if code != 0 || !strings.Contains(out, "VALID") || !strings.Contains(out, "compressed") {
			t.Errorf("verify %s = exit %d\n%s%s", tt.name, code, out, errOut)
		}
	}
	code, out, _ := aegisRun(t, "verify", "--json", "--key", pin, f.audit)
	var rep verifyjson.Doc
	// The live file holds no record when the session's last write was the
	// one that rotated; verify lists the files that hold records.
	wantFiles := len(zst)
	if st, err := os.Stat(f.audit); err == nil && st.Size() > 0 {
		wantFiles++
	}
	if err := json.Unmarshal([]byte(out), &rep); code != 0 || err != nil || rep.Records != 2*calls+2 || len(rep.Files) != wantFiles {
		t.Errorf("verify --json = exit %d, %d records in %d files, %v; want %d records in %d files", code, rep.Records, len(rep.Files), err, 2*calls+2, wantFiles)
	}
	code, out, _ = aegisRun(t, "log", "--json", f.audit)
	rows := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(rows) != calls {
		t.Fatalf("log --json over the set = exit %d, %d rows; want %d", code, len(rows), calls)
	}
	for i, r := range rows {
		if !strings.Contains(r, `"call":"`+strconv.Itoa(i)+`"`) || !strings.Contains(r, `"status":"ok"`) {
			t.Fatalf("log row %d = %s; want call %d, ok, in order", i, r, i)
		}
	}

	// Tampering with the set, on copies in directories of their own.
	copyLog := func(edit func(name string, data []byte) []byte) string {
		d := t.TempDir()
		for _, p := range append(slices.Clone(zst), f.audit) {
			data, err := os.ReadFile(p) // (zstd may end in NUL bytes: not readAudit)
			if err != nil {
				t.Fatal(err)
			}
			if data = edit(filepath.Base(p), data); data != nil {
				if err := os.WriteFile(filepath.Join(d, filepath.Base(p)), data, 0o600); err != nil {
					t.Fatal(err)
				}
			}
		}
		return d // verify takes the directory: whatever the live file became
	}
	middle := filepath.Base(zst[len(zst)/2])
	ms, _ := segment.ParseName(zst[len(zst)/2])
	removed := copyLog(func(name string, data []byte) []byte {
		if name == middle {
			return nil
		}
		return data
	})
	// An older copy of a segment: the same name, fewer records (the file
	// as it was before its last records were written).
	older := copyLog(func(name string, data []byte) []byte {
		if name != middle {
			return data
		}
		rc, err := segment.Open(zst[len(zst)/2], nil)
		if err != nil {
			t.Fatal(err)
		}
		plain, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		lines := bytes.SplitAfter(plain, []byte("\n"))
		enc, err := zstd.NewWriter(nil)
		if err != nil {
			t.Fatal(err)
		}
		defer enc.Close()
		return enc.EncodeAll(bytes.Join(lines[:len(lines)/2], nil), nil)
	})
	// The tail cut: the live file's last records; or, when a rotation at
	// exit left it (nearly) empty, the live file and the last segment.
	live := readAudit(f.audit)
	liveLines := bytes.SplitAfter(live, []byte("\n"))
	short := len(liveLines) <= 4
	cut := copyLog(func(name string, data []byte) []byte {
		switch {
		case name == "audit.jsonl" && short:
			return nil
		case name == "audit.jsonl":
			return bytes.Join(liveLines[:len(liveLines)-4], nil)
		case short && name == filepath.Base(zst[len(zst)-1]):
			return nil
		}
		return data
	})
	for _, tt := range []struct {
		name string
		args []string
		want int
		msg  string
	}{
		{"middle segment removed", []string{removed}, 1, fmt.Sprintf("missing segment: seqs %d–%d", ms.First, ms.Last)},
		{"segment replaced by an older copy", []string{older}, 1, "older copy"},
		{"tail cut, no head", []string{cut}, 3, "no session_end"},
		{"tail cut, kept head", []string{"--head", printed, cut}, 1, "tail was cut"},
		{"tail cut, head file", []string{"--head-file", headFile, cut}, 1, "tail was cut"},
	} {
		code, out, errOut := aegisRun(t, append([]string{"verify", "--key", pin}, tt.args...)...)
		if code != tt.want || !strings.Contains(out, tt.msg) {
			t.Errorf("verify %s = exit %d; want %d saying %q\n%s%s", tt.name, code, tt.want, tt.msg, out, errOut)
		}
	}
}

// TestRotateLogFollow: log -f keeps printing across rotations.
func TestRotateLogFollow(t *testing.T) {
	f := newFixture(t)
	s := f.start(t, []string{"--durability", "strict", "--audit-max-size", "4KiB", "--compress", "--grace", "30s"}, nil, child("echo")...)
	s.send(call("0", "first"))
	s.recv()
	lines, stop := followLog(t, f.audit)
	defer stop()
	const calls = 150 // ~20 rotations
	for i := 1; i < calls; i++ {
		s.send(call(strconv.Itoa(i), "t"))
		s.recv()
	}
	for i := range calls {
		select {
		case l := <-lines:
			if !strings.Contains(l, `"call":"`+strconv.Itoa(i)+`"`) {
				t.Fatalf("log -f line %d = %s; want call %d\nlog -f stderr: %s", i, l, i, stop())
			}
		case <-time.After(20 * time.Second):
			_, zst := segmentsIn(t, f.dir)
			t.Fatalf("log -f printed %d of %d calls (%d segments)", i, calls, len(zst))
		}
	}
	s.stdin.Close()
	// Exit waits for the compressor to finish what the ~20 rotations
	// left, each segment's file and folder synced: dozens of syncs, which
	// a disk shared with a full test run can hold for a second or more
	// each.
	s.wait(2 * time.Minute)
	if _, zst := segmentsIn(t, f.dir); len(zst) < 5 {
		t.Errorf("%d segments; the test wanted rotations while following", len(zst))
	}
}

// TestLogFollowFirstSegmentGone: log -f waits for seq 0 (a listing may
// miss a file a rotation renames), but not for ever: a log whose first
// segment was removed is printed from where it starts.
func TestLogFollowFirstSegmentGone(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := f.start(t, []string{"--audit-max-size", "4KiB"}, nil, child("echo")...)
	for i := range 30 {
		s.send(call(strconv.Itoa(i), "t"))
		s.recv()
	}
	s.stdin.Close()
	if code := s.wait(30 * time.Second); code != 0 { // a hang's bound: Close waits for the last segment's compression and index, fsyncs a busy disk may hold
		t.Fatalf("exit %d (%s)", code, s.stderr)
	}
	plain, _ := segmentsIn(t, f.dir)
	if len(plain) < 2 {
		t.Fatalf("%d segments; want rotation", len(plain))
	}
	if err := os.Remove(plain[0]); err != nil {
		t.Fatal(err)
	}
	first, _ := segment.ParseName(plain[1])
	lines, stop := followLog(t, f.audit)
	defer stop()
	select {
	case l := <-lines:
		var row struct{ Seq uint64 }
		if err := json.Unmarshal([]byte(l), &row); err != nil || row.Seq < first.First {
			t.Fatalf("log -f first line %q; want a call from seq %d on", l, first.First)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("log -f printed nothing of a log whose first segment is gone")
	}
}

// followLog starts aegis log -f --json on audit; its lines come on lines
// (closed when its output ends). stop kills it and returns its stderr.
func followLog(t *testing.T, audit string) (lines <-chan string, stop func() string) {
	t.Helper()
	follow := exec.Command(aegisBin, "log", "-f", "--json", audit)
	var ferr bytes.Buffer
	follow.Stderr = &ferr
	out, err := follow.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	ch := make(chan string, 1000)
	go func() {
		br := bufio.NewReader(out)
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				close(ch)
				return
			}
			ch <- l
		}
	}()
	return ch, func() string {
		follow.Process.Kill()
		follow.Wait() // before reading ferr, which the process writes
		return ferr.String()
	}
}

// TestRotateFlags: bad sizes and head files are usage errors (exit 2),
// before any file is touched.
func TestRotateFlags(t *testing.T) {
	f := newFixture(t)
	for _, extra := range [][]string{
		{"--audit-max-size", "10"},
		{"--audit-max-size", "big"},
		{"--audit-max-size", "-1"},
		{"--head-file", f.audit},
		{"--head-file", f.audit + ".0-5.jsonl"},
	} {
		cmd := f.wrapCmd(extra, "true")
		out, _ := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); code != 2 {
			t.Errorf("wrap %v = exit %d; want 2\n%s", extra, code, out)
		}
	}
	if _, err := os.Stat(f.audit); err == nil {
		t.Errorf("a usage error created the audit file")
	}
	// A head file that cannot be written fails at the start, not later,
	// as the setup mistake it is.
	cmd := f.wrapCmd([]string{"--head-file", filepath.Join(f.dir, "no", "such", "dir", "h")}, "true")
	if out, _ := cmd.CombinedOutput(); cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), filepath.Join("no", "such", "dir")) {
		t.Errorf("wrap --head-file in a missing directory = exit %d; want 2 naming its folder\n%s", cmd.ProcessState.ExitCode(), out)
	}
	for _, args := range [][]string{
		{"verify", "--head", "1:sha256:00", "--head-file", "x", f.audit},
		{"verify", filepath.Join(f.dir, "nothing*")},
		{"log", "-f", f.audit, filepath.Join(f.dir, "other.jsonl")},
	} {
		if code, out, errOut := aegisRun(t, args...); code != 2 {
			t.Errorf("%v = exit %d; want 2\n%s%s", args, code, out, errOut)
		}
	}
}

// TestRotateProgress: the progress bar is drawn on a terminal for a large
// input, and never on a pipe or for a small input.
func TestRotateProgress(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a.jsonl")
	if err := os.WriteFile(file, bytes.Repeat([]byte("x"), 4096), 0o600); err != nil {
		t.Fatal(err)
	}
	master, tty := openPTY(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	p := logview.NewProgress(w, "on a pipe", []string{file}, 1024)
	p.Add(4096)
	p.Done()
	w.Close()
	if drawn, err := io.ReadAll(r); err != nil || len(drawn) > 0 {
		t.Errorf("NewProgress(pipe) drew %q (read: %v); want nothing", drawn, err)
	}
	// Below the minimum nothing is drawn: the terminal's first bytes are
	// the large input's bar.
	p = logview.NewProgress(tty, "small", []string{file}, 1<<20)
	p.Add(4096)
	p.Done()
	p = logview.NewProgress(tty, "verify a", []string{file}, 1024)
	p.Add(4096)
	p.Done()
	// The terminal may hand the bar over in pieces: read until its
	// description is whole, or the terminal fails.
	got := make(chan string, 1)
	go func() {
		var drawn []byte
		buf := make([]byte, 4096)
		for !bytes.Contains(drawn, []byte("verify a")) {
			n, err := master.Read(buf)
			drawn = append(drawn, buf[:n]...)
			if err != nil {
				drawn = fmt.Appendf(drawn, " (read: %v)", err)
				break
			}
		}
		got <- string(drawn)
	}()
	select {
	case s := <-got:
		if !strings.HasPrefix(s, "\rverify a ") {
			t.Errorf("terminal got %q; want the bar with its description, and nothing before it", s)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the bar's description not drawn on the terminal in 5s")
	}
	// verify on a pipe (every test run's stderr) draws nothing.
	f := newFixture(t)
	f.drive(t, []string{"--durability", "none"}, 3, 1)
	if code, _, errOut := aegisRun(t, "verify", f.audit); code != 0 || errOut != "" {
		t.Errorf("verify with stderr on a pipe = exit %d, stderr %q; want 0 and nothing", code, errOut)
	}
}

// TestRotateSoak is a long-running log: a wrapped session of
// many recorded calls at none, rotating hundreds of times with --compress.
// verify over the whole set passes pinned, every call is in it once, and
// wrap's resident memory stays flat. CI runs 40,000 calls; set
// AEGIS_SOAK_CALLS=1000000 for the full run (minutes), whose figures go
// into BENCHMARKS.md:
//
//	AEGIS_SOAK_CALLS=1000000 go test -run TestRotateSoak -v -timeout 60m ./cmd/aegis/
func TestRotateSoak(t *testing.T) {
	t.Parallel()
	calls := 40_000
	if s := os.Getenv("AEGIS_SOAK_CALLS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			t.Fatalf("AEGIS_SOAK_CALLS=%q: want a number of calls", s)
		}
		calls = n
	}
	// 40k calls: ~30 MB of log, ~150 rotations; 1M calls with 1MiB: ~750.
	maxSize := "192KiB"
	if calls >= 200_000 {
		maxSize = "1MiB"
	}
	f := newFixture(t)
	start := time.Now()
	rss, stderr := f.drive(t, []string{"--durability", "none", "--audit-max-size", maxSize, "--compress"}, calls, 64)
	wrapTime := time.Since(start)
	// At none the relay can outrun the background seals (each waits for an
	// fdatasync): a segment then grows past the size rather than hold a
	// call, so count rotations loosely on a loaded CI machine.
	plain, zst := segmentsIn(t, f.dir)
	want := 20
	if calls >= 200_000 {
		want = 100
	}
	if len(plain) > 0 || len(zst) < want {
		t.Fatalf("%d plain and %d compressed segments; want at least %d, all compressed (stderr: %s)", len(plain), len(zst), want, stderr)
	}
	var zBytes int64
	for _, p := range zst {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		zBytes += st.Size()
	}
	st, err := os.Stat(f.audit)
	if err != nil {
		t.Fatal(err)
	}
	liveBytes := st.Size()

	// Memory: the second half of the run holds no more than the first
	// half's peak plus slack (the GC's headroom and the encoder's buffers
	// make the first samples noisy; growth with the log would show here).
	if len(rss) < 4 {
		t.Fatalf("only %d memory samples", len(rss))
	}
	half := len(rss) / 2
	early, late := slices.Max(rss[:half]), slices.Max(rss[half:])
	t.Logf("wrap RSS: first-half peak %d KiB, second-half peak %d KiB, last %d KiB (%d samples)", early, late, rss[len(rss)-1], len(rss))
	if late > early+early/4+8<<10 {
		t.Errorf("wrap RSS grew from %d KiB to %d KiB over the run; want flat", early, late)
	}

	vstart := time.Now()
	vcmd := exec.Command(aegisBin, "verify", "--json", "--key", "@"+f.key+".pub", f.audit)
	var vout, verr bytes.Buffer
	vcmd.Stdout, vcmd.Stderr = &vout, &verr
	runBounded(t, vcmd, 30*time.Minute)
	vtime := time.Since(vstart)
	vcpu := vcmd.ProcessState.UserTime() + vcmd.ProcessState.SystemTime()
	code, out, errOut := vcmd.ProcessState.ExitCode(), vout.String(), verr.String()
	var rep verifyjson.Doc
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 || rep.Status != "valid" {
		t.Fatalf("verify pinned = exit %d %s %s", code, out, errOut)
	}
	if rep.Records != uint64(2*calls+2) || rep.Sessions[0].Intents != uint64(calls) || rep.Sessions[0].Outcomes != uint64(calls) {
		t.Fatalf("verify: %d records, %+v; want %d records, %d intents and outcomes", rep.Records, rep.Sessions, 2*calls+2, calls)
	}
	// The uncompressed size of the set: what verify read.
	var rawBytes int64
	var sigs int
	for _, p := range append(zst, f.audit) {
		rc, _ := segment.Open(p, nil)
		data, _ := io.ReadAll(rc)
		rc.Close()
		if p != f.audit {
			rawBytes += int64(len(data))
		}
		sigs += bytes.Count(data, []byte(`,"sig":"`))
	}
	sizes := 0.0
	if len(zst) > 0 {
		sizes = float64(rawBytes) / float64(len(zst)) / (1 << 20)
	}
	t.Logf("soak: %d calls, %d records (%d signed), %d segments (--audit-max-size %s, %.2f MiB on average), wrap %v (%.0f calls/s)",
		calls, rep.Records, sigs, len(zst), maxSize, sizes, wrapTime.Round(time.Millisecond), float64(calls)/wrapTime.Seconds())
	t.Logf("compression: %d bytes of sealed segments in %d bytes of zstd: ratio %.2f", rawBytes, zBytes, float64(rawBytes)/float64(zBytes))
	t.Logf("verify --key (all %d cores): %d bytes uncompressed in %v: %.1f MB/s; %v of CPU: %.1f MB per CPU-second",
		cpuCount(), rawBytes+liveBytes, vtime.Round(time.Millisecond), float64(rawBytes+liveBytes)/vtime.Seconds()/1e6,
		vcpu.Round(time.Millisecond), float64(rawBytes+liveBytes)/vcpu.Seconds()/1e6)
}
