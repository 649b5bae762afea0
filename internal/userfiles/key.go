package userfiles

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"os"

	"github.com/aegisrelay/aegis/journal/record"
)

// WriteKey writes key to path (PKCS#8 PEM, mode 0600) and its public key,
// ed25519:<base64> and a newline, to path.pub (mode 0644), and returns
// the public key as written. Without force an existing file is refused
// ("use --force"); with force both paths are checked before either is
// written, so that a new key never lands beside an old .pub, and a path
// that is not a regular file (a FIFO, a device, a directory) is refused,
// never opened: opening a FIFO to write blocks, and a device is no place
// for a key (nor one to chmod).
func WriteKey(path string, key ed25519.PrivateKey, force bool) (string, error) {
	pemBytes, err := record.MarshalPrivateKey(key)
	if err != nil {
		return "", err
	}
	pub := record.FormatPublicKey(key.Public().(ed25519.PublicKey))
	if force {
		for _, p := range []string{path, path + ".pub"} {
			if err := checkReplaceable(p); err != nil {
				return "", err
			}
		}
	}
	if err := writeFile(path, pemBytes, 0o600, force); err != nil {
		return "", err
	}
	if err := writeFile(path+".pub", []byte(pub+"\n"), 0o644, force); err != nil {
		return "", err
	}
	return pub, nil
}

// writeFile writes a new file with mode, refusing to replace one unless
// force; the mode is set at creation, and with force set again on the
// file replaced, never widened after.
func writeFile(path string, data []byte, mode os.FileMode, force bool) error {
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if force {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
		if err := checkReplaceable(path); err != nil {
			return err
		}
	}
	f, err := os.OpenFile(path, flags, mode)
	if errors.Is(err, os.ErrExist) {
		return fmt.Errorf("%s exists; use --force to overwrite it", path)
	}
	if err != nil {
		return err
	}
	if force {
		if err := f.Chmod(mode); err != nil {
			f.Close()
			return err
		}
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// checkReplaceable refuses an existing path that is not a regular file.
func checkReplaceable(path string) error {
	st, err := os.Stat(path)
	if err != nil || st.Mode().IsRegular() {
		return nil
	}
	kind := "not a regular file"
	switch m := st.Mode(); {
	case m.IsDir():
		kind = "a directory, not a regular file"
	case m&os.ModeNamedPipe != 0:
		kind = "a FIFO, not a regular file"
	case m&os.ModeDevice != 0:
		kind = "a device, not a regular file"
	}
	return fmt.Errorf("%s is %s; keygen --force replaces only regular files", path, kind)
}

// ErrNoKey is DefaultKey's: no file is where wrap looks for the signing
// key when none is named.
var ErrNoKey = errors.New("no signing key")

// DefaultKey returns KeyPath, with ErrNoKey when nothing is there (a
// dangling symlink is there: reading it says why it fails). wrap refuses
// to start without it, and config says to make it.
func DefaultKey() (string, error) {
	p, err := KeyPath()
	if err != nil {
		return "", err
	}
	if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) {
		return p, ErrNoKey
	}
	return p, nil
}
