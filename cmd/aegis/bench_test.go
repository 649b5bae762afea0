package main

// End-to-end benchmarks through the real aegis binary and real pipes, each
// figure beside its floor measured in the same benchmark function
// (BENCHMARKS.md, "Method"):
//
//	go test -run XXX -bench RoundTrip -count 5 ./cmd/aegis/
//
// One op is one request line written and its response line read, in lock
// step, by this process acting as the client.

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/aegisrelay/aegis/internal/interleave"
)

// The two requests: an unrecorded one (ping) and a recorded one (tools/call).
var (
	pingReq = [2]string{`{"jsonrpc":"2.0","id":`, `,"method":"ping"}` + "\n"}
	callReq = [2]string{`{"jsonrpc":"2.0","id":`, `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}` + "\n"}
)

// rtProc is a process this benchmark talks to in lock step: the echo child
// itself, the floor relay in front of it, or aegis wrap in front of it.
type rtProc struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr bytes.Buffer
	id     int
	req    []byte
	want   []byte
}

func startRT(b *testing.B, cmd *exec.Cmd) *rtProc {
	b.Helper()
	p := &rtProc{cmd: cmd}
	var err error
	if p.in, err = cmd.StdinPipe(); err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	p.out = bufio.NewReaderSize(out, 64<<10)
	cmd.Stderr = &p.stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.stop(b) })
	// Warm up: the first round trips pay for process start-up and page faults.
	for range 50 {
		p.roundTrip(b, pingReq)
	}
	return p
}

// roundTrip writes one request and reads its response; it returns the
// bytes moved both ways. It allocates nothing in steady state.
func (p *rtProc) roundTrip(b *testing.B, r [2]string) int {
	p.id++
	p.req = append(strconv.AppendInt(append(p.req[:0], r[0]...), int64(p.id), 10), r[1]...)
	if _, err := p.in.Write(p.req); err != nil {
		b.Fatalf("write request: %v\n%s", err, p.stderr.String())
	}
	line, err := p.out.ReadSlice('\n')
	if err != nil {
		b.Fatalf("read response: %v\n%s", err, p.stderr.String())
	}
	p.want = strconv.AppendInt(append(p.want[:0], `{"jsonrpc":"2.0","id":`...), int64(p.id), 10)
	if !bytes.HasPrefix(line, p.want) {
		b.Fatalf("response %q; want one starting %q", line, p.want)
	}
	return len(p.req) + len(line)
}

// stop closes the process's stdin and waits for it to exit.
func (p *rtProc) stop(b *testing.B) {
	if p.in == nil {
		return
	}
	p.in.Close()
	p.in = nil
	if err := p.cmd.Wait(); err != nil {
		b.Errorf("%v: %v\n%s", p.cmd.Args, err, p.stderr.String())
	}
}

// benchFixture is newFixture for a benchmark: a key and an audit path in a
// fresh folder.
func benchFixture(b *testing.B) *fixture {
	b.Helper()
	dir := b.TempDir()
	f := &fixture{dir: dir, key: filepath.Join(dir, "signing.key"), audit: filepath.Join(dir, "audit.jsonl")}
	out, err := exec.Command(aegisBin, "keygen", "--out", f.key).Output()
	if err != nil {
		b.Fatalf("keygen: %v", err)
	}
	f.pub = strings.TrimSpace(string(out))
	return f
}

// syncFloor is the raw fdatasync floor: a 300-byte line appended to an
// O_APPEND file in dir (the audit log's directory) and fdatasync'd.
type syncFloor struct {
	fd   int
	line []byte
}

func openSyncFloor(b *testing.B, dir string) *syncFloor {
	b.Helper()
	fd, err := unix.Open(filepath.Join(dir, "floor.log"), unix.O_WRONLY|unix.O_APPEND|unix.O_CREAT|unix.O_CLOEXEC, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { unix.Close(fd) })
	return &syncFloor{fd: fd, line: append(bytes.Repeat([]byte("x"), 299), '\n')}
}

