package main

import (
	"io"
	"os"
	"os/exec"
)

// floorRelay is the floor a relay is judged against: an echo child on two
// pipes (os/exec's, as aegis starts its child) and two plain read/write
// loops of 64 KiB (aegis's read size) between them and this process's
// stdin and stdout. No parsing, no recording, no splice.
func floorRelay(size int) int {
	argv, err := echoArgv(size)
	if err != nil {
		return fail(err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return fail(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return fail(err)
	}
	if err := cmd.Start(); err != nil {
		return fail(err)
	}
	done := make(chan struct{})
	go func() {
		pump(os.Stdout, out)
		close(done)
	}()
	pump(in, os.Stdin)
	in.Close()
	<-done
	if err := cmd.Wait(); err != nil {
		return fail(err)
	}
	return 0
}

func pump(dst io.Writer, src io.Reader) {
	buf := make([]byte, 64<<10)
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
