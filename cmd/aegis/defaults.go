package main

import (
	"fmt"
	"os"

	"github.com/aegisrelay/aegis/internal/userfiles"
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
