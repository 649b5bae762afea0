package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestVerifyProblemsInFileOrder: aegis verify lists the problems of a
// set in file order — the sealed segments in seq order, then the live
// file, each by line — whichever check found them: a signature that does
// not verify (checked by a worker, after its line was judged) is listed
// at its line, before the broken chain of the line after it, and before
// every problem of a later file.
func TestVerifyProblemsInFileOrder(t *testing.T) {
	f := newFixture(t)
	// strict: every record is signed.
	f.drive(t, []string{"--durability", "strict", "--audit-max-size", "4KiB"}, 60, 1)
	plain, _ := segmentsIn(t, f.dir)
	if len(plain) < 3 {
		t.Fatalf("segments = %v; want at least 3", plain)
	}
	// A signature changed on line 2 of the first and the second segment;
	// a signed line's tool changed in the live file.
	var want []string
	for _, seg := range plain[:2] {
		data := readAudit(seg)
		at := lineOffset(data, 2)
		i := at + bytes.Index(data[at:], []byte(`"sig":"ed25519:`)) + len(`"sig":"ed25519:`) + 10
		if data[i] == 'A' {
			data[i] = 'B'
		} else {
			data[i] = 'A'
		}
		mustWrite(t, seg, data)
		seq := seqOfLine(t, data, 2)
		want = append(want,
			fmt.Sprintf("invalid: %s line 2 (seq %d): signature does not verify", filepath.Base(seg), seq),
			fmt.Sprintf("invalid: %s line 3 (seq %d): prev does not match the line before (chain broken)", filepath.Base(seg), seq+1))
	}
	// A field no other record refers to: an intent's tool or, where the
	// rotation left the live file no intent (record lengths vary with
	// their timestamps and latencies), an outcome's latency.
	data := readAudit(f.audit)
	at := bytes.Index(data, []byte(`"tool":"soak_`)) + len(`"tool":"soak_`)
	if at < len(`"tool":"soak_`) {
		at = bytes.Index(data, []byte(`"latency_ns":`)) + len(`"latency_ns":`)
	}
	if at < len(`"latency_ns":`) || bytes.IndexByte(data[at:], '\n') == len(data[at:])-1 {
		t.Fatalf("the live file holds no intent or outcome before its last line:\n%s", data)
	}
	line := bytes.Count(data[:at], []byte("\n")) + 1
	if data[at] == '9' || data[at] < '1' || data[at] > '9' {
		data[at] = '1'
	} else {
		data[at]++
	}
	mustWrite(t, f.audit, data)
	seq := seqOfLine(t, data, line)
	want = append(want,
		fmt.Sprintf("invalid: %s line %d (seq %d): signature does not verify", filepath.Base(f.audit), line, seq),
		fmt.Sprintf("invalid: %s line %d (seq %d): prev does not match the line before (chain broken)", filepath.Base(f.audit), line+1, seq+1))

	code, out := f.verify(t)
	if code != 1 {
		t.Fatalf("aegis verify = exit %d; want 1\n%s", code, out)
	}
	var got []string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "invalid: ") {
			got = append(got, l)
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("aegis verify problems =\n%s\nwant, in this order,\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	cmd := exec.Command(aegisBin, "verify", "--json", "--key", "@"+f.key+".pub", f.audit)
	jout, _ := cmd.Output()
	var rep struct {
		Problems []struct {
			File string `json:"file"`
			Line uint64 `json:"line"`
			Msg  string `json:"msg"`
		} `json:"problems"`
	}
	if err := json.Unmarshal(jout, &rep); err != nil {
		t.Fatalf("aegis verify --json: %v\n%s", err, jout)
	}
	var gotJSON []string
	for _, p := range rep.Problems {
		gotJSON = append(gotJSON, fmt.Sprintf("%s:%d", filepath.Base(p.File), p.Line))
	}
	wantJSON := []string{
		filepath.Base(plain[0]) + ":2", filepath.Base(plain[0]) + ":3",
		filepath.Base(plain[1]) + ":2", filepath.Base(plain[1]) + ":3",
		fmt.Sprintf("%s:%d", filepath.Base(f.audit), line), fmt.Sprintf("%s:%d", filepath.Base(f.audit), line+1),
	}
	if strings.Join(gotJSON, " ") != strings.Join(wantJSON, " ") {
		t.Errorf("aegis verify --json problems at %v; want %v", gotJSON, wantJSON)
	}
}

// lineOffset returns the offset of line n (1-based) in b.
func lineOffset(b []byte, n int) int {
	off := 0
	for range n - 1 {
		off += bytes.IndexByte(b[off:], '\n') + 1
	}
	return off
}

// seqOfLine returns the seq of line n (1-based) of a log.
func seqOfLine(t *testing.T, b []byte, n int) uint64 {
	t.Helper()
	var r struct{ Seq uint64 }
	line := b[lineOffset(b, n):]
	line = line[:bytes.IndexByte(line, '\n')]
	if err := json.Unmarshal(line, &r); err != nil {
		t.Fatalf("line %d: %v", n, err)
	}
	return r.Seq
}

func mustWrite(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
