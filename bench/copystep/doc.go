// Package copystep is a measurement, not product code: BenchmarkCopyStep
// compares the relay's step (read, find lines, hash, write) with a
// tee/splice step through a hold pipe, over pipes and socketpairs, to show
// why aegis relays with read and write. Its findings are in BENCHMARKS.md
// ("splice/tee: measured and not built").
//
//	go test -run XXX -bench '^BenchmarkCopyStep$' -benchtime 1s ./bench/copystep/
package copystep
