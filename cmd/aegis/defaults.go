package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/aegisrelay/aegis/internal/userfiles"
)

// config names servers and finds the key as wrap does (package
// userfiles).
var (
	defaultKeyPath = userfiles.KeyPath
	safeName       = userfiles.SafeName
)

// ensureParent creates the missing folders above path, each with mode
// 0700 (they hold a private key or evidence), and tells which it made.
func ensureParent(cmd, path string) error {
	made, err := userfiles.MkdirParents(path)
	for _, d := range made {
		fmt.Fprintf(os.Stderr, "aegis %s: created folder %s (mode 0700)\n", cmd, d)
	}
	return err
}

// selfCommand is how the user can run this aegis again: "aegis" when that
// is what PATH finds, "go run ./cmd/aegis" under go run, else its path.
func selfCommand() string {
	exe, err := os.Executable()
	if err != nil {
		return "aegis"
	}
	if strings.Contains(exe, string(filepath.Separator)+"go-build") {
		return "go run ./cmd/aegis"
	}
	if p, err := exec.LookPath("aegis"); err == nil {
		a, err1 := os.Stat(p)
		b, err2 := os.Stat(exe)
		if err1 == nil && err2 == nil && os.SameFile(a, b) {
			return "aegis"
		}
	}
	return exe
}
