// Package userfiles is where aegis keeps a user's files when no flag names
// them, by the XDG Base Directory specification (the signing key is
// configuration, the audit logs are state), and how it writes the key:
// the default paths, a server's name for its default log (ServerName)
// and its logs found by that name (Servers, ServerLogs), the folders
// made for them (mode 0700, for they hold a private key or evidence),
// and the key pair keygen and demo write (the private key mode 0600 from
// its creation, never widened after). DefaultKey says whether the key
// wrap reads when none is named is there (ErrNoKey); SigningKey opens the
// root key wrap's --signing-key names, a file or a key an ssh-agent holds
// (AgentPrefix), and AgentFreeEnv keeps the agent's socket from the child. An explicit flag always wins; the
// command that reads the flags decides.
//
// It also resolves what the commands that read logs are given: the logs
// the arguments of aegis log and verify stand for (FindLogs: a server's
// NAME, its default log standing for all its logs, globs, each log with
// its sealed segments) and prove's one LOG (FindLog), and the key verify
// pins to (PinKey: --key's, else keygen's public key when it exists).
// Their errors and notes are sentences for the command to print; those
// of PinKey name verify's flags.
package userfiles
