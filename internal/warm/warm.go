// Package warm builds crypto/ed25519's fixed-base table while the rest of
// aegis initializes, for aegis wrap, whose path to its child's first
// answer waits for it.
//
// Parsing the signing key derives its public half, the first fixed-base
// multiplication of the process, which builds the table first (about a
// millisecond of CPU, once). Started from this package's init, that work
// runs on another core while the packages initialized after it run their
// own init, and while wrap parses its flags; wrap's key parse then finds
// the table built, or waits for the rest of it. Importing the package is
// what turns it on; it is imported by cmd/aegis alone.
package warm

import (
	"crypto/ed25519"
	"os"
)

func init() {
	if len(os.Args) > 1 && os.Args[1] == "wrap" {
		go ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	}
}
