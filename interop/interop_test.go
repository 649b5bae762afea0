package interop

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// TestEverythingDirect runs the script against server-everything twice with
// no relay between: the script's expectations hold, and the normalized
// transcript is stable from run to run, which is what makes the comparison
// through wrap meaningful.
func TestEverythingDirect(t *testing.T) {
	t.Parallel() // it waits on Node and the children more than it runs
	argv := everythingArgv(t)
	first := runEverything(t, argv)
	second := runEverything(t, argv)
	if d := diffLines(first.transcript, second.transcript); d != "" {
		t.Errorf("two direct sessions differ (normalize more?):\n%s", d)
	}
	if len(first.sent) < len(everythingScript())+len(burstScript()) {
		t.Errorf("the client sent %d tools/call; want at least %d", len(first.sent), len(everythingScript())+len(burstScript()))
	}
	t.Logf("%d transcript lines, %d tools/call", len(first.transcript), len(first.sent))
}

// TestEverythingThroughWrap runs the same script once directly and once
// through `aegis wrap`: the client must not be able to tell the two apart,
// the audit log must hold exactly one intent and one outcome per tools/call
// sent and nothing else about the traffic, and `aegis verify` must accept
// the log against the key made for it.
func TestEverythingThroughWrap(t *testing.T) {
	t.Parallel() // it waits on Node and the children more than it runs
	argv := everythingArgv(t)
	dir := t.TempDir()
	aegis := buildAegis(t, dir)
	key := filepath.Join(dir, "key")
	pub := keygen(t, aegis, key)
	audit := filepath.Join(dir, "audit.jsonl")

	direct := runEverything(t, argv)
	wrapArgv := append([]string{aegis, "wrap", "--audit", audit, "--signing-key", key, "--"}, argv...)
	wrapped := runEverything(t, wrapArgv)
	if d := diffLines(direct.transcript, wrapped.transcript); d != "" {
		t.Errorf("the session through aegis wrap differs from the direct one:\n%s\naegis stderr:\n%s", d, wrapped.stderr)
	}

	out, err := exec.Command(aegis, "verify", "--key", "@"+key+".pub", audit).CombinedOutput()
	if err != nil {
		t.Errorf("aegis verify --key @%s.pub %s = %v; want exit 0\n%s", key, audit, err, out)
	} else if !strings.Contains(string(out), "pinned") || strings.Contains(string(out), "unpinned") {
		t.Errorf("aegis verify --key … said %q; want it to say the log is pinned", out)
	}

	checkAudit(t, audit, pub, wrapped)
}

// TestMain removes the binaries the tests share (built, goReader).
func TestMain(m *testing.M) {
	code := m.Run()
	for _, dir := range []string{built.dir, goReader.dir} {
		if dir != "" {
			os.RemoveAll(dir)
		}
	}
	os.Exit(code)
}

// sharedBuild is a program the tests build once per test binary, into a
// folder of its own that TestMain removes.
type sharedBuild struct {
	once     sync.Once
	dir, bin string
	out      []byte // the go command's output, when it failed
	err      error
}

// get builds b once, as name in its folder, with the go command goCmd
// makes (given the go binary and the folder), and returns its path,
// failing the test if the build failed.
func (b *sharedBuild) get(t *testing.T, name string, goCmd func(goBin, dir string) *exec.Cmd) string {
	t.Helper()
	b.once.Do(func() {
		goBin, err := exec.LookPath("go")
		if err != nil {
			b.err = fmt.Errorf("go is not on PATH: %w", err)
			return
		}
		if b.dir, b.err = os.MkdirTemp("", "aegis-interop-"+name+"-"); b.err != nil {
			return
		}
		b.bin = filepath.Join(b.dir, name)
		cmd := goCmd(goBin, b.dir)
		if b.out, b.err = cmd.CombinedOutput(); b.err != nil {
			b.err = fmt.Errorf("%s: %w", strings.Join(cmd.Args, " "), b.err)
		}
	})
	if b.err != nil {
		t.Fatalf("%v\n%s", b.err, b.out)
	}
	return b.bin
}

// built is the aegis binary, built by README's install (CGO_ENABLED=0 go
// install ./cmd/aegis, a release's build). Every test, the new users'
// among them, runs a link to it: a build of its own links the same bytes
// again.
var built sharedBuild

// installOnce runs README's install, once per test binary, and returns
// the binary it installed.
func installOnce(t *testing.T) string {
	t.Helper()
	return built.get(t, "aegis", func(goBin, dir string) *exec.Cmd {
		cmd := exec.Command(goBin, "install", "./cmd/aegis")
		cmd.Dir = ".."
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOBIN="+dir)
		return cmd
	})
}

