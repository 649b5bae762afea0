package main

import (
	"bufio"
	"bytes"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/aegisrelay/aegis/internal/interleave"
	"github.com/aegisrelay/aegis/journal/record"
	"github.com/aegisrelay/aegis/journal/record/agentkey"
	"github.com/aegisrelay/aegis/journal/tlog"
	"github.com/aegisrelay/aegis/journal/verify/verifyjson"
)

// sshTool runs one of OpenSSH's tools (ssh-keygen, ssh-add) and returns
// its output.
func sshTool(t testing.TB, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// sshKey makes a key of type typ with ssh-keygen in dir and returns its
// path and its SHA256 fingerprint.
func sshKey(t testing.TB, dir, name, typ string) (path, fp string) {
	t.Helper()
	path = filepath.Join(dir, name)
	sshTool(t, nil, "ssh-keygen", "-q", "-t", typ, "-N", "", "-C", "aegis-test-"+name, "-f", path)
	fields := strings.Fields(sshTool(t, nil, "ssh-keygen", "-lf", path+".pub"))
	if len(fields) < 2 || !strings.HasPrefix(fields[1], "SHA256:") {
		t.Fatalf("ssh-keygen -lf: %q; want BITS SHA256:… COMMENT (TYPE)", fields)
	}
	return path, fields[1]
}

// startSSHAgent starts OpenSSH's ssh-agent in the foreground on a socket
// of its own and returns the socket's path once the agent listens on it
// (it prints its SSH_AUTH_SOCK line after binding). The agent is killed
// when the test ends.
func startSSHAgent(t testing.TB) string {
	t.Helper()
	if _, err := exec.LookPath("ssh-agent"); err != nil {
		t.Fatalf("ssh-agent: %v (the tests of --signing-key ssh-agent: drive OpenSSH's; apt-get install openssh-client)", err)
	}
	dir, err := os.MkdirTemp("", "aegis-agent-") // short: a socket path holds at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "agent.sock")
	cmd := exec.Command("ssh-agent", "-D", "-a", sock)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.Contains(line, "SSH_AUTH_SOCK="+sock) {
		t.Fatalf("ssh-agent -D -a %s printed %q, %v; want its SSH_AUTH_SOCK line", sock, line, err)
	}
	return sock
}

// countingAgent is an ssh-agent keyring that counts the signatures asked
// of it.
type countingAgent struct {
	agent.Agent
	signs atomic.Int64
}

func (c *countingAgent) Sign(key ssh.PublicKey, data []byte) (*ssh.Signature, error) {
	c.signs.Add(1)
	return c.Agent.Sign(key, data)
}

// serveCountingAgent serves a keyring holding key on a unix socket, as
// ssh-agent does, and returns the socket, the keyring, and stop, which
// closes the socket and every connection to it (an agent gone).
func serveCountingAgent(t testing.TB, key ed25519.PrivateKey) (string, *countingAgent, func()) {
	t.Helper()
	ring := &countingAgent{Agent: agent.NewKeyring()}
	if err := ring.Add(agent.AddedKey{PrivateKey: key, Comment: "counted"}); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "aegis-agent-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "agent.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	stop := acceptAll(t, l, func(c net.Conn) { agent.ServeAgent(ring, c) })
	return sock, ring, stop
}

// echoCalls drives n tools/call through a wrap of the demo server and
// closes the session; wrap must exit 0.
func echoCalls(t *testing.T, f *fixture, extra, env []string, n int) {
	t.Helper()
	s := f.start(t, extra, env, aegisBin, "__demo-server")
	for i := range n {
		s.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"call %d"}}}`, i, i))
		if got, want := s.recv(), fmt.Sprintf(`"text":"call %d"`, i); !strings.Contains(got, want) {
			t.Fatalf("answer %d = %s; want one holding %s", i, got, want)
		}
	}
	s.stdin.Close()
	if code := s.wait(30 * time.Second); code != 0 {
		t.Fatalf("wrap exited %d; want 0 (stderr: %s)", code, s.stderr)
	}
}

// aegisOut runs the aegis binary (aegisRun) and returns its exit code and
// its stdout and stderr together.
func aegisOut(t *testing.T, args ...string) (int, string) {
	t.Helper()
	code, out, errs := aegisRun(t, args...)
	return code, out + errs
}

func exitCode(err error) int {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// TestSSHAgentSigningKey drives wrap --signing-key ssh-agent:… as a user
// does: a key made by ssh-keygen, added to OpenSSH's ssh-agent, named by
// its fingerprint, its .pub file and its public key in three sessions on
// one log (the second with a head file and checkpoints, which the root
// signs through the agent). verify pinned to the .pub ssh-keygen wrote,
// in each form a user has it, passes; a log changed by one byte, or
// pinned to another key, exits 1.
func TestSSHAgentSigningKey(t *testing.T) {
	f := newFixture(t)
	sock := startSSHAgent(t)
	env := []string{"SSH_AUTH_SOCK=" + sock}
	key, fp := sshKey(t, f.dir, "id_ed25519", "ed25519")
	sshTool(t, env, "ssh-add", "-q", key)
	pubText, err := os.ReadFile(key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	head, cp := filepath.Join(f.dir, "audit.head"), filepath.Join(f.dir, "audit.checkpoint")
	for _, spec := range [][]string{
		{"--signing-key", "ssh-agent:" + fp},
		{"--signing-key", "ssh-agent:" + key + ".pub", "--head-file", head, "--checkpoint-file", cp},
		{"--signing-key", "ssh-agent:" + strings.TrimSpace(string(pubText))},
	} {
		echoCalls(t, f, spec, env, 5)
	}
	pub, err := record.ReadPublicKeyFile(key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	for _, pin := range []string{"@" + key + ".pub", strings.TrimSpace(string(pubText)), record.FormatPublicKey(pub)} {
		code, out := aegisOut(t, "verify", "--key", pin, f.audit)
		if code != 0 || !strings.Contains(out, "VALID") || !strings.Contains(out, "3 sessions") {
			t.Errorf("verify --key %s = %d\n%s; want 0, valid, 3 sessions", pin, code, out)
		}
	}
	var rep struct {
		Sessions []struct {
			Key        string `json:"key"`
			SessionKey string `json:"session_key"`
		} `json:"sessions"`
	}
	code, out, _ := aegisRun(t, "verify", "--json", "--key", "@"+key+".pub", f.audit)
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 || len(rep.Sessions) != 3 {
		t.Fatalf("verify --json = %d, %v\n%s; want 0 and 3 sessions", code, err, out)
	}
	for i, s := range rep.Sessions {
		if s.Key != record.FormatPublicKey(pub) || s.SessionKey == "" || s.SessionKey == s.Key {
			t.Errorf("verify --json session %d: key %s, session_key %q; want the agent's key and a session key it certified", i, s.Key, s.SessionKey)
		}
	}
	if code, out := aegisOut(t, "verify", "--key", "@"+key+".pub", "--head-file", head, "--checkpoint", cp, f.audit); code != 0 {
		t.Errorf("verify --head-file --checkpoint = %d\n%s; want 0: the root signed them through the agent", code, out)
	}
	if code, out := aegisOut(t, "verify", "--key", f.pub, f.audit); code != 1 || !strings.Contains(out, "not the pinned key") {
		t.Errorf("verify pinned to another key = %d\n%s; want 1, not the pinned key", code, out)
	}
	data := readAudit(f.audit)
	i := bytes.Index(data, []byte(`"tool":"echo"`))
	if i < 0 {
		t.Fatalf("no intent for echo in the log")
	}
	tampered := bytes.Clone(data)
	i += len(`"tool":"e`)
	tampered[i] ^= 1
	tp := filepath.Join(f.dir, "tampered.jsonl")
	if err := os.WriteFile(tp, tampered, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out := aegisOut(t, "verify", "--key", "@"+key+".pub", tp); code != 1 {
		t.Errorf("verify of the log with one byte changed = %d\n%s; want 1", code, out)
	}
}

