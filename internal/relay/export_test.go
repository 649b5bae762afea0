package relay

// SetParallelDigest sets the length from which a child's line is hashed
// while it is classified (for BenchmarkLongAnswer's serial case) and
// returns what undoes it.
func SetParallelDigest(n int) (undo func()) {
	old := parallelDigest
	parallelDigest = n
	return func() { parallelDigest = old }
}
