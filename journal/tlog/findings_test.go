package tlog

import (
	"errors"
	"fmt"
	"testing"
)

func TestFindings(t *testing.T) {
	torn := &TornError{Where: "cp.history", Bytes: 7}
	fork := fmt.Errorf("cp #2: %w", ErrFork)
	for _, tt := range []struct {
		name     string
		err      error
		want     int
		tornOnly bool
	}{
		{"none", nil, 0, false},
		{"one torn", torn, 1, true},
		{"torn, joined", errors.Join(torn), 1, true},
		{"torn and a fork", errors.Join(torn, fork), 2, false},
		{"nested joins", errors.Join(errors.Join(torn, torn), fork), 3, false},
		{"a fork", fork, 1, false},
		{"two torn, nested", errors.Join(torn, errors.Join(torn)), 2, true},
	} {
		errs, tornOnly := Findings(tt.err)
		if len(errs) != tt.want || tornOnly != tt.tornOnly {
			t.Errorf("Findings(%s) = %d errors, tornOnly %v; want %d, %v", tt.name, len(errs), tornOnly, tt.want, tt.tornOnly)
		}
	}
}
