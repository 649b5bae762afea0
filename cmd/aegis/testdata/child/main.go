// Command child is the server the cmd/aegis tests wrap: TestMain builds it
// once, without the race detector (it guards nothing of aegis here, and a
// race-built binary costs many times the CPU to start), and every test
// that needs a child starts it. Its environment picks the server:
//
//	AEGIS_TEST_CHILD=MODE    the test servers of testChild (child.go)
//	AEGIS_POLICY_CHILD=tools the policy tests' tool server (policy.go)
//	AEGIS_EXPLAIN_CHILD=socket reads one line, then opens a TCP socket,
//	                         which --confine's seccomp filter kills it for
//	                         when no network is granted
package main

import (
	"bufio"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

func main() {
	switch {
	case os.Getenv("AEGIS_EXPLAIN_CHILD") == "socket":
		bufio.NewReader(os.Stdin).ReadString('\n')
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
		fmt.Fprintf(os.Stderr, "socket: fd %d, %v\n", fd, err)
		os.Exit(0)
	case os.Getenv("AEGIS_POLICY_CHILD") != "":
		os.Exit(policyChild())
	case os.Getenv("AEGIS_TEST_CHILD") != "":
		os.Exit(testChild(os.Getenv("AEGIS_TEST_CHILD")))
	}
	fmt.Fprintln(os.Stderr, "child: set AEGIS_TEST_CHILD, AEGIS_POLICY_CHILD or AEGIS_EXPLAIN_CHILD")
	os.Exit(2)
}
