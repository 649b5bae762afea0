package userfiles

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/aegisrelay/aegis/journal/record"
)

// Pin is the key aegis verify pins a log to (nil: none, each session is
// checked only against the key it names), and how its report says so.
type Pin struct {
	Key  ed25519.PublicKey
	Mode string
}

// PinKey returns the key verify pins to: key's (verify --key, read by
// PublicKey); else, unless unpinned (--unpinned), the public key keygen
// wrote beside the default signing key (KeyPath + ".pub") when it exists.
// One that exists but does not read as a key is an error, never passed
// over. The errors name verify's flags.
func PinKey(key string, unpinned bool) (Pin, error) {
	const self = "unpinned: each session checked only against the key it names"
	switch {
	case key != "" && unpinned:
		return Pin{}, errors.New("give --key or --unpinned, not both")
	case key != "":
		pub, err := PublicKey(key)
		if err != nil {
			return Pin{}, fmt.Errorf("--key: %v", err)
		}
		return Pin{pub, "pinned to " + record.FormatPublicKey(pub)}, nil
	case unpinned:
		return Pin{Mode: self + " (--unpinned)"}, nil
	}
	priv, err := KeyPath()
	if err != nil {
		return Pin{Mode: self + " (no --key, and no default key: " + err.Error() + ")"}, nil
	}
	path := priv + ".pub"
	pub, err := record.ReadPublicKeyFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Pin{Mode: self + " (no --key, and no public key at " + path + ")"}, nil
	}
	if err != nil {
		return Pin{}, fmt.Errorf("the default public key: %v (name the key with --key, or give --unpinned)", err)
	}
	return Pin{pub, "pinned to " + record.FormatPublicKey(pub) + ", the default key " + path}, nil
}

// PublicKey reads a public key given on the command line: @FILE names a
// public key file (record.ReadPublicKeyFile), anything else is the key
// (record.ParsePublicKey).
func PublicKey(arg string) (ed25519.PublicKey, error) {
	if path, ok := strings.CutPrefix(arg, "@"); ok {
		return record.ReadPublicKeyFile(path)
	}
	return record.ParsePublicKey(arg)
}