// TestSSHAgentRefused: a --signing-key ssh-agent:… that cannot be had is
// refused with exit 2 and a reason, before the log is created: no agent,
// an agent that is not there, a key it does not hold, a key that is not
// Ed25519.
func TestSSHAgentRefused(t *testing.T) {
	f := newFixture(t)
	sock := startSSHAgent(t)
	ed, edFP := sshKey(t, f.dir, "id_ed25519", "ed25519")
	_, absentFP := sshKey(t, f.dir, "absent", "ed25519")
	ec, ecFP := sshKey(t, f.dir, "id_ecdsa", "ecdsa")
	env := []string{"SSH_AUTH_SOCK=" + sock}
	sshTool(t, env, "ssh-add", "-q", ed, ec)
	tests := []struct {
		name, sock, spec, want string
	}{
		{"no agent", "", edFP, "SSH_AUTH_SOCK is not set"},
		{"agent gone", filepath.Join(f.dir, "no-agent.sock"), edFP, "cannot reach the ssh-agent"},
		{"key absent", sock, absentFP, "holds no key " + absentFP},
		{"not Ed25519", sock, ecFP, "not Ed25519"},
		{"not a key", sock, "nothing-here.pub", "nothing-here.pub"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := f.wrapCmd([]string{"--signing-key", "ssh-agent:" + tt.spec}, aegisBin, "__demo-server")
			cmd.Env = append(os.Environ(), "SSH_AUTH_SOCK="+tt.sock)
			out, err := cmd.CombinedOutput()
			if code := exitCode(err); code != 2 || !strings.Contains(string(out), tt.want) {
				t.Errorf("wrap --signing-key ssh-agent:%s = %d\n%s; want 2 and %q", tt.spec, code, out, tt.want)
			}
			if _, err := os.Stat(f.audit); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the audit log exists after a refused key (%v); want none", err)
			}
		})
	}
}

