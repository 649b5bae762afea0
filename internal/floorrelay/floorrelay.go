// Package floorrelay is the floor a relay is judged against: a process
// between client and child that moves bytes both ways with plain
// read/write loops, and nothing else (no parsing, no recording, no
// splice). The bench harness's helper child and cmd/aegis's benchmarks
// run the same one, so that their ratios are to the same floor.
package floorrelay

import (
	"io"
	"os/exec"
)

// ReadSize is the size of each read, aegis's own.
const ReadSize = 64 << 10

// Run starts argv on two pipes (os/exec's, as aegis starts its child),
// copies stdin to the child's stdin and the child's stdout to stdout until
// each side's end, closes the child's stdin after stdin's end, and waits
// for the child. The child's stderr is stderr. It returns the first error
// of starting or waiting for the child; a failed copy only ends that
// direction.
func Run(argv []string, stdin io.Reader, stdout, stderr io.Writer) error {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() {
		pump(stdout, out)
		close(done)
	}()
	pump(in, stdin)
	in.Close()
	<-done
	return cmd.Wait()
}

// pump copies src to dst with ReadSize reads and one write per read.
func pump(dst io.Writer, src io.Reader) {
	buf := make([]byte, ReadSize)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
