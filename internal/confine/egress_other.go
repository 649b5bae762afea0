//go:build !linux

package confine

import (
	"errors"
	"net"
	"os"
	"os/exec"
)

func egressCommand(*Profile, *exec.Cmd, string) (*os.File, error) {
	return nil, errors.New("confine: --allow-egress is Linux's")
}

func receiveListener(*os.File) (net.Listener, error) {
	return nil, errors.New("confine: --allow-egress is Linux's")
}
