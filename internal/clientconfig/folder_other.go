//go:build unix && !linux

package clientconfig

import "golang.org/x/sys/unix"

// walkFlags opens the folders passed through on the way to a file's.
const walkFlags = unix.O_RDONLY
