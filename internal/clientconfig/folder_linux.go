package clientconfig

import "golang.org/x/sys/unix"

// walkFlags opens the folders passed through on the way to a file's:
// O_PATH needs no read permission on them, only search.
const walkFlags = unix.O_PATH
