package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// goClient is the official Go SDK's client driving the server argv over
// stdio: warm lock-step tools/call echo calls, then n timed ones. It
// prints {"ns":[…],"revision":"…"}, each call's round trip as the
// client's CallTool returns it, and the revision the session speaks.
func goClient(n, warm int, argv []string) int {
	if len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "aegis-bench-child goclient: no server command")
		return 2
	}
	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "aegis-bench", Version: "1.0.0"}, nil)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, nil)
	if err != nil {
		fmt.Fprintf(os.Stderr, "aegis-bench-child goclient: connect: %v\n", err)
		return 1
	}
	// server-everything does not exit when its stdin closes, and the SDK
	// would wait TerminateDuration for it: SIGTERM it (wrap passes it on
	// and ends its session) once the calls are done.
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cs.Close()
	}()
	params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hello"}}
	ns := make([]int64, 0, n)
	for i := range warm + n {
		t0 := time.Now()
		res, err := cs.CallTool(ctx, params)
		d := time.Since(t0)
		if err != nil || res.IsError {
			fmt.Fprintf(os.Stderr, "aegis-bench-child goclient: call %d: %v %+v\n", i, err, res)
			return 1
		}
		if i >= warm {
			ns = append(ns, d.Nanoseconds())
		}
	}
	revision := ""
	if r := cs.InitializeResult(); r != nil {
		revision = r.ProtocolVersion
	}
	b, _ := json.Marshal(struct {
		NS       []int64 `json:"ns"`
		Revision string  `json:"revision"`
	}{ns, revision})
	fmt.Println(string(b))
	return 0
}