// TestSSHAgentOneRoundTripPerSession: with the root key in an agent,
// wrap asks it for one signature per session (the session key's
// certificate), however many calls the session records; checkpoints and
// the head file cost one each, off the calls' path.
func TestSSHAgentOneRoundTripPerSession(t *testing.T) {
	f := newFixture(t)
	_, root, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sock, ring, _ := serveCountingAgent(t, root)
	env := []string{"SSH_AUTH_SOCK=" + sock}
	spec := []string{"--signing-key", "ssh-agent:" + record.FormatPublicKey(root.Public().(ed25519.PublicKey))}
	const calls = 100
	echoCalls(t, f, spec, env, calls)
	if n := ring.signs.Load(); n != 1 {
		t.Errorf("agent signatures for a session of %d calls = %d; want 1", calls, n)
	}
	if recs := len(f.records(t)); recs < 2*calls {
		t.Fatalf("%d records; want at least %d", recs, 2*calls)
	}

	ring.signs.Store(0)
	cp := filepath.Join(f.dir, "audit.checkpoint")
	echoCalls(t, f, append(spec, "--checkpoint-file", cp, "--checkpoint-every", "10", "--checkpoint-interval", "-1s"), env, calls)
	hist, err := os.ReadFile(cp + ".history")
	if err != nil {
		t.Fatal(err)
	}
	notes := len(tlog.Split(hist))
	if n := ring.signs.Load(); n != int64(1+notes) || notes == 0 {
		t.Errorf("agent signatures with %d checkpoints = %d; want 1 + %d", notes, n, notes)
	}
	pub := record.FormatPublicKey(root.Public().(ed25519.PublicKey))
	if code, out := aegisOut(t, "verify", "--key", pub, "--checkpoint", cp, f.audit); code != 0 {
		t.Errorf("verify = %d\n%s; want 0", code, out)
	}
}