func (s *syncFloor) op(b *testing.B) {
	if _, err := unix.Write(s.fd, s.line); err != nil {
		b.Fatal(err)
	}
	if err := fdatasync(s.fd); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkRoundTrip measures one lock-step request/response round trip:
//
//	direct           client ↔ echo child
//	floor-relay      client ↔ minimal read/write relay ↔ echo child
//	fdatasync        the raw floor: 300-byte append + fdatasync in the audit dir
//	wrap-unrecorded  client ↔ aegis wrap ↔ echo child, ping (not recorded)
//	wrap-none        … tools/call, recorded at --durability none
//	wrap-reply       … at reply
//	wrap-strict      … at strict
//
// The ratios are computed from floors timed in the same sub-benchmark,
// interleaved with its loop (8 ops each after every 16; timer stopped):
//
//	wrap-unrecorded  ovh-ratio = (ns/op − direct) ÷ (floor relay − direct); target ≤ 1.5
//	wrap-strict      ratio = ns/op ÷ (2 × fdatasync); target ≤ 1.10
//	wrap-reply       ratio = ns/op ÷ (1 × fdatasync); target ≤ 1.10
//	both             rec-ratio = (ns/op − unrecorded) ÷ (k × fdatasync): recording's cost alone,
//	                 where unrecorded is a ping through the same aegis process
//	wrap-none        over-unrec-us = ns/op − unrecorded, in µs: what recording costs without syncs
//	recorded         sign-us: ed25519.Sign of a 300-byte record (in this process); rest-us =
//	                 ns/op − unrecorded − syncs × fdatasync − 2 × sign: what a recorded call
//	                 costs beyond its unrecorded round trip, its syncs and its two signatures
func BenchmarkRoundTrip(b *testing.B) {
	echo := func() *exec.Cmd { argv := child("echo"); return exec.Command(argv[0], argv[1:]...) }
	relay := func() *exec.Cmd { argv := child("relay"); return exec.Command(argv[0], argv[1:]...) }
	key := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	rec := bytes.Repeat([]byte("x"), 300)
	loop := func(b *testing.B, p *rtProc, req [2]string, il *interleave.Sampler) {
		b.ReportAllocs()
		var n int
		for b.Loop() {
			n = p.roundTrip(b, req)
			if il != nil {
				il.Tick(b)
			}
		}
		b.SetBytes(int64(n))
	}

	b.Run("direct", func(b *testing.B) {
		loop(b, startRT(b, echo()), pingReq, nil)
	})
	b.Run("floor-relay", func(b *testing.B) {
		loop(b, startRT(b, relay()), pingReq, nil)
	})
	b.Run("fdatasync", func(b *testing.B) {
		fl := openSyncFloor(b, benchFixture(b).dir)
		b.ReportAllocs()
		b.SetBytes(int64(len(fl.line)))
		for b.Loop() {
			fl.op(b)
		}
	})
	b.Run("wrap-unrecorded", func(b *testing.B) {
		f := benchFixture(b)
		p := startRT(b, f.wrapCmd(nil, child("echo")...))
		direct, rel := startRT(b, echo()), startRT(b, relay())
		il := &interleave.Sampler{Every: 16, Per: 8}
		kd := il.Add(func() { direct.roundTrip(b, pingReq) })
		kr := il.Add(func() { rel.roundTrip(b, pingReq) })
		il.Sample(20)
		loop(b, p, pingReq, il)
		d, r := il.Mean(kd), il.Mean(kr)
		b.ReportMetric(d/1e3, "direct-us")
		b.ReportMetric(r/1e3, "relay-us")
		b.ReportMetric((interleave.NsPerOp(b)-d)/(r-d), "ovh-ratio")
	})
	for _, lv := range []struct {
		name  string
		syncs int
	}{{"none", 0}, {"reply", 1}, {"strict", 2}} {
		b.Run("wrap-"+lv.name, func(b *testing.B) {
			f := benchFixture(b)
			p := startRT(b, f.wrapCmd([]string{"--durability", lv.name}, child("echo")...))
			il := &interleave.Sampler{Every: 16, Per: 8}
			ku := il.Add(func() { p.roundTrip(b, pingReq) })
			ks := il.Add(func() { ed25519.Sign(key, rec) })
			kf := -1
			if lv.syncs > 0 {
				fl := openSyncFloor(b, f.dir)
				kf = il.Add(func() { fl.op(b) })
			}
			il.Sample(20)
			loop(b, p, callReq, il)
			nsop, unrec, sign := interleave.NsPerOp(b), il.Mean(ku), il.Mean(ks)
			var floor float64
			b.ReportMetric(unrec/1e3, "unrec-us")
			b.ReportMetric(sign/1e3, "sign-us")
			if kf < 0 {
				b.ReportMetric((nsop-unrec)/1e3, "over-unrec-us")
			} else {
				floor = il.Mean(kf)
				b.ReportMetric(floor/1e3, "fsync-us")
				b.ReportMetric(nsop/(float64(lv.syncs)*floor), "ratio")
				b.ReportMetric((nsop-unrec)/(float64(lv.syncs)*floor), "rec-ratio")
			}
			b.ReportMetric((nsop-unrec-float64(lv.syncs)*floor-2*sign)/1e3, "rest-us")
			// The figure counts only if every call was recorded and the
			// log verifies.
			p.stop(b)
			out, err := exec.Command(aegisBin, "verify", "--key", "@"+f.key+".pub", f.audit).CombinedOutput()
			if err != nil {
				b.Fatalf("aegis verify: %v\n%s", err, out)
			}
			intents := bytes.Count(mustRead(b, f.audit), []byte(`"kind":"intent"`))
			if calls := p.id - il.Samples() - 50; intents != calls {
				b.Fatalf("audit log holds %d intents; want %d", intents, calls)
			}
		})
	}
}

func mustRead(b *testing.B, path string) []byte {
	b.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	return data
}
