package copystep

import (
	"crypto/sha256"

	"github.com/aegisrelay/aegis/journal/record"
)

// readSize is the relay's read size, which frame.Reader doubles until a
// line fits.
const readSize = 64 << 10

// digest is the relay's digest of a line: the SHA-256 of its bytes without
// the '\n' that ends it.
func digest(line []byte) record.Digest {
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
	}
	return sha256.Sum256(line)
}