// buildAegis puts the aegis binary at dir/aegis (a hard link to the one
// built for every test, or a copy where a link cannot be made) and
// returns its path.
func buildAegis(t *testing.T, dir string) string {
	t.Helper()
	installed := installOnce(t)
	bin := filepath.Join(dir, "aegis")
	if err := os.Link(installed, bin); err != nil {
		data, err := os.ReadFile(installed)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bin, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return bin
}

// keygen makes a key at path and returns the public key as printed.
func keygen(t *testing.T, aegis, path string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(aegis, "keygen", "--out", path)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("aegis keygen --out %s: %v\n%s", path, err, stderr.String())
	}
	pub := strings.TrimSpace(stdout.String())
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(pub, "ed25519:"))
	if !strings.HasPrefix(pub, "ed25519:") || err != nil || len(raw) != 32 {
		t.Fatalf("aegis keygen printed %q; want ed25519:<base64 of 32 bytes>", pub)
	}
	file, err := os.ReadFile(path + ".pub")
	if err != nil {
		t.Fatalf("aegis keygen wrote no %s.pub: %v", path, err)
	}
	if !bytes.Contains(file, raw) && !strings.Contains(string(file), pub) {
		t.Errorf("%s.pub = %q; want it to hold the key printed, %s", path, file, pub)
	}
	return pub
}

// auditRecord is the part of a schema v2 record this test reads.
type auditRecord struct {
	Seq    int64           `json:"seq"`
	Kind   string          `json:"kind"`
	Key    string          `json:"key"`    // session_start
	Cert   *auditCert      `json:"cert"`   // session_start: the root's certificate of Key
	Tool   *string         `json:"tool"`   // intent
	Call   json.RawMessage `json:"call"`   // intent, outcome
	Intent *int64          `json:"intent"` // outcome: seq of its intent
	Batch  json.RawMessage `json:"batch"`
	Bad    json.RawMessage `json:"malformed"`
	Exec   struct {
		Status string `json:"status"`
	} `json:"execution"` // outcome
	Reason string `json:"reason"` // session_end
}

// auditCert is the part of a session_start's certificate this test reads.
type auditCert struct {
	Root string `json:"root"`
}

// checkAudit holds the audit log to what the client did: one intent per
// tools/call sent, one outcome per intent with the status the client saw,
// nothing recorded for any other message, one session from start to end.
func checkAudit(t *testing.T, path, pub string, s *session) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("audit log: %v", err)
	}
	defer f.Close()
	kinds := map[string]int{}
	intents := map[int64]string{} // seq → tool
	outcomeOf := map[int64]string{}
	var intentTools, outcomes []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r auditRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		kinds[r.Kind]++
		switch r.Kind {
		case "session_start":
			// The records are signed by a session key, certified by
			// the key made for the test (journal/record/doc.go).
			if r.Cert == nil || r.Cert.Root != pub || r.Key == pub {
				t.Errorf("session_start key %q, cert %+v; want a session key certified by the key made for the test, %s", r.Key, r.Cert, pub)
			}
		case "intent":
			tool := "<null>"
			if r.Tool != nil {
				tool = *r.Tool
			}
			if r.Bad != nil || r.Batch != nil {
				t.Errorf("intent %d (%s) is malformed %s / in batch %s; the SDK sent neither", r.Seq, tool, r.Bad, r.Batch)
			}
			intents[r.Seq] = tool
			intentTools = append(intentTools, tool)
		case "outcome":
			if r.Intent == nil {
				t.Errorf("outcome %d names no intent", r.Seq)
				continue
			}
			tool, ok := intents[*r.Intent]
			if !ok {
				t.Errorf("outcome %d names intent %d, which is not an earlier intent", r.Seq, *r.Intent)
				continue
			}
			if prev, dup := outcomeOf[*r.Intent]; dup {
				t.Errorf("intent %d (%s) has a second outcome %d (first: %s)", *r.Intent, tool, r.Seq, prev)
			}
			outcomeOf[*r.Intent] = fmt.Sprint(r.Seq)
			outcomes = append(outcomes, tool+" "+r.Exec.Status)
		case "session_end":
			if r.Reason != "client_eof" {
				t.Errorf("session_end reason %q; want client_eof (the client closed stdin)", r.Reason)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading the audit log: %v", err)
	}
	if kinds["session_start"] != 1 || kinds["session_end"] != 1 {
		t.Errorf("audit log has %d session_start and %d session_end; want one of each", kinds["session_start"], kinds["session_end"])
	}
	if kinds["anomaly"] != 0 {
		t.Errorf("audit log has %d anomaly records; the SDK sends one JSON value per line", kinds["anomaly"])
	}
	for seq, tool := range intents {
		if _, ok := outcomeOf[seq]; !ok {
			t.Errorf("intent %d (%s) has no outcome", seq, tool)
		}
	}
	if got, want := sorted(intentTools), sorted(s.sent); !slices.Equal(got, want) {
		t.Errorf("intents are for tools\n%v\nwant one per tools/call sent\n%v", got, want)
	}
	if got, want := sorted(outcomes), sorted(s.outcomes); !slices.Equal(got, want) {
		t.Errorf("outcomes (tool status)\n%v\nwant what the client saw\n%v", got, want)
	}
}

func sorted(s []string) []string {
	return slices.Sorted(slices.Values(s))
}
