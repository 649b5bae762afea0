package main

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/aegisrelay/aegis/internal/exitcode"
	"github.com/aegisrelay/aegis/internal/witness"
	"github.com/aegisrelay/aegis/journal/record"
	"github.com/aegisrelay/aegis/journal/tlog"
)

// The witness these tests run is torchwood's litewitness (c2sp.org/
// tlog-witness), at the version go.mod's tool directive pins, built once
// per test binary from the module cache, with witnessctl, by one go build:
// the two share modernc.org/sqlite, which is compiled once that way (and
// kept in Go's build cache) instead of once per tool. Its key is served by
// an ssh-agent (x/crypto's agent, on a unix socket in the test's folder),
// as litewitness requires.
var (
	witnessToolsOnce sync.Once
	witnessToolPaths [2]string
	witnessToolsErr  error
)

func witnessTools(t testing.TB) (lite, ctl string) {
	t.Helper()
	witnessToolsOnce.Do(func() {
		gobin, err := exec.LookPath("go")
		if err != nil {
			gobin = filepath.Join(runtime.GOROOT(), "bin", "go")
		}
		dir := filepath.Join(filepath.Dir(aegisBin), "witness-tools")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			witnessToolsErr = err
			return
		}
		cmd := exec.Command(gobin, "build", "-o", dir+string(filepath.Separator),
			"filippo.io/torchwood/cmd/litewitness", "filippo.io/torchwood/cmd/witnessctl")
		if out, err := cmd.CombinedOutput(); err != nil {
			witnessToolsErr = &buildError{err, out}
			return
		}
		witnessToolPaths = [2]string{filepath.Join(dir, "litewitness"), filepath.Join(dir, "witnessctl")}
	})
	if witnessToolsErr != nil {
		t.Fatalf("building litewitness: %v", witnessToolsErr)
	}
	return witnessToolPaths[0], witnessToolPaths[1]
}

type buildError struct {
	err error
	out []byte
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + string(e.out) }

// liteWitness is a running litewitness on loopback.
type liteWitness struct {
	name, url, vkey, db, ctl string
	cmd                      *exec.Cmd
}

