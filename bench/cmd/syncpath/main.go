//go:build linux

// Command syncpath draws the timeline of a lock-step tools/call through
// aegis wrap, step by step: where a recorded call's time goes beyond its
// fdatasyncs (the durability section's strict and reply rows). It drives
// an aegis built with the tag aegispathtrace, whose journal stamps each
// step of a record's way (journal/pathtrace_on.go) with the clock this
// driver stamps each request's write and each answer's read with, and
// prints the median of every step over the calls whose steps came in the
// commonest order.
//
//	CGO_ENABLED=0 go build -trimpath -tags aegispathtrace -o /tmp/aegis-trace ./cmd/aegis
//	go build -o /tmp/aegis-bench-child ./bench/cmd/aegis-bench-child
//	/tmp/aegis-trace keygen --out /tmp/k    # or any signing key
//	go run ./bench/cmd/syncpath -n 2000 -- /tmp/aegis-trace wrap --audit /tmp/a.jsonl \
//	    --signing-key /tmp/k --durability strict -- /tmp/aegis-bench-child echo
//
// -floor FILE adds a pwrite+fdatasync over pre-zeroed space after each
// call (the floor taken after a hop), so that the table has its floor
// from the same rounds.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

func mono() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

type stamp struct {
	ns  int64
	tid int
	m   string
}

func main() {
	n := flag.Int("n", 2000, "lock-step tools/call round trips")
	floor := flag.String("floor", "", "pre-zeroed `FILE` for a pwrite+fdatasync after each call (created, 4 MiB)")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: syncpath [-n N] [-floor FILE] -- aegis-trace wrap ... -- child")
		os.Exit(2)
	}
	dir, err := os.MkdirTemp("", "syncpath-")
	check(err)
	defer os.RemoveAll(dir)
	marks := filepath.Join(dir, "marks.txt")
	cmd := exec.Command(flag.Arg(0), flag.Args()[1:]...)
	cmd.Env = append(os.Environ(), "AEGIS_PATHTRACE="+marks)
	w, err := cmd.StdinPipe()
	check(err)
	r, err := cmd.StdoutPipe()
	check(err)
	cmd.Stderr = os.Stderr
	check(cmd.Start())
	br := bufio.NewReader(r)
	req := func(i int) []byte {
		return []byte(`{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}` + "\n")
	}
	var zf *os.File
	var off int64
	line := []byte(strings.Repeat("x", 511) + "\n")
	if *floor != "" {
		zf, err = os.Create(*floor)
		check(err)
		_, err = zf.Write(make([]byte, 4<<20))
		check(err)
		check(zf.Sync())
	}
	var floors []time.Duration
	calls := make([][2]int64, *n)
	for i := range *n {
		calls[i][0] = mono()
		_, err := w.Write(req(i))
		check(err)
		_, err = br.ReadSlice('\n')
		check(err)
		calls[i][1] = mono()
		if zf != nil {
			if off+int64(len(line)) > 4<<20 {
				off = 0
			}
			t := time.Now()
			_, err = zf.WriteAt(line, off)
			check(err)
			off += int64(len(line))
			check(unix.Fdatasync(int(zf.Fd())))
			floors = append(floors, time.Since(t))
		}
	}
	w.Close()
	check(cmd.Wait())
	st := readMarks(marks)
	report(calls, st, floors)
}

func readMarks(path string) []stamp {
	f, err := os.Open(path)
	check(err)
	defer f.Close()
	var st []stamp
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var s stamp
		if _, err := fmt.Sscan(sc.Text(), &s.ns, &s.tid, &s.m); err == nil {
			st = append(st, s)
		}
	}
	slices.SortFunc(st, func(a, b stamp) int { return int(a.ns - b.ns) })
	return st
}

// report prints, over the calls whose path steps came in the commonest
// order, the median time between each step and the next, and whether
// the two ran on one thread.
func report(calls [][2]int64, st []stamp, floors []time.Duration) {
	type pt struct {
		m   string
		ns  int64
		tid int
	}
	seqs := map[string][][]pt{}
	side := map[string]int{}
	j := 0
	for _, c := range calls {
		for j < len(st) && st[j].ns < c[0] {
			j++
		}
		pts := []pt{{"client writes", c[0], 0}}
		for ; j < len(st) && st[j].ns <= c[1]; j++ {
			if s := st[j]; strings.HasPrefix(s.m, "sign") || strings.HasPrefix(s.m, "zero") {
				side[s.m]++
			} else {
				pts = append(pts, pt{s.m, s.ns, s.tid})
			}
		}
		pts = append(pts, pt{"client reads", c[1], 0})
		var key []string
		for _, p := range pts {
			key = append(key, p.m)
		}
		k := strings.Join(key, ",")
		seqs[k] = append(seqs[k], pts)
	}
	var best string
	for k, v := range seqs {
		if len(v) > len(seqs[best]) {
			best = k
		}
	}
	rows := seqs[best]
	fmt.Printf("%d calls, %d in the commonest order of steps; stamps of the attester and zeroer inside calls: %v\n", len(calls), len(rows), side)
	med := func(xs []int64) float64 {
		slices.Sort(xs)
		return float64(xs[len(xs)/2]) / 1e3
	}
	var tot []int64
	for _, p := range rows {
		tot = append(tot, p[len(p)-1].ns-p[0].ns)
	}
	fmt.Printf("call median %.1f µs\n", med(tot))
	if len(floors) > 0 {
		slices.Sort(floors)
		fmt.Printf("pre-zeroed floor after each call: median %.1f µs\n", float64(floors[len(floors)/2].Nanoseconds())/1e3)
	}
	for k := 0; k+1 < len(rows[0]); k++ {
		var d []int64
		same := 0
		for _, p := range rows {
			d = append(d, p[k+1].ns-p[k].ns)
			if p[k+1].tid == p[k].tid {
				same++
			}
		}
		fmt.Printf("  %-13s → %-13s median %8.1f µs   same thread %3d%%\n", rows[0][k].m, rows[0][k+1].m, med(d), 100*same/len(rows))
	}
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "syncpath:", err)
		os.Exit(1)
	}
}
