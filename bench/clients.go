package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// ClientResult is a real MCP client calling a real server (the pinned
// server-everything, on Node) lock-step, directly, through the C floor
// relay placed where wrap is, and through wrap at none and at strict:
// what a user of that client pays, beside what the relay's two hops
// alone cost.
type ClientResult struct {
	Client   string `json:"client"`   // "TypeScript SDK v1", "TypeScript SDK v2" or "Go SDK"
	Revision string `json:"revision"` // the revision the client's sessions spoke, when it says
	Direct   Stats  `json:"direct"`
	CRelay   Stats  `json:"crelay"` // N 0 when the C relay could not be built
	None     Stats  `json:"wrap_none"`
	Strict   Stats  `json:"wrap_strict"`
	// Overheads are differences of medians with the direct calls, ns.
	CRelayOverhead Num     `json:"crelay_overhead_ns"`
	NoneOverhead   float64 `json:"none_overhead_ns"`
	StrictOverhead float64 `json:"strict_overhead_ns"`
	// NoneVsCRelay is wrap none's median ÷ the C relay's: the call
	// through wrap against direct + the relay's two hops (≤ 1.2).
	NoneVsCRelay Ratio `json:"none_vs_crelay"`
}

// clientNoneLimit is the target of a real client's call through wrap at
// none: at most this many times its call through the C floor relay.
const clientNoneLimit = 1.2

// clientTargets are the server commands a client starts: the server
// itself, behind the C floor relay, or behind wrap with flags.
var clientTargets = []struct {
	name  string
	flags []string
}{{"direct", nil}, {"crelay", nil}, {"wrap none", []string{"--durability", "none"}}, {"wrap strict", []string{"--durability", "strict"}}}

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
	v2, err := h.nodeScript("client_v2.mjs")
	if err != nil {
		return err
	}
	crelay := h.buildCRelay(ctx) // crelay.go; "" leaves its column empty
	clients := []struct {
		name string
		argv func(n int, target []string) []string
	}{
		{"TypeScript SDK v1", func(n int, target []string) []string {
			return append([]string{node, script, fmt.Sprint(n), fmt.Sprint(h.it.warm(20))}, target...)
		}},
		{"TypeScript SDK v2", func(n int, target []string) []string {
			return append([]string{node, v2, fmt.Sprint(n), fmt.Sprint(h.it.warm(20))}, target...)
		}},
		{"Go SDK", func(n int, target []string) []string {
			return append([]string{h.child, "goclient", "-n", fmt.Sprint(n), "-warm", fmt.Sprint(h.it.warm(20)), "--"}, target...)
		}},
	}
	for _, c := range clients {
		s := make([]samples, len(clientTargets))
		audits := make([]string, len(clientTargets))
		revision := ""
		for round := 0; round < h.it.clientRounds && ctx.Err() == nil; round++ {
			for k := range clientTargets {
				i := (round + k) % len(clientTargets)
				target := []string{node, server, "stdio"}
				switch t := clientTargets[i]; {
				case t.name == "crelay":
					if crelay == "" {
						continue
					}
					target = append([]string{crelay}, target...)
				case t.flags != nil:
					if audits[i] == "" {
						audits[i] = h.newAudit("client")
					}
					target = append(append(append([]string{h.aegis, "wrap", "--audit", audits[i], "--signing-key", h.key}, t.flags...), "--"), target...)
				}
				ns, rev, err := runClient(ctx, c.argv(h.it.clientCalls, target))
				if err != nil {
					return fmt.Errorf("%s, %s: %w", c.name, clientTargets[i].name, err)
				}
				if rev != "" {
					revision = rev
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
		r := ClientResult{Client: c.name, Revision: revision, Direct: s[0].stats(), CRelay: s[1].stats(), None: s[2].stats(), Strict: s[3].stats()}
		r.CRelayOverhead = Num(math.NaN())
		r.NoneVsCRelay = Ratio(math.NaN())
		if r.CRelay.N > 0 {
			r.CRelayOverhead = Num(r.CRelay.Median - r.Direct.Median)
			r.NoneVsCRelay = ratio(r.None.Median, r.CRelay.Median)
		}
		r.NoneOverhead = r.None.Median - r.Direct.Median
		r.StrictOverhead = r.Strict.Median - r.Direct.Median
		h.res.Clients = append(h.res.Clients, r)
		h.logf("   %s → server-everything (%s): direct %s, C relay %s (+%s), wrap none %s (+%s; %.2f× the C relay's call, ≤ %.1f), wrap strict %s (+%s)",
			c.name, revision, us(r.Direct.Median), us(r.CRelay.Median), us(float64(r.CRelayOverhead)), us(r.None.Median), us(r.NoneOverhead), r.NoneVsCRelay, clientNoneLimit,
			us(r.Strict.Median), us(r.StrictOverhead))
	}
	return nil
}

// clientKey names a client's samples against one target, in the plots'
// legend too.
func clientKey(client, target string) string { return client + ", " + target }

// runClient runs a client process and returns the round trips it printed,
// and the revision its session spoke when it printed one.
func runClient(ctx context.Context, argv []string) ([]int64, string, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, "", fmt.Errorf("%v: %w", argv, err)
	}
	var res struct {
		NS       []int64
		Revision string
	}
	if err := json.Unmarshal(out, &res); err != nil || len(res.NS) == 0 {
		return nil, "", fmt.Errorf("%v printed %.200q: %v", argv, out, err)
	}
	return res.NS, res.Revision, nil
}