// startWitness runs a litewitness named name, with a fresh key in an
// ssh-agent of its own and a fresh database, on a free loopback port.
func startWitness(t *testing.T, name string) *liteWitness {
	t.Helper()
	lite, ctl := witnessTools(t)
	dir, err := os.MkdirTemp("", "aw-") // short: a unix socket's path is at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "agent.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	_, priv, _ := ed25519.GenerateKey(nil)
	keyring := agent.NewKeyring()
	if err := keyring.Add(agent.AddedKey{PrivateKey: priv}); err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { agent.ServeAgent(keyring, c); c.Close() }()
		}
	}()
	sshPub, err := ssh.NewPublicKey(priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	addr := freePort(t)
	w := &liteWitness{name: name, url: "http://" + addr, db: filepath.Join(dir, "w.db"), ctl: ctl}
	w.cmd = exec.Command(lite, "-db", w.db, "-name", name, "-key", ssh.FingerprintSHA256(sshPub), "-ssh-agent", sock, "-listen", addr)
	stderr, err := w.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.cmd.Process.Kill(); w.cmd.Wait() })
	vkeyRE := regexp.MustCompile(`vkey=(\S+)`)
	got := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			if m := vkeyRE.FindStringSubmatch(sc.Text()); m != nil && !sent {
				got <- m[1]
				sent = true
			}
		}
		if !sent {
			close(got)
		}
	}()
	select {
	case w.vkey = <-got:
	case <-time.After(20 * time.Second):
	}
	if w.vkey == "" {
		t.Fatal("litewitness did not say its verifier key")
	}
	for deadline := time.Now().Add(20 * time.Second); ; {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("litewitness does not listen on %s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return w
}

// freePort returns a loopback address no one listens on now.
func freePort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// deadWitnesses returns two --witness flags whose witnesses never cosign:
// one at a closed port, one that accepts connections and never answers
// (held open until the test ends).
func deadWitnesses(t testing.TB) []string {
	t.Helper()
	flags, _ := deadWitnessesSeen(t)
	return flags
}

// deadWitnessesSeen is deadWitnesses, and a count of the checkpoint
// submissions (POST /add-checkpoint requests, read whole) the listener
// that never answers has received.
func deadWitnessesSeen(t testing.TB) ([]string, *atomic.Int64) {
	t.Helper()
	closed := freePort(t)
	hole, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	seen := new(atomic.Int64)
	acceptAll(t, hole, func(c net.Conn) {
		r := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(r)
			if err != nil {
				return
			}
			_, err = io.Copy(io.Discard, req.Body)
			if err == nil && req.Method == http.MethodPost && req.URL.Path == witness.AddCheckpointPath {
				seen.Add(1)
			}
		}
	})
	_, k1, _ := ed25519.GenerateKey(nil)
	_, k2, _ := ed25519.GenerateKey(nil)
	v1, err := witness.CosignatureKey("example.com/closed", k1.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	v2, err := witness.CosignatureKey("example.com/hole", k2.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	return []string{"--witness", "http://" + closed + "," + v1, "--witness", "http://" + hole.Addr().String() + "," + v2}, seen
}

// addLog makes the witness know the log: its origin and key, as its
// operator would with witnessctl.
func (w *liteWitness) addLog(t *testing.T, origin, vkey string) {
	t.Helper()
	for _, args := range [][]string{
		{"add-log", "-db", w.db, "-origin", origin},
		{"add-key", "-db", w.db, "-origin", origin, "-key", vkey},
	} {
		if out, err := exec.Command(w.ctl, args...).CombinedOutput(); err != nil {
			t.Fatalf("witnessctl %v: %v\n%s", args, err, out)
		}
	}
}

func (w *liteWitness) flag() string { return w.url + "," + w.vkey }

// witnessFixture is a log with a checkpoint file, and its key.
type witnessFixture struct {
	*fixture
	cp  string
	pub ed25519.PublicKey
}

func newWitnessFixture(t *testing.T) *witnessFixture {
	f := &witnessFixture{fixture: newFixture(t)}
	f.cp = filepath.Join(f.dir, "audit.checkpoint")
	pub, err := record.ReadPublicKeyFile(f.key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	f.pub = pub
	return f
}

// session runs one wrap session of n calls with extra flags and returns
// its exit status and stderr.
func (f *witnessFixture) session(t *testing.T, n int, extra ...string) (int, string) {
	t.Helper()
	args := append([]string{"--checkpoint-file", f.cp, "--checkpoint-every", "1"}, extra...)
	cmd := f.wrapCmd(args, child("echo")...)
	cmd.Stdin = strings.NewReader(strings.Repeat(callLine, n))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	runBounded(t, cmd, 60*time.Second)
	return cmd.ProcessState.ExitCode(), stderr.String()
}

// origin returns the log's origin and note verifier key, from its
// checkpoint file.
func (f *witnessFixture) origin(t *testing.T) (string, string) {
	t.Helper()
	c, err := tlog.ReadCheckpoint(f.cp, f.pub)
	if err != nil {
		t.Fatal(err)
	}
	vkey, err := tlog.VerifierKey(c.Origin, f.pub)
	if err != nil {
		t.Fatal(err)
	}
	return c.Origin, vkey
}

// witnessedLog is a log whose second session two real witnesses cosigned.
func witnessedLog(t *testing.T) (*witnessFixture, *liteWitness, *liteWitness) {
	t.Helper()
	f := newWitnessFixture(t)
	if code, errOut := f.session(t, 1); code != 0 {
		t.Fatalf("first session: exit %d\n%s", code, errOut)
	}
	origin, vkey := f.origin(t)
	w1, w2 := startWitness(t, "example.com/w1"), startWitness(t, "example.com/w2")
	w1.addLog(t, origin, vkey)
	w2.addLog(t, origin, vkey)
	code, errOut := f.session(t, 3, "--witness", w1.flag(), "--witness", w2.flag())
	if code != 0 {
		t.Fatalf("witnessed session: exit %d\n%s", code, errOut)
	}
	for _, w := range []*liteWitness{w1, w2} {
		if !strings.Contains(errOut, "witness "+w.name+" ("+w.url+") cosigned the last checkpoint") {
			t.Errorf("wrap's stderr does not say %s cosigned the last checkpoint:\n%s", w.name, errOut)
		}
	}
	return f, w1, w2
}

// TestWitnessCosigns: wrap --witness submits its checkpoints to two
// running litewitnesses, which cosign them; the cosigned checkpoints are
// kept in CHECKPOINT.witnessed, which x/mod's note package opens with
// the witnesses' keys, verify --witness accepts, and prove check
// --witness accepts for one call, holding only the log's public key, the
// witnesses' keys and that file. A cosignature changed, one removed, or
// a witness that never cosigned: exit 1.
func TestWitnessCosigns(t *testing.T) {
	t.Parallel()
	f, w1, w2 := witnessedLog(t)
	data, err := os.ReadFile(f.cp + witness.WitnessedExt)
	if err != nil {
		t.Fatal(err)
	}
	notes := tlog.Split(data)
	last := notes[len(notes)-1]
	ws := make([]witness.Witness, 2)
	for i, w := range []*liteWitness{w1, w2} {
		if ws[i], err = witness.New(w.url, w.vkey); err != nil {
			t.Fatal(err)
		}
	}
	if idx, err := witness.Cosigners(last, ws); err != nil || len(idx) != 2 {
		t.Fatalf("Cosigners(the last witnessed checkpoint) = %v, %v; want both", idx, err)
	}
	final, err := tlog.ReadCheckpoint(f.cp, f.pub)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := tlog.Open(last, f.pub); err != nil || c != final {
		t.Errorf("the last witnessed checkpoint = %+v, %v; want the session's last, %+v", c, err, final)
	}
	state, err := os.ReadFile(f.cp + witness.StateExt)
	if err != nil || !bytes.Contains(state, []byte("quorum 2 of 2: met")) || bytes.Count(state, []byte("state=ok")) != 2 {
		t.Errorf("the state file = %q, %v; want both witnesses ok and the quorum met", state, err)
	}

	pubArg := "@" + f.key + ".pub"
	verify := func(cpFile string, keys ...string) (int, string) {
		args := []string{"verify", "--key", pubArg, "--checkpoint", cpFile}
		for _, k := range keys {
			args = append(args, "--witness", k)
		}
		code, out, errOut := runAegis(t, append(args, f.audit)...)
		return code, string(out) + errOut
	}
	if code, out := verify(f.cp+witness.WitnessedExt, w1.vkey, w2.vkey); code != 0 || !strings.Contains(out, "carry valid cosignatures") {
		t.Errorf("verify --witness w1 --witness w2 = exit %d; want 0\n%s", code, out)
	}
	code, proof, errOut := runAegis(t, "prove", "inclusion", "--checkpoint", f.cp+witness.WitnessedExt, "--seq", "5", "--key", pubArg, f.audit)
	if code != 0 {
		t.Fatalf("prove inclusion = exit %d\n%s", code, errOut)
	}
	proofFile := writeProveFile(t, filepath.Join(f.dir, "seq5.proof"), proof)
	check := func(cpFile string, keys ...string) (int, string) {
		args := []string{"prove", "check", "--key", pubArg, "--checkpoint", cpFile, "--proof", proofFile}
		for _, k := range keys {
			args = append(args, "--witness", k)
		}
		code, out, errOut := runAegis(t, args...)
		return code, string(out) + errOut
	}
	if code, out := check(f.cp+witness.WitnessedExt, w1.vkey); code != 0 || !strings.Contains(out, "cosigned by the witness(es) "+w1.name) {
		t.Errorf("prove check --witness w1 = exit %d; want 0 naming it\n%s", code, out)
	}

	// A consistency proof from the first session's checkpoint to the
	// witnessed one checks with --witness against the witnessed file,
	// and not against the log's own checkpoint file, which no witness
	// signed.
	hist := tlog.Split(mustReadT(t, f.cp+".history"))
	oldFile := writeProveFile(t, filepath.Join(f.dir, "first.checkpoint"), hist[0])
	code, cproof, errOut := runAegis(t, "prove", "consistency", "--old", oldFile, "--new", f.cp+witness.WitnessedExt, "--key", pubArg, f.audit)
	if code != 0 {
		t.Fatalf("prove consistency = exit %d\n%s", code, errOut)
	}
	cproofFile := writeProveFile(t, filepath.Join(f.dir, "week.proof"), cproof)
	for _, tc := range []struct {
		newFile string
		want    int
	}{{f.cp + witness.WitnessedExt, 0}, {f.cp, exitcode.Invalid}} {
		code, out, errOut := runAegis(t, "prove", "check", "--key", pubArg, "--witness", w2.vkey, "--old", oldFile, "--new", tc.newFile, "--proof", cproofFile)
		if code != tc.want {
			t.Errorf("prove check --witness w2 --new %s (consistency) = exit %d; want %d\n%s%s", tc.newFile, code, tc.want, out, errOut)
		}
	}

	// The tampered files hold the last witnessed checkpoint alone.
	sigLine := func(name string) []byte {
		for _, l := range bytes.SplitAfter(last, []byte("\n")) {
			if bytes.HasPrefix(l, []byte("— "+name+" ")) {
				return l
			}
		}
		t.Fatalf("no signature line of %s in %q", name, last)
		return nil
	}
	l1 := sigLine(w1.name)
	b64 := strings.Fields(string(l1))[2]
	// Character 60 encodes bytes 45 and 46: within the Ed25519
	// signature (after the key hash and the timestamp), clear of the
	// padding bits a decoder ignores.
	raw := []byte(b64)
	if raw[60] == 'A' {
		raw[60] = 'B'
	} else {
		raw[60] = 'A'
	}
	tampered := bytes.Replace(last, l1, []byte("— "+w1.name+" "+string(raw)+"\n"), 1)
	_, w3priv, _ := ed25519.GenerateKey(nil)
	never, err := witness.CosignatureKey("example.com/never", w3priv.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		note []byte
		keys []string
		want string
	}{
		{"a cosignature changed", tampered, []string{w1.vkey}, "invalid"},
		{"a cosignature removed", bytes.Replace(last, sigLine(w2.name), nil, 1), []string{w1.vkey, w2.vkey}, "only"},
		{"a witness that never cosigned", last, []string{w1.vkey, never}, "only"},
		{"the log's checkpoint, not witnessed", mustReadT(t, f.cp), []string{w1.vkey}, "no cosignature"},
	} {
		file := writeProveFile(t, filepath.Join(t.TempDir(), "cp.witnessed"), tc.note)
		if code, out := verify(file, tc.keys...); code != exitcode.Invalid || !strings.Contains(out, tc.want) {
			t.Errorf("%s: verify --witness = exit %d; want 1 saying %q\n%s", tc.name, code, tc.want, out)
		}
		if code, out := check(file, tc.keys...); code != exitcode.Invalid || !strings.Contains(out, "not witnessed") {
			t.Errorf("%s: prove check --witness = exit %d; want 1\n%s", tc.name, code, out)
		}
	}
}

func mustReadT(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestWitnessRollbackAndFork: an older copy of the log (with its
// checkpoint files) put back while the witness holds a later checkpoint
// of it, and a fork (the older copy continued without the witness: same
// origin, other records), are refused at the start of wrap
// --witness-strict (exit 2, the log left as it was) by what the witness
// answers (409 with a larger size; 422 for the fork's proof), and the
// fork's checkpoints fail verify --witness and the witnessed checkpoint
// (exit 1). Without --witness-strict the same answers, which nothing
// authenticates, are said and recorded, and the session goes on.
func TestWitnessRollbackAndFork(t *testing.T) {
	t.Parallel()
	f := newWitnessFixture(t)
	if code, errOut := f.session(t, 1); code != 0 {
		t.Fatalf("first session: exit %d\n%s", code, errOut)
	}
	origin, vkey := f.origin(t)
	w := startWitness(t, "example.com/w1")
	w.addLog(t, origin, vkey)
	files := []string{f.audit, f.cp, f.cp + ".history", f.cp + witness.WitnessedExt}
	if code, errOut := f.session(t, 1, "--witness", w.flag()); code != 0 {
		t.Fatalf("witnessed session: exit %d\n%s", code, errOut)
	}
	older := map[string][]byte{}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		older[p] = b
	}
	if code, errOut := f.session(t, 1, "--witness", w.flag()); code != 0 {
		t.Fatalf("second witnessed session: exit %d\n%s", code, errOut)
	}
	witnessed := mustReadT(t, f.cp+witness.WitnessedExt)
	putBack := func() {
		for p, data := range older {
			if err := os.WriteFile(p, data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}

	for _, tc := range []struct {
		name   string
		remove []string
	}{
		{"rollback", nil},
		{"rollback, its checkpoint files removed", []string{f.cp, f.cp + ".history"}},
	} {
		putBack()
		for _, p := range tc.remove {
			os.Remove(p)
		}
		code, errOut := f.session(t, 1, "--witness", w.flag(), "--witness-strict")
		if code != exitcode.Usage || !strings.Contains(errOut, "rolled back") || !strings.Contains(errOut, "larger tree") {
			t.Errorf("%s: wrap = exit %d; want 2 saying the witness holds a larger tree\n%s", tc.name, code, errOut)
		}
		if got := readAudit(f.audit); !bytes.Equal(got, bytes.TrimRight(older[f.audit], "\x00")) {
			t.Errorf("%s: wrap changed the log it refused", tc.name)
		}
	}
	putBack()

	// The fork: the older copy continued without the witness, as long
	// as the witness's tree, with other records.
	if code, errOut := f.session(t, 1); code != 0 {
		t.Fatalf("the fork's session: exit %d\n%s", code, errOut)
	}
	forked := readAudit(f.audit)
	code, errOut := f.session(t, 1, "--witness", w.flag(), "--witness-strict")
	if code != exitcode.Usage || !strings.Contains(errOut, "forked") || !strings.Contains(errOut, "consistency proof refused") {
		t.Errorf("fork: wrap = exit %d; want 2 saying the witness refused the proof\n%s", code, errOut)
	}
	if got := readAudit(f.audit); !bytes.Equal(got, forked) {
		t.Error("fork: wrap changed the log it refused")
	}
	pubArg := "@" + f.key + ".pub"
	code, out, errOut2 := runAegis(t, "verify", "--key", pubArg, "--checkpoint", f.cp+".history", "--witness", w.vkey, f.audit)
	if code != exitcode.Invalid || !strings.Contains(string(out), "no cosignature") {
		t.Errorf("verify --witness of the fork's checkpoints = exit %d; want 1\n%s%s", code, out, errOut2)
	}
	wfile := writeProveFile(t, filepath.Join(t.TempDir(), "w"), witnessed)
	code, out, errOut2 = runAegis(t, "verify", "--key", pubArg, "--checkpoint", wfile, "--witness", w.vkey, f.audit)
	if code != exitcode.Invalid || !strings.Contains(string(out), "fork") && !strings.Contains(string(out), "rewritten") {
		t.Errorf("verify of the fork against the witnessed checkpoints = exit %d; want 1\n%s%s", code, out, errOut2)
	}

	// Without --witness-strict the fork goes on, and says what the
	// witness answered; the witness cosigns none of it.
	code, errOut = f.session(t, 1, "--witness", w.flag())
	if code != 0 || !strings.Contains(errOut, "consistency proof refused") || !strings.Contains(errOut, "nothing authenticates") || !strings.Contains(errOut, "NOT witnessed") {
		t.Errorf("fork without --witness-strict: wrap = exit %d; want 0 saying the witness refused the proof\n%s", code, errOut)
	}
	if state := string(mustReadT(t, f.cp+witness.StateExt)); !strings.Contains(state, "state=fork cosigned=0 start=fork") {
		t.Errorf("fork without --witness-strict: the state file does not say the witness refused the fork's proof:\n%s", state)
	}
	f.mustVerify(t, 0)
}

// TestWitnessUnreachable: a witness whose port is closed and one that
// accepts connections and never answers change nothing for the calls:
// each is answered at once (well within --witness-timeout, which a call
// waiting on a witness would take), the session ends normally, the log
// verifies, and the witnesses' state is said on stderr and kept in the
// state file.
func TestWitnessUnreachable(t *testing.T) {
	t.Parallel()
	f := newWitnessFixture(t)
	if code, errOut := f.session(t, 1); code != 0 {
		t.Fatalf("first session: exit %d\n%s", code, errOut)
	}
	dead := deadWitnesses(t)
	const timeout = 1500 * time.Millisecond
	cmd := f.wrapCmd(append([]string{"--checkpoint-file", f.cp, "--checkpoint-every", "1", "--witness-timeout", timeout.String()}, dead...), child("echo")...)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := bufio.NewReader(outPipe)
	call := func(id int) time.Duration {
		t0 := time.Now()
		in.Write([]byte(`{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/call","params":{"name":"x"}}` + "\n"))
		line, err := out.ReadString('\n')
		if err != nil || !strings.Contains(line, `"id":`+strconv.Itoa(id)) {
			t.Fatalf("call %d: %q, %v\n%s", id, line, err, stderr.String())
		}
		return time.Since(t0)
	}
	call(1) // its time includes the start of wrap and of the child
	for id := 2; id <= 8; id++ {
		if d := call(id); d >= timeout/2 {
			t.Errorf("call %d took %v with the witnesses unreachable; want it unaffected (well under %v)", id, d, timeout)
		}
		time.Sleep(120 * time.Millisecond) // a checkpoint, and its submission, between calls
	}
	in.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("wrap did not end\n%s", stderr.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("wrap = exit %d; want 0\n%s", code, stderr.String())
	}
	errOut := stderr.String()
	for _, want := range []string{"example.com/closed", "example.com/hole", "unreachable", "NOT witnessed"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("wrap's stderr does not say %q:\n%s", want, errOut)
		}
	}
	for _, name := range []string{"example.com/closed", "example.com/hole"} {
		if n := strings.Count(errOut, "witness "+name+" (http"); n > 3 {
			t.Errorf("%d lines about %s; want them rate-limited (one at the start, one at the end)\n%s", n, name, errOut)
		}
	}
	state := string(mustReadT(t, f.cp+witness.StateExt))
	for _, want := range []string{"witness example.com/closed state=unreachable cosigned=0 start=unreachable", "witness example.com/hole state=unreachable cosigned=0 start=unreachable", "quorum 2 of 2: not met"} {
		if !strings.Contains(state, want) {
			t.Errorf("the state file does not hold %q:\n%s", want, state)
		}
	}
	f.mustVerify(t, 0)
}
