//go:build !unix

package relay

import "os"

// fdBlocks reports false where O_NONBLOCK cannot be read.
func fdBlocks(*os.File) bool { return false }
