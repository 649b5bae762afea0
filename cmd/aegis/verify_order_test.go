package main

import (
	"bytes"
	"encoding/json"
	"errors"
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
// at its line, before the broken chain of the line after it (and the
// attestation of it that line carries), and before every problem of a
// later file.
func TestVerifyProblemsInFileOrder(t *testing.T) {
	f := newFixture(t)
	// strict: every record is attested by the next one.
	f.drive(t, []string{"--durability", "strict", "--audit-max-size", "4KiB"}, 60, 1)
	plain, _ := segmentsIn(t, f.dir)
	if len(plain) < 3 {
		t.Fatalf("segments = %v; want at least 3", plain)
	}
	// A signature (a record's own or an attestation it carries) changed
	// from line 2 on, in the first and the second segment and in the last
	// file that holds one before its last line: the live file, or where
	// the rotation left it too few lines (record lengths vary with their
	// timestamps and latencies) the last segment.
	third := f.audit
	if bytes.Count(readAudit(third), []byte("\n")) < 3 {
		third = plain[len(plain)-1]
	}
	var want, wantJSON []string
	for _, seg := range []string{plain[0], plain[1], third} {
		data := readAudit(seg)
		at := lineOffset(data, 2)
		i := at + bytes.Index(data[at:], []byte(`"sig":"ed25519:`))
		if i < at || bytes.IndexByte(data[i:], '\n') == len(data[i:])-1 {
			t.Fatalf("%s holds no signature from line 2 before its last line:\n%s", seg, data)
		}
		what := "signature does not verify"
		if a := bytes.LastIndex(data[:i], []byte(`"att":{"seq":`)); a >= 0 && strings.Trim(string(data[a+len(`"att":{"seq":`):i]), "0123456789") == "," {
			what = "attestation does not verify"
		}
		i += len(`"sig":"ed25519:`) + 10
		if data[i] == 'A' {
			data[i] = 'B'
		} else {
			data[i] = 'A'
		}
		mustWrite(t, seg, data)
		line := bytes.Count(data[:i], []byte("\n")) + 1
		seq := seqOfLine(t, data, line)
		want = append(want,
			fmt.Sprintf("invalid: %s line %d (seq %d): %s", filepath.Base(seg), line, seq, what),
			fmt.Sprintf("invalid: %s line %d (seq %d): prev does not match the line before (chain broken)", filepath.Base(seg), line+1, seq+1))
		wantJSON = append(wantJSON, fmt.Sprintf("%s:%d", filepath.Base(seg), line), fmt.Sprintf("%s:%d", filepath.Base(seg), line+1))
		// The line after it attests it, as it was signed: not as read.
		if next := data[lineOffset(data, line+1):]; bytes.Contains(next[:bytes.IndexByte(next, '\n')], fmt.Appendf(nil, `"att":{"seq":%d,`, seq)) {
			want = append(want, fmt.Sprintf("invalid: %s line %d (seq %d): attestation does not verify", filepath.Base(seg), line+1, seq+1))
			wantJSON = append(wantJSON, fmt.Sprintf("%s:%d", filepath.Base(seg), line+1))
		}
	}

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
	jout, err := cmd.Output()
	if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("aegis verify --json = %v; want exit 1 (invalid)", err)
	}
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
