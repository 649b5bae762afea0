package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// procStatus reads a field of /proc/PID/status in KiB (VmHWM, VmRSS).
func procStatus(pid int, field string) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// procCPU returns the CPU time (user and system) pid has used, from
// /proc/PID/stat, in seconds.
func procCPU(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command name, which is in parentheses and
	// may hold spaces: utime and stime are the 12th and 13th of them.
	_, rest, _ := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseFloat(f[11], 64)
	s, _ := strconv.ParseFloat(f[12], 64)
	return (u + s) / clockTicks
}

// clockTicks is the kernel's USER_HZ, the unit of /proc/PID/stat's times:
// 100 on every Linux architecture Go supports.
const clockTicks = 100

// selfCPU returns the CPU time this process has used, in seconds.
func selfCPU() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// openFDs counts the descriptors pid holds.
func openFDs(pid int) int {
	ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(ents)
}

// BenchmarkListenFlood measures wrap --listen, with its default bounds,
// under a flood of connections that never authenticate, from loopback
// alone: 16 peers (127.0.1.1 to 127.0.1.16), 256 dialers each (4,096), each
// dialer opening connections one after the other for 10s and holding
// each until aegis ends it: idle, half a header, or a POST without a
// token declaring a 64 KiB body of which it sends 1 KiB. Meanwhile an
// authenticated session makes calls one after the other on its own
// connection, with a head file and checkpoints written. It reports wrap's
// peak RSS (VmHWM) before and after the flood, the most descriptors it
// held, the connections opened and the session's calls answered;
// any call that fails, or wrap exiting, fails the benchmark.
//
//	go test -run '^$' -bench BenchmarkListenFlood -benchtime 1x ./cmd/aegis
func BenchmarkListenFlood(b *testing.B) {
	dir := b.TempDir()
	f := &fixture{dir: dir, key: dir + "/signing.key", audit: dir + "/audit.jsonl"}
	if out, err := exec.Command(aegisBin, "keygen", "--out", f.key).CombinedOutput(); err != nil {
		b.Fatalf("keygen: %v\n%s", err, out)
	}
	l := f.listenUnder(b, nil, []string{"--head-file", dir + "/audit.head"}, child("echo")...)
	// The session's client counts the connections it opens: one, unless
	// aegis ends or refuses it.
	var fresh atomic.Int64
	var nd net.Dialer
	l.client = &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		fresh.Add(1)
		return nd.DialContext(ctx, network, addr)
	}}}
	pid := l.cmd.Process.Pid
	addr := strings.TrimSuffix(strings.TrimPrefix(l.url, "http://"), "/mcp")
	sid, err := l.open()
	if err != nil {
		b.Fatal(err)
	}
	idleHWM := procStatus(pid, "VmHWM")
	const (
		peers   = 16
		dialers = 256
		flood   = 10 * time.Second
	)
	kinds := []string{
		"",
		"POST /mcp HTTP/1.1\r\nHost: ",
		"POST /mcp HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\nContent-Length: 65536\r\n\r\n" + strings.Repeat(" ", 1024),
	}
	b.ResetTimer()
	for range b.N {
		var opened, calls atomic.Int64
		fresh.Store(0)
		var slowest atomic.Int64 // nanoseconds
		maxFDs := 0
		cpu0, self0 := procCPU(pid), selfCPU()
		stop := time.Now().Add(flood)
		var wg sync.WaitGroup
		for p := range peers {
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 1, byte(p+1))}, Timeout: 5 * time.Second}
			for i := range dialers {
				kind := kinds[(p*dialers+i)%len(kinds)]
				wg.Go(func() {
					for time.Now().Before(stop) {
						c, err := d.Dial("tcp", addr)
						if err != nil {
							continue
						}
						opened.Add(1)
						io.WriteString(c, kind)
						c.SetReadDeadline(stop.Add(6 * time.Second))
						io.Copy(io.Discard, c)
						c.Close()
					}
				})
			}
		}
		callErr := make(chan error, 1)
		go func() {
			for i := 0; time.Now().Before(stop); i++ {
				body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{}}}`, 1000+i)
				start := time.Now()
				resp, err := l.do("POST", sid, body)
				if err == nil {
					var p []string
					if p, err = readPayloads(resp); err == nil && (resp.StatusCode != 200 || len(p) != 1) {
						err = fmt.Errorf("call = %d, %q", resp.StatusCode, p)
					}
				}
				if d := int64(time.Since(start)); d > slowest.Load() {
					slowest.Store(d)
				}
				if err != nil {
					callErr <- err
					return
				}
				calls.Add(1)
			}
			callErr <- nil
		}()
		for time.Now().Before(stop) {
			maxFDs = max(maxFDs, openFDs(pid))
			time.Sleep(50 * time.Millisecond)
		}
		cpu, self := procCPU(pid)-cpu0, selfCPU()-self0
		wg.Wait()
		if err := <-callErr; err != nil {
			b.Fatalf("a call during the flood: %v\n%s", err, l.errText())
		}
		select {
		case <-l.exited:
			b.Fatalf("wrap exited during the flood:\n%s", l.errText())
		default:
		}
		b.ReportMetric(float64(idleHWM)/1024, "idle-hwm-MiB")
		b.ReportMetric(float64(procStatus(pid, "VmHWM"))/1024, "flood-hwm-MiB")
		b.ReportMetric(float64(maxFDs), "max-fds")
		b.ReportMetric(float64(opened.Load()), "conns-opened")
		b.ReportMetric(float64(calls.Load()), "calls")
		b.ReportMetric(float64(fresh.Load()), "call-conns")
		b.ReportMetric(float64(slowest.Load())/1e6, "slowest-call-ms")
		b.ReportMetric(cpu, "aegis-cpu-s")
		b.ReportMetric(self, "dialers-cpu-s")
	}
}
