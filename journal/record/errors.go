package record

import (
	"errors"
	"fmt"

	"github.com/aegisrelay/aegis/internal/regular"
)

// Errors of the package. Classify with errors.Is.
var (
	// ErrRecord is matched by every error about the bytes of a record or
	// of a head file.
	ErrRecord = errors.New("journal: bad record")
	// ErrKey is matched by every error about a key's encoding.
	ErrKey = errors.New("journal: bad key")
	// ErrKeyMode means a private key file can be read or written by its
	// group or by others (ReadPrivateKeyFile).
	ErrKeyMode = errors.New("journal: private key file is open to group or others")
	// ErrNotRegular means a key or head file names a directory, a FIFO, a
	// device or a socket; it is not read. It is journal.ErrNotRegular.
	ErrNotRegular = regular.ErrNotRegular
	// ErrTooLarge means a key or head file is larger than any such file can
	// be; it is not read. It is journal.ErrTooLarge.
	ErrTooLarge = regular.ErrTooLarge
)

func recordError(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrRecord}, args...)...)
}
