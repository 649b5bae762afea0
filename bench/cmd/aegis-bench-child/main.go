// Command aegis-bench-child is the helper processes of the benchmark
// harness (package bench): the MCP server every figure talks to, the
// floor relay, and aegis wrap's wiring under the CPU profiler. It is
// separate from aegis-bench so that the helpers carry nothing of the
// harness (its plotting library alone adds 40 MiB of resident fonts).
//
//	aegis-bench-child echo [-size N] [-hold N]
//	aegis-bench-child floorrelay [-size N]
//	aegis-bench-child httpfloor -listen ADDR [-size N]
//	aegis-bench-child profwrap -audit FILE -key FILE -durability D -profile FILE [-size N]
//	aegis-bench-child profverify -audit FILE -key FILE -profile FILE [-runs N]
//	aegis-bench-child goclient [-n N] [-warm N] -- CMD [ARGS…]
//
// echo answers every request line (one with an "id" and a "method") in
// order, the answers to the lines of one read in one write, as a buffered
// server's would: tools/call and bench/big with a text result of -size
// bytes, anything else with an empty result. With -hold N it holds every
// answer until N requests have arrived.
//
// floorrelay is the floor a relay is judged against (BENCHMARKS.md): an echo
// child on two pipes, as aegis starts its child, and two plain 64 KiB
// read/write loops between them and its own stdin and stdout. httpfloor
// is the floor an HTTP front is judged against (package httpfloor): an
// echo child behind a net/http server at ADDR, each POST body a line to
// it and its answer the response body.
//
// profwrap runs aegis wrap's wiring (journal, relay, session; no policy,
// confinement or rotation) in this process with an echo child, and writes
// a CPU profile when the session ends: the released binary has no
// profiling hook. profverify does the same for aegis verify's work on one
// log (journal.Verify, pinned), -runs times over. goclient is the
// official Go SDK client timing lock-step tools/call echo calls to the
// server CMD (goclient.go).
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	size := fs.Int("size", 0, "text bytes in the answer to tools/call and bench/big")
	hold := fs.Int("hold", 0, "hold every answer until `N` requests have arrived")
	audit := fs.String("audit", "", "profwrap, profverify: the audit `FILE`")
	key := fs.String("key", "", "profwrap, profverify: the signing key `FILE`")
	durability := fs.String("durability", "strict", "profwrap: the durability level")
	profile := fs.String("profile", "", "profwrap, profverify: write the CPU profile to `FILE`")
	runs := fs.Int("runs", 1, "profverify: verify the log `N` times")
	listen := fs.String("listen", "", "httpfloor: serve HTTP at `ADDR`")
	n := fs.Int("n", 200, "goclient: timed calls")
	warm := fs.Int("warm", 20, "goclient: calls before the timed ones")
	fs.Parse(os.Args[2:])
	var code int
	switch os.Args[1] {
	case "echo":
		code = echo(*size, *hold)
	case "floorrelay":
		code = floorRelay(*size)
	case "httpfloor":
		code = httpFloor(*listen, *size)
	case "profwrap":
		code = profWrap(*audit, *key, *durability, *profile, *size)
	case "profverify":
		code = profVerify(*audit, *key, *profile, *runs)
	case "goclient":
		code = goClient(*n, *warm, fs.Args())
	default:
		usage()
	}
	os.Exit(code)
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: aegis-bench-child echo|floorrelay|httpfloor|profwrap|profverify|goclient [flags]")
	os.Exit(2)
}

func fail(err error) int {
	fmt.Fprintf(os.Stderr, "aegis-bench-child: %v\n", err)
	return 1
}

// echoArgv is this program as an echo child answering with size bytes.
func echoArgv(size int) ([]string, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return []string{self, "echo", fmt.Sprintf("-size=%d", size)}, nil
}