// TestSSHAgentGoneMidSession: an agent that goes away during a session
// cannot sign the next checkpoint; the journal fails closed, as when a
// write fails (exit 74, nothing more relayed), and what was recorded
// still verifies.
func TestSSHAgentGoneMidSession(t *testing.T) {
	f := newFixture(t)
	_, root, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sock, _, stop := serveCountingAgent(t, root)
	pub := record.FormatPublicKey(root.Public().(ed25519.PublicKey))
	cp := filepath.Join(f.dir, "audit.checkpoint")
	s := f.start(t, []string{"--signing-key", "ssh-agent:" + pub, "--checkpoint-file", cp, "--checkpoint-every", "1", "--checkpoint-interval", "-1s"},
		[]string{"SSH_AUTH_SOCK=" + sock}, aegisBin, "__demo-server")
	s.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"before"}}}`)
	if got := s.recv(); !strings.Contains(got, "before") {
		t.Fatalf("answer = %s; want the echo", got)
	}
	stop()
	// Calls go on until the checkpointer, asked after each, finds the
	// agent gone; wrap then stops relaying and exits.
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 2; ; i++ {
			if _, err := fmt.Fprintf(s.stdin, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"after"}}}`+"\n", i); err != nil {
				return
			}
			if _, err := s.stdout.ReadString('\n'); err != nil {
				return
			}
		}
	}()
	if code := s.wait(30 * time.Second); code != 74 || !strings.Contains(s.stderr.String(), "ssh-agent") || !strings.Contains(s.stderr.String(), "start the agent again") {
		t.Errorf("wrap exited %d (stderr: %s); want 74 and the agent named", code, s.stderr)
	}
	<-done
	t.Logf("wrap's stderr: %s", s.stderr)
	if code, out := aegisOut(t, "verify", "--key", pub, f.audit); code == 1 {
		t.Errorf("verify after the agent went away = %d\n%s; want the records written valid or incomplete, never invalid", code, out)
	}
}

// TestVerifyRootSignedLogsUnchanged: logs written before session keys
// (journal/verify/testdata/rootsigned: the journal's golden logs as they
// were, each session signed by the root) verify as they did, byte for
// byte of verify's output (want/: what verify printed before session
// keys), pinned and unpinned, as text and as JSON. One difference is
// made on purpose, in the forged smallorder.jsonl: its session_start
// does not decode, so its session's key is unknown, and pinned, its
// signatures are no longer each checked against the pinned key (which
// may be a root that certified a key in the lost session_start): the
// problems "signature does not verify" after it are gone, the rest is
// the same.
func TestVerifyRootSignedLogsUnchanged(t *testing.T) {
	const pin = "ed25519:kRPIkGB+xJXb40VdQS/tpH6U5RSG83+xdwxrXRR4L58="
	dir := filepath.Join("..", "..", "journal", "verify", "testdata", "rootsigned")
	for _, file := range []string{"genuine.jsonl", "torn.jsonl", "prezeroed.jsonl", "smallorder.jsonl", "rotated/audit.jsonl"} {
		name := strings.ReplaceAll(file, "/", "_")
		for _, run := range []struct {
			want string
			args []string
		}{
			{name + ".pinned.txt", []string{"verify", "--key", pin, filepath.Join(dir, file)}},
			{name + ".pinned.json", []string{"verify", "--json", "--key", pin, filepath.Join(dir, file)}},
			{name + ".unpinned.json", []string{"verify", "--json", filepath.Join(dir, file)}},
		} {
			want, err := os.ReadFile(filepath.Join(dir, "want", run.want))
			if err != nil {
				t.Fatal(err)
			}
			if file == "smallorder.jsonl" && strings.Contains(run.want, "pinned") && !strings.Contains(run.want, "unpinned") {
				want = withoutSigProblems(t, want)
			}
			cmd := exec.Command(aegisBin, run.args...)
			got, _ := cmd.Output()
			if !bytes.Equal(got, want) {
				t.Errorf("aegis %s =\n%s\nwant (want/%s)\n%s", strings.Join(run.args, " "), got, run.want, want)
			}
		}
	}
}

