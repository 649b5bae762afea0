//go:build !linux

package confine

import (
	"errors"
	"testing"
)

func TestCommandRefusedOffLinux(t *testing.T) {
	cmd, l, err := Command(Profile{}, []string{"/bin/true"}, nil)
	if !errors.Is(err, ErrRefused) || cmd != nil || l != nil {
		t.Errorf("Command = %v, %v, %v; want nil, nil, ErrRefused", cmd, l, err)
	}
}
