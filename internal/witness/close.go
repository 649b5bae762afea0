package witness

import (
	"bytes"
	"fmt"
	"strconv"
	"time"

	"github.com/aegisrelay/aegis/internal/atomicfile"
	"github.com/aegisrelay/aegis/journal/tlog"
)

// Close ends the submissions: every witness that has not cosigned the
// latest checkpoint gets one more try, all of them together, each
// within Timeout after the one in flight (a witness that does not
// answer delays the end of the session by twice Timeout at most, never
// the calls); then it writes the state file,
// File+StateExt (doc.go). It returns one line per witness and one for
// the quorum, for the user, and the error of writing the state file.
func (s *Submitter) Close() ([]string, error) {
	close(s.final)
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	// Each request is bounded by Timeout; a proof that reads a long log
	// may take longer, and the session does not wait for it.
	t := time.NewTimer(2 * s.o.Timeout)
	select {
	case <-done:
	case <-t.C:
	}
	t.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hist != nil {
		if err := s.hist.Close(); err != nil && s.histErr == nil {
			s.histErr = err
		}
		s.hist = nil
	}
	o := s.latest.Load()
	if o == nil {
		return nil, nil
	}
	data, lines := s.state(o)
	err := writeFile(s.o.File+StateExt, data)
	if s.histErr != nil {
		lines = append(lines, fmt.Sprintf("witnessed checkpoints were not all recorded in %s: %v", s.o.File+WitnessedExt, s.histErr))
	}
	return lines, err
}

// state formats the state file for the latest checkpoint o, and the
// lines Close returns. s.mu is held.
func (s *Submitter) state(o *offer) ([]byte, []string) {
	var b bytes.Buffer
	b.WriteString(o.cp.Body())
	b.WriteByte('\n')
	if vkey, err := tlog.VerifierKey(o.cp.Origin, s.o.Key); err == nil && s.o.Key != nil {
		fmt.Fprintf(&b, "log %s\n", vkey)
	}
	var lines []string
	met := 0
	for _, p := range s.ws {
		fmt.Fprintf(&b, "witness %s state=%s cosigned=%d start=%s attempts=%d failures=%d url=%s key=%s",
			p.w.Name(), p.state, p.cosigned, p.start, p.attempts, p.failures, p.w.URL, p.w.Key)
		if p.detail != "" {
			fmt.Fprintf(&b, " detail=%s", strconv.Quote(p.detail))
		}
		b.WriteByte('\n')
		switch {
		case p.state == StateOK && p.cosigned == o.cp.Size:
			met++
			lines = append(lines, fmt.Sprintf("witness %s (%s) cosigned the last checkpoint, at %d records", p.w.Name(), p.w.URL, o.cp.Size))
		case p.cosigned > 0:
			lines = append(lines, fmt.Sprintf("witness %s (%s): %s, last cosigned at %d records: %s", p.w.Name(), p.w.URL, p.state, p.cosigned, p.detail))
		default:
			lines = append(lines, fmt.Sprintf("witness %s (%s): %s, cosigned nothing this session: %s", p.w.Name(), p.w.URL, p.state, p.detail))
		}
	}
	verdict := "met"
	if met < s.o.Quorum {
		verdict = "not met"
	}
	fmt.Fprintf(&b, "quorum %d of %d: %s\n", s.o.Quorum, len(s.ws), verdict)
	if verdict == "met" {
		lines = append(lines, fmt.Sprintf("the last checkpoint (%d records) is witnessed by %d of %d, quorum %d: in %s", o.cp.Size, met, len(s.ws), s.o.Quorum, s.o.File+WitnessedExt))
	} else {
		lines = append(lines, fmt.Sprintf("the last checkpoint (%d records) is NOT witnessed: %d of %d cosigned it, quorum %d (state in %s)", o.cp.Size, met, len(s.ws), s.o.Quorum, s.o.File+StateExt))
	}
	return b.Bytes(), lines
}

// writeFile replaces path with data atomically and durably
// (atomicfile), mode 0600.
func writeFile(path string, data []byte) error {
	if err := atomicfile.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("witness: %w", err)
	}
	return nil
}

// Abort stops the goroutines without a last round and writes nothing:
// for a wrap that refuses to start after Start.
func (s *Submitter) Abort() {
	select {
	case <-s.final:
		return
	default:
	}
	s.latest.Store(nil)
	close(s.final)
	s.wg.Wait()
	s.mu.Lock()
	if s.hist != nil {
		s.hist.Close()
		s.hist = nil
	}
	s.mu.Unlock()
}