// withoutSigProblems is verify's output without its "signature does not
// verify" problems, as text or as JSON.
func withoutSigProblems(t *testing.T, out []byte) []byte {
	t.Helper()
	if !bytes.HasPrefix(out, []byte("{")) {
		var keep []string
		for _, l := range strings.SplitAfter(string(out), "\n") {
			if !strings.HasSuffix(l, ": signature does not verify\n") {
				keep = append(keep, l)
			}
		}
		return []byte(strings.Join(keep, ""))
	}
	var v map[string]any
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatal(err)
	}
	var keep []any
	for _, p := range v["problems"].([]any) {
		if p.(map[string]any)["msg"] != "signature does not verify" {
			keep = append(keep, p)
		}
	}
	// Re-encoded in verify's field order: decode into its own type.
	v["problems"] = keep
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var vj verifyjson.Doc
	if err := json.Unmarshal(b, &vj); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	json.NewEncoder(&buf).Encode(vj)
	return buf.Bytes()
}

// BenchmarkAgentSign is what a root key in an agent costs a session: one
// signature (the session key's certificate) at its start, made through
// the agent's socket; every record is signed in process with the session
// key, as with a key file. In the same run:
//
//	ed25519.Sign    the floor: a 250-byte certificate message signed in process
//	keyring         … through agentkey.Signer to x/crypto's keyring served on a unix socket
//	ssh-agent       … to OpenSSH's ssh-agent holding an ssh-keygen key
//
// ratio = ns/op ÷ the floor's ns/op, timed interleaved (8 ops after every 16).
func BenchmarkAgentSign(b *testing.B) {
	root := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	cert := record.SessionCert{Root: root.Public().(ed25519.PublicKey), SID: [16]byte{1}, Seq: 1 << 20, TS: time.Now()}
	msg := cert.AppendMessage(nil, cert.Root)
	floor := func() { ed25519.Sign(root, msg) }
	run := func(b *testing.B, s *agentkey.Signer) {
		il := &interleave.Sampler{Every: 16, Per: 8}
		kf := il.Add(floor)
		il.Sample(20)
		b.ReportAllocs()
		b.SetBytes(int64(len(msg)))
		for b.Loop() {
			sig, err := s.Sign(nil, msg, crypto.Hash(0))
			if err != nil || !ed25519.Verify(s.Public().(ed25519.PublicKey), msg, sig) {
				b.Fatalf("Sign = %x, %v; want a signature that verifies", sig, err)
			}
			il.Tick(b)
		}
		b.ReportMetric(il.Mean(kf)/1e3, "floor-us")
		b.ReportMetric(interleave.NsPerOp(b)/il.Mean(kf), "ratio")
	}
	b.Run("ed25519.Sign", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(msg)))
		for b.Loop() {
			floor()
		}
	})
	b.Run("keyring", func(b *testing.B) {
		sock, _, _ := serveCountingAgent(b, root)
		s, err := agentkey.Dial(sock, record.FormatPublicKey(root.Public().(ed25519.PublicKey)))
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		run(b, s)
	})
	b.Run("ssh-agent", func(b *testing.B) {
		dir := b.TempDir()
		sock := startSSHAgent(b)
		key, fp := sshKey(b, dir, "id_ed25519", "ed25519")
		sshTool(b, []string{"SSH_AUTH_SOCK=" + sock}, "ssh-add", "-q", key)
		s, err := agentkey.Dial(sock, fp)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		run(b, s)
	})
}

