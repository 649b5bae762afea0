// Package userfiles is where aegis keeps a user's files when no flag names
// them, by the XDG Base Directory specification (the signing key is
// configuration, the audit logs are state), and how it writes the key:
// the default paths, a server's name for its default log (ServerName)
// and its logs found by that name (Servers, ServerLogs), the folders
// made for them (mode 0700, for they hold a private key or evidence),
// and the key pair keygen and demo write (the private key mode 0600 from
// its creation, never widened after). An explicit flag always wins; the
// command that reads the flags decides.
package userfiles
