package main

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"os"

	"github.com/aegisrelay/aegis/exitcode"
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
		p, err := defaultKeyPath()
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
	pemBytes, err := record.MarshalPrivateKey(key)
	if err != nil {
		return fail(1, "keygen: %v", err)
	}
	pub := record.FormatPublicKey(key.Public().(ed25519.PublicKey))
	if *force {
		// Both refused before either is written: never a new key beside
		// an old .pub.
		for _, p := range []string{*out, *out + ".pub"} {
			if err := checkReplaceable(p); err != nil {
				return fail(1, "keygen: %v", err)
			}
		}
	}
	if err := writeSecret(*out, pemBytes, *force); err != nil {
		return fail(1, "keygen: %v", err)
	}
	if err := writeFile(*out+".pub", []byte(pub+"\n"), 0o644, *force); err != nil {
		return fail(1, "keygen: %v", err)
	}
	fmt.Fprintf(os.Stderr, "aegis keygen: wrote %s (private, mode 0600) and %s.pub\n", *out, *out)
	fmt.Println(pub)
	return exitcode.OK
}

// writeSecret writes a new file with mode 0600, refusing to replace one
// unless force; the mode is set at creation, never widened after.
func writeSecret(path string, data []byte, force bool) error {
	return writeFile(path, data, 0o600, force)
}

// With force, an existing path that is not a regular file (a FIFO, a
// device, a directory) is refused, never opened: opening a FIFO to write
// blocks, and a device is no place for a key (nor one to chmod).
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
