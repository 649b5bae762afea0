package main

import (
	"fmt"
	"os"

	"github.com/aegisrelay/aegis/internal/exitcode"
	"github.com/aegisrelay/aegis/internal/userfiles"
	"github.com/aegisrelay/aegis/journal/record"
)

func runKeygen(args []string) int {
	fs := newFlags("keygen", "aegis keygen [--out FILE] [--force]", `  aegis keygen
      writes the private key (PKCS#8 PEM, mode 0600) where wrap looks for
      it, $XDG_CONFIG_HOME/aegis/signing.key (~/.config/aegis/signing.key),
      and signing.key.pub beside it, and prints the public key
      (ed25519:<base64>) to pin with verify --key
  aegis keygen --out ./ci.key
  openssl pkey -in ~/.config/aegis/signing.key -noout -text
`)
	out := fs.String("out", "", "write the private key to `FILE` (and the public key to FILE.pub); missing folders are created, mode 0700 (default: signing.key in $XDG_CONFIG_HOME/aegis)")
	force := fs.Bool("force", false, "overwrite existing key files")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return fail(exitcode.Usage, "keygen: unexpected %q (keygen takes only flags; see 'aegis keygen --help')", fs.Arg(0))
	}
	if *out == "" {
		p, err := userfiles.KeyPath()
		if err != nil {
			return fail(exitcode.Usage, "keygen: no --out FILE given, and %v", err)
		}
		*out = p
	}
	if err := ensureParent("keygen", *out); err != nil {
		return fail(exitcode.Usage, "keygen: cannot create the folder for %s: %v", *out, err)
	}
	key, err := record.GenerateKey()
	if err != nil {
		return fail(1, "keygen: %v", err)
	}
	pub, err := userfiles.WriteKey(*out, key, *force)
	if err != nil {
		return fail(1, "keygen: %v", err)
	}
	fmt.Fprintf(os.Stderr, "aegis keygen: wrote %s (private, mode 0600) and %s.pub\n", *out, *out)
	fmt.Println(pub)
	return exitcode.OK
}
