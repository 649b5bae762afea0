package tlog

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

// TestReport: the lines verify --checkpoint prints of CheckFiles's
// answer, and whether a torn history tail is all that is wrong.
func TestReport(t *testing.T) {
	res := &Result{Origin: "o", Records: 9, Checkpoints: 3}
	torn := &TornError{Where: "cp.history", Bytes: 7}
	fork := fmt.Errorf("cp #2: %w", ErrFork)
	tests := []struct {
		name     string
		res      *Result
		err      error
		want     []string
		tornOnly bool
	}{
		{"unreadable", nil, errors.New("open cp: no such file"), []string{"checkpoints: open cp: no such file"}, false},
		{"extends all", res, nil, []string{"checkpoints: the log (o, 9 records) extends all 3"}, false},
		{"torn only", res, errors.Join(torn), []string{"checkpoints: the log (o, 9 records) extends every whole checkpoint (3)", "checkpoints: " + torn.Error()}, true},
		{"a fork and a torn tail", res, errors.Join(torn, fork), []string{"checkpoints: " + torn.Error(), "checkpoints: " + fork.Error()}, false},
	}
	for _, tt := range tests {
		got, tornOnly := Report(tt.res, tt.err)
		if !slices.Equal(got, tt.want) || tornOnly != tt.tornOnly {
			t.Errorf("%s: Report = %q, %v; want %q, %v", tt.name, got, tornOnly, tt.want, tt.tornOnly)
		}
	}
}
