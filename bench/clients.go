package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// ClientResult is a real MCP client calling a real server (the pinned
// server-everything, on Node) lock-step, directly and through wrap at
// none and at strict: what a user of that client pays.
type ClientResult struct {
	Client string `json:"client"` // "TypeScript SDK" or "Go SDK"
	Direct Stats  `json:"direct"`
	None   Stats  `json:"wrap_none"`
	Strict Stats  `json:"wrap_strict"`
	// Overheads are differences of medians with the direct calls, ns.
	NoneOverhead   float64 `json:"none_overhead_ns"`
	StrictOverhead float64 `json:"strict_overhead_ns"`
}

// clientTargets are the server commands a client starts, by wrap's flags
// (nil: the server itself).
var clientTargets = []struct {
	name  string
	flags []string
}{{"direct", nil}, {"wrap none", []string{"--durability", "none"}}, {"wrap strict", []string{"--durability", "strict"}}}

// clientsSection runs each official client against each target in
// rounds, rotating which goes first; every client process makes its own
// session (warm calls untimed) and reports each call's round trip as the
// SDK's call returns it.
func (h *harness) clientsSection(ctx context.Context) error {
	server := filepath.Join(h.root, "interop", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	script := filepath.Join(h.root, "interop", "bench_client.mjs")
	if !fileExists(server) {
		return fmt.Errorf("%s is not installed: run npm ci in interop/ (the real clients' section needs the pinned server and TypeScript SDK)", server)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return fmt.Errorf("node is not on PATH: the real clients' section needs Node.js 20 or later")
	}
	clients := []struct {
		name string
		argv func(n int, target []string) []string
	}{
		{"TypeScript SDK", func(n int, target []string) []string {
			return append([]string{node, script, fmt.Sprint(n), fmt.Sprint(h.it.warm(20))}, target...)
		}},
		{"Go SDK", func(n int, target []string) []string {
			return append([]string{h.child, "goclient", "-n", fmt.Sprint(n), "-warm", fmt.Sprint(h.it.warm(20)), "--"}, target...)
		}},
	}
	for _, c := range clients {
		s := make([]samples, len(clientTargets))
		audits := make([]string, len(clientTargets))
		for round := 0; round < h.it.clientRounds && ctx.Err() == nil; round++ {
			for k := range clientTargets {
				i := (round + k) % len(clientTargets)
				target := []string{node, server, "stdio"}
				if t := clientTargets[i]; t.flags != nil {
					if audits[i] == "" {
						audits[i] = h.newAudit("client")
					}
					target = append(append(append([]string{h.aegis, "wrap", "--audit", audits[i], "--signing-key", h.key}, t.flags...), "--"), target...)
				}
				ns, err := runClient(ctx, c.argv(h.it.clientCalls, target))
				if err != nil {
					return fmt.Errorf("%s, %s: %w", c.name, clientTargets[i].name, err)
				}
				for _, d := range ns {
					s[i].add(time.Duration(d))
				}
			}
		}
		for _, a := range audits {
			if a != "" {
				if _, err := h.verifyLog(ctx, a); err != nil {
					return err
				}
			}
		}
		if h.res.clientSamples == nil {
			h.res.clientSamples = map[string][]time.Duration{}
		}
		for i, t := range clientTargets {
			h.res.clientSamples[clientKey(c.name, t.name)] = s[i].d
		}
		r := ClientResult{Client: c.name, Direct: s[0].stats(), None: s[1].stats(), Strict: s[2].stats()}
		r.NoneOverhead = r.None.Median - r.Direct.Median
		r.StrictOverhead = r.Strict.Median - r.Direct.Median
		h.res.Clients = append(h.res.Clients, r)
		h.logf("   %s → server-everything: direct %s, wrap none %s (+%s), wrap strict %s (+%s)",
			c.name, us(r.Direct.Median), us(r.None.Median), us(r.NoneOverhead), us(r.Strict.Median), us(r.StrictOverhead))
	}
	return nil
}

// clientKey names a client's samples against one target, in the plots'
// legend too.
func clientKey(client, target string) string { return client + ", " + target }

// runClient runs a client process and returns the round trips it printed.
func runClient(ctx context.Context, argv []string) ([]int64, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%v: %w", argv, err)
	}
	var res struct{ NS []int64 }
	if err := json.Unmarshal(out, &res); err != nil || len(res.NS) == 0 {
		return nil, fmt.Errorf("%v printed %.200q: %v", argv, out, err)
	}
	return res.NS, nil
}
