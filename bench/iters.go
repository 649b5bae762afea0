package bench

import "math"

// iters are the iteration counts of one run. A full run takes a few
// minutes on a quiet two-core machine; a quick one under a minute.
type iters struct {
	fsync        int   // raw fdatasync samples
	rtLock       int   // lock-step round trips per target and transport
	rtPipe       int   // pipelined messages per target and transport
	rtWindow     int   // messages in flight when pipelined
	block        int   // ops per target per round when interleaving
	durability   int   // recorded calls per durability level
	inFlight     []int // calls in flight
	inFlightN    int   // calls per in-flight level (fewer at 1 in flight: see inFlightSection)
	sizes        []int // response sizes
	sizeN        []int // round trips per size and target
	scanRounds   int
	scanFrames   int // frames per round
	verifyCalls  int // calls in the log verify reads (2 records each)
	verifyRuns   int
	rssInFlight  int
	profile      int // ops per profiled workload
	starts       int // starts per target
	clientRounds int // rounds of each real client against each target
	clientCalls  int // timed calls per client process
	httpRounds   int // pipelined rounds per HTTP target
	scale        float64
}

// warm is n warm-up round trips scaled as the timed ones are, at least
// one: the first round trip pays for a process's start and first page
// faults, more make the caches warm.
func (it iters) warm(n int) int { return max(1, int(math.Round(float64(n)*it.scale))) }

func newIters(quick bool, scale float64) iters {
	it := iters{
		fsync: 1000, rtLock: 8000, rtPipe: 60000, rtWindow: 32, block: 50,
		durability: 800,
		inFlight:   []int{1, 8, 32, 128}, inFlightN: 8000,
		sizes: []int{4 << 10, 1 << 20, 16 << 20}, sizeN: []int{2000, 200, 30},
		scanRounds: 30, scanFrames: 4000,
		verifyCalls: 50000, verifyRuns: 7,
		rssInFlight:  1000,
		profile:      3000,
		starts:       100,
		clientRounds: 4, clientCalls: 300,
		httpRounds: 10,
		scale:      scale,
	}
	if quick {
		it.fsync, it.rtLock, it.rtPipe, it.block = 150, 1000, 10000, 25
		it.durability, it.inFlightN = 100, 1000
		it.sizeN = []int{200, 24, 6}
		it.scanRounds, it.scanFrames = 9, 2000
		it.verifyCalls, it.verifyRuns = 10000, 3
		it.profile = 600
		it.starts = 20
		it.clientRounds, it.clientCalls = 2, 100
	}
	sc := func(n *int, least int) { *n = max(least, int(math.Round(float64(*n)*scale))) }
	sc(&it.fsync, 5)
	sc(&it.rtLock, 10)
	sc(&it.rtPipe, 2*it.rtWindow)
	sc(&it.block, 2)
	sc(&it.durability, 5)
	sc(&it.inFlightN, 2*it.inFlight[len(it.inFlight)-1])
	for i := range it.sizeN {
		sc(&it.sizeN[i], 1)
	}
	sc(&it.scanRounds, 3)
	sc(&it.scanFrames, 50)
	sc(&it.verifyCalls, 100)
	sc(&it.verifyRuns, 1)
	sc(&it.profile, 50)
	sc(&it.starts, 3)
	sc(&it.clientRounds, 1)
	sc(&it.clientCalls, 5)
	sc(&it.httpRounds, 2)
	return it
}
