package bench

import (
	"sync/atomic"
	"time"
)

// The harness's requests, as prefix + id + suffix. ping and bench/big are
// relayed unrecorded (only tools/call is recorded); the echo
// child answers tools/call and bench/big with its AEGIS_BENCH_SIZE text.
var (
	pingReq = [2]string{`{"jsonrpc":"2.0","id":`, `,"method":"ping"}` + "\n"}
	callReq = [2]string{`{"jsonrpc":"2.0","id":`, `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}` + "\n"}
	bigReq  = [2]string{`{"jsonrpc":"2.0","id":`, `,"method":"bench/big","params":{}}` + "\n"}
)

// roundTrip sends one request and reads its answer, in lock step. It
// returns the time from the start of the write to the end of the read,
// and the bytes of the answer.
func (p *proc) roundTrip(req [2]string) (time.Duration, int, error) {
	p.id++
	t0 := time.Now()
	if err := p.send(req[0], p.id, req[1]); err != nil {
		return 0, 0, err
	}
	n, err := p.expect(p.id)
	return time.Since(t0), n, err
}

// warm makes n lock-step round trips, to pay for start-up and page faults
// before anything is timed.
func (p *proc) warm(req [2]string, n int) error {
	for range n {
		if _, _, err := p.roundTrip(req); err != nil {
			return err
		}
	}
	return nil
}

// pipeline sends n requests, at most w of them unanswered at any time
// (a writer goroutine takes a credit per request, the reader returns one
// per answer), and reads every answer, checking the ids arrive in order.
// It returns the elapsed time; each request's latency goes to lat when
// not nil.
func (p *proc) pipeline(req [2]string, n, w int, lat *samples) (time.Duration, error) {
	first := p.id + 1
	p.id += n
	sent := make([]atomic.Int64, n) // ns after t0
	credits := make(chan struct{}, w)
	for range w {
		credits <- struct{}{}
	}
	stop := make(chan struct{})
	werr := make(chan error, 1)
	t0 := time.Now()
	go func() {
		for i := range n {
			select {
			case <-credits:
			case <-stop:
				werr <- nil
				return
			}
			sent[i].Store(int64(time.Since(t0)))
			if err := p.send(req[0], first+i, req[1]); err != nil {
				werr <- err
				return
			}
		}
		werr <- nil
	}()
	for i := range n {
		if _, err := p.expect(first + i); err != nil {
			close(stop)
			return 0, err
		}
		if lat != nil {
			lat.add(time.Since(t0) - time.Duration(sent[i].Load()))
		}
		credits <- struct{}{}
	}
	elapsed := time.Since(t0)
	return elapsed, <-werr
}
