// Package bench is aegis's end-to-end benchmark harness: it
// measures every figure of the performance table through the real aegis
// binary and real pipes or socketpairs, each beside the floor it is judged
// against, measured in the same run, and reports them as a Markdown table,
// a JSON document and plots.
//
// Run it from the module root:
//
//	go run ./bench/cmd/aegis-bench            # full run, a few minutes
//	go run ./bench/cmd/aegis-bench -quick     # under a minute, noisier
//	go run ./bench/cmd/aegis-bench -dir /mnt/ssd/tmp   # audit logs on another filesystem
//
// # Method
//
// Every figure is a ratio to a floor timed in the same run, because the
// absolute numbers of a shared machine drift from minute to minute:
//
//   - Floors and figures that are compared are run interleaved, in small
//     blocks, round after round, against processes that all stay alive for
//     the whole section; so they share the same drift.
//   - Latencies are per operation (one request written, its response read);
//     the report gives the median and the 99th percentile (nearest rank).
//   - Overheads are differences of medians: wrap's overhead is its round
//     trip minus the round trip straight to the echo child, judged against
//     the same difference for the floor relay.
//   - Beside wall time, the report gives each relay process's own CPU time
//     per operation (the sum of its threads' schedstat run time; its
//     child's not counted), and, for verify and sha256sum, user + system
//     time per run. On a loaded machine wall time includes the time spent
//     waiting for a CPU; CPU time does not, so it is the steadier figure
//     when the load is high, and the one a profile accounts for.
//
// # Processes
//
// The harness plays the client itself, except in two sections. start
// spawns the echo child, directly and through wrap, and times spawn to
// initialize answered. clients runs the official TypeScript SDK v1 client
// (interop/bench_client.mjs), v2 client (node/client_v2.mjs) and Go SDK
// client (aegis-bench-child goclient) against the pinned server-everything
// on Node, directly, through the C floor relay placed where wrap is
// (direct + a relay's two hops), and through wrap at none and strict, each
// client process a session of its own, rounds rotating the targets. The
// Node programs use interop/'s pinned npm packages (run npm ci there
// first); the harness writes node/*.mjs into its temporary directory
// beside a link to interop/node_modules, from which Node resolves them.
//
// Otherwise the harness plays the client itself. It builds, from the module, aegis
// (CGO_ENABLED=0, as released; or takes -aegis) and its helper program,
// aegis-bench-child, whose modes are the processes under the client:
//
//	echo        the MCP server every figure talks to (bench/cmd/aegis-bench-child)
//	floorrelay  the floor a relay is judged against: plain 64 KiB read/write
//	            loops between the client and an echo child
//	httpfloor   the floor an HTTP front is judged against: net/http and a
//	            pipe to one echo child (package internal/httpfloor)
//	profwrap    aegis wrap's wiring in process under the CPU profiler (-pprof)
//	goclient    the official Go SDK client, for the clients section
//
// The helpers are a program of their own so that they carry nothing of the
// harness: its plotting library's fonts alone are 40 MiB resident.
//
// The roundtrip section adds a floor in C, crelay (bench/crelay/relay.c):
// one thread that polls, reads 64 KiB at most and writes, between the
// client and an echo child on two pipes. It is the floor of relay CPU per
// message (a Go relay's goroutines and runtime are costs a relay need not
// pay); the harness compiles it with gcc into its temporary directory, and
// where gcc is missing says so and leaves the rows it floors unmeasured.
//
// The durability section times a recorded tools/call at each level
// beside three sync floors: fdatasync after an append (the file grows);
// over pre-zeroed space, sampled in bursts, sync after sync; and over
// pre-zeroed space, each sync after a lock-step round trip to the echo
// child (not counted), as each of the journal's syncs follows a hop
// between processes. The last is the floor the strict and reply rows
// are judged by. bench/cmd/syncpath draws a recorded call's path step by
// step, from an aegis built with -tags aegispathtrace.
//
// The http section (http.go) is the harness as an HTTP client (net/http,
// sending what a conforming MCP client sends) of four fronts to the echo
// child, alive together and interleaved: httpfloor, aegis wrap --listen
// (with its default bearer token; unrecorded requests, and tools/call at
// every durability level), supergateway's Streamable HTTP mode
// (interop's pinned npm package, on Node) and the TypeScript SDK v2's own
// Streamable HTTP transport handing each message to the child through the
// SDK's stdio transport (node/v2front.mjs). The unrecorded request is a
// ping in a 2025-11-25 session, and a stateless 2026-07-28 resources/list
// (that revision has no ping) to every front but supergateway, which
// serves no 2026-07-28 request. Then each front alone with 64 sessions at
// once, for memory per session and latency under load. It runs in a full
// run, and with -quick only when named (-only http).
//
// The client side of the process under test is either two pipes (what Go
// and Python MCP clients hand a server) or two UNIX socketpairs (what
// Node-based clients hand it). Requests are a ping (relayed unrecorded), a
// tools/call (recorded) and bench/big (an unknown method, unrecorded, that
// the echo child answers with as many bytes as a tools/call).
//
// # Counting fdatasyncs
//
// Calls per fdatasync (the group-commit figure) is read from the audit log
// itself: the journal signs the last record of every commit group, and at
// strict every group is written and fdatasync'd once, so the number of
// signed records between session_start and session_end is the number of
// fdatasyncs the calls needed. The report also gives elapsed ÷ floor as a
// cross-check that needs no knowledge of the journal (an upper bound:
// stalls of a loaded machine count as syncs there).
package bench