// TestSSHAgentKeptFromChild: with the root key in an agent, the child
// does not inherit SSH_AUTH_SOCK (it could have the agent certify a key of
// its own and sign records as the log's), and --clean-env --env
// SSH_AUTH_SOCK is refused with exit 2. With a key file the child's
// environment is aegis's, the variable included.
func TestSSHAgentKeptFromChild(t *testing.T) {
	f := newFixture(t)
	_, root, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sock, _, _ := serveCountingAgent(t, root)
	env := []string{"SSH_AUTH_SOCK=" + sock}
	spec := []string{"--signing-key", "ssh-agent:" + record.FormatPublicKey(root.Public().(ed25519.PublicKey))}
	seen := filepath.Join(f.dir, "child-env")
	child := []string{"/bin/sh", "-c", `printf %s "${SSH_AUTH_SOCK-unset}" > "$0" && exec "$1" __demo-server`, seen, aegisBin}
	for _, tt := range []struct {
		name  string
		extra []string
		want  string
	}{
		{"agent key", spec, "unset"},
		{"key file", nil, sock},
	} {
		s := f.start(t, tt.extra, env, child...)
		s.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`)
		s.recv()
		s.stdin.Close()
		if code := s.wait(30 * time.Second); code != 0 {
			t.Fatalf("%s: wrap exited %d (stderr: %s)", tt.name, code, s.stderr)
		}
		if got, err := os.ReadFile(seen); err != nil || string(got) != tt.want {
			t.Errorf("%s: the child saw SSH_AUTH_SOCK=%q (%v); want %q", tt.name, got, err, tt.want)
		}
	}
	cmd := f.wrapCmd(append(spec, "--clean-env", "--env", "SSH_AUTH_SOCK"), aegisBin, "__demo-server")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if code := exitCode(err); code != 2 || !strings.Contains(string(out), "--env SSH_AUTH_SOCK") {
		t.Errorf("wrap --clean-env --env SSH_AUTH_SOCK with an agent key = %d\n%s; want 2 and a reason", code, out)
	}
}

// acceptAll accepts every connection to l and runs serve on each (nil:
// holds it open and reads nothing) until stop, which closes l and every
// connection accepted; stop also runs when the test ends.
func acceptAll(t testing.TB, l net.Listener, serve func(net.Conn)) (stop func()) {
	var mu sync.Mutex
	var conns []net.Conn
	stop = func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	}
	t.Cleanup(stop)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			if serve != nil {
				go func() {
					defer c.Close()
					serve(c)
				}()
			}
		}
	}()
	return stop
}

// TestSSHAgentConfined: under --confine the child does not learn the
// agent's socket, whatever key signs the log, and a profile that would
// let it reach the agent holding the root key (--allow-unix with the
// socket's folder granted write: reachable on any Landlock ABI) is
// refused with exit 69 before the child starts.
func TestSSHAgentConfined(t *testing.T) {
	f := newFixture(t)
	_, root, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sock, _, _ := serveCountingAgent(t, root)
	env := []string{"SSH_AUTH_SOCK=" + sock}
	agentKey := []string{"--signing-key", "ssh-agent:" + record.FormatPublicKey(root.Public().(ed25519.PublicKey))}
	seen := filepath.Join(f.dir, "child-env")
	child := []string{"/bin/sh", "-c", `printf %s "${SSH_AUTH_SOCK-unset}" > "$0" && exec "$1" __demo-server`, seen, aegisBin}
	confined := []string{"--confine", "--allow-exec-support", "--allow-write", f.dir, "--allow-read", filepath.Dir(aegisBin)}
	for _, tt := range []struct {
		name  string
		extra []string
	}{
		{"key file", confined},
		{"agent key", append(slices.Clone(agentKey), confined...)},
	} {
		os.Remove(seen)
		s := f.start(t, tt.extra, env, child...)
		s.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`)
		s.recv()
		s.stdin.Close()
		if code := s.wait(30 * time.Second); code != 0 {
			t.Fatalf("%s: wrap exited %d (stderr: %s)", tt.name, code, s.stderr)
		}
		if got, err := os.ReadFile(seen); err != nil || string(got) != "unset" {
			t.Errorf("%s: the confined child saw SSH_AUTH_SOCK=%q (%v); want it unset", tt.name, got, err)
		}
	}
	for _, tt := range []struct {
		name  string
		extra []string
		want  int
	}{
		{"--allow-unix, the agent's folder granted write", append(slices.Clone(agentKey), "--confine", "--allow-unix", "--allow-write", filepath.Dir(sock)), 69},
		{"--allow-unix, best effort", append(slices.Clone(agentKey), "--confine", "--allow-unix", "--best-effort", "--allow-write", filepath.Dir(sock)), 69},
	} {
		cmd := f.wrapCmd(tt.extra, aegisBin, "__demo-server")
		cmd.Env = append(os.Environ(), env...)
		cmd.Stdin = strings.NewReader("")
		out, err := cmd.CombinedOutput()
		if code := exitCode(err); code != tt.want || !strings.Contains(string(out), "ssh-agent that holds the log's root key") {
			t.Errorf("%s: wrap = %d\n%s; want %d and the reason", tt.name, code, out, tt.want)
		}
	}
}
