package bench

import (
	"bytes"
	"fmt"
	"os"
	"testing"
)

// TestReadLine feeds readLine lines of every length the harness reads,
// cut into writes at places that are not line ends (a 16 MiB answer in
// many reads, several lines in one read, a '\n' alone), and wants every
// line back whole and in order.
func TestReadLine(t *testing.T) {
	// The stream is written in place and each line is a slice of it:
	// copies of 17 MiB are most of the test's cost under the race
	// detector.
	ns := []int{0, 1, 100, 64<<10 - 1, 64 << 10, 64<<10 + 1, 3, 1 << 20, 0, 16<<20 + 7, 5}
	size := 0
	for i, n := range ns {
		size += len(fmt.Sprintf("%d:", i)) + n + 1
	}
	stream := make([]byte, 0, size)
	var lines [][]byte
	for i, n := range ns {
		start := len(stream)
		stream = fmt.Appendf(stream, "%d:", i)
		stream = stream[:len(stream)+n]
		if fill := stream[len(stream)-n:]; n > 0 {
			fill[0] = 'a' + byte(i)
			for k := 1; k < n; k *= 2 {
				copy(fill[k:], fill[:k])
			}
		}
		lines = append(lines, stream[start:len(stream):len(stream)])
		stream = append(stream, '\n')
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	go func() {
		defer w.Close()
		// Writes of odd sizes, so that reads end anywhere in a line.
		for rest, k := stream, 1; len(rest) > 0; k++ {
			n := min(len(rest), k*7919%(200<<10)+1)
			if _, err := w.Write(rest[:n]); err != nil {
				return
			}
			rest = rest[n:]
		}
	}()
	p := &proc{name: "pipe", r: r, stderr: new(lockedBuffer), buf: make([]byte, 64<<10)}
	for i, want := range lines {
		got, err := p.readLine()
		if err != nil {
			t.Fatalf("line %d: readLine: %v", i, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("line %d = %d bytes %.20q…; want %d bytes %.20q…", i, len(got), got, len(want), want)
		}
	}
	if got, err := p.readLine(); err == nil {
		t.Errorf("readLine after the last line = %.20q; want an error at EOF", got)
	}
}
