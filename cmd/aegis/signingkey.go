package main

import (
	"crypto"
	"errors"
	"os"
	"strings"

	"github.com/aegisrelay/aegis/internal/confine"
	"github.com/aegisrelay/aegis/internal/exitcode"
	"github.com/aegisrelay/aegis/journal/record"
	"github.com/aegisrelay/aegis/journal/record/agentkey"
)

// agentPrefix begins a --signing-key that names a key an ssh-agent holds
// rather than a file: ssh-agent:SHA256:… (ssh-keygen -lf, ssh-add -l),
// ssh-agent:ssh-ed25519 AAAA…, ssh-agent:ed25519:… or ssh-agent:FILE.pub.
// A key file whose name begins so is named ./ssh-agent:….
const agentPrefix = "ssh-agent:"

// signingKeyUsage is the --signing-key flag's help.
const signingKeyUsage = "sign with the PKCS#8 PEM Ed25519 key in `FILE` (default: signing.key in $XDG_CONFIG_HOME/aegis; see aegis keygen), refused if its group or others have any permission on it; or with the Ed25519 key an ssh-agent ($SSH_AUTH_SOCK) holds: ssh-agent:SHA256:<fingerprint>, ssh-agent:FILE.pub or ssh-agent:'ssh-ed25519 AAAA…'"

// wrapSigningKey returns the root key --signing-key names: a key an
// ssh-agent holds (agentPrefix) or a private key file. On failure it says
// why on stderr and returns wrap's exit status, 2: a key that cannot be
// had is a setup mistake, found before the log is opened.
func wrapSigningKey(spec string, allowOpen bool) (crypto.Signer, int, bool) {
	if want, ok := strings.CutPrefix(spec, agentPrefix); ok {
		s, err := agentkey.Dial(os.Getenv("SSH_AUTH_SOCK"), want)
		if err != nil {
			return nil, fail(exitcode.Usage, "wrap: --signing-key %s: %v", spec, err), false
		}
		return s, 0, true
	}
	key, err := record.ReadPrivateKeyFile(spec, allowOpen)
	if errors.Is(err, record.ErrKeyMode) {
		return nil, fail(exitcode.Usage, "wrap: --signing-key: %v; --allow-open-key accepts it anyway", err), false
	}
	if err != nil {
		return nil, fail(exitcode.Usage, "wrap: --signing-key: %v", err), false
	}
	return key, 0, true
}

// agentFreeEnv returns the child's environment (nil: aegis's own) with
// SSH_AUTH_SOCK taken out when the root key is an ssh-agent's
// (agentkey.ChildEnv, which says why); a child given the variable on
// purpose is refused. README's section on the agent says what this
// does not cover.
//
// Under --confine, prof.Agent names the agent's socket, and the helper
// refuses a profile that would let the child reach it (confine's
// agentReach): without --allow-unix the child cannot make a unix socket.
func agentFreeEnv(key crypto.Signer, env []string, prof *confine.Profile) ([]string, error) {
	ag, ok := key.(*agentkey.Signer)
	if !ok {
		return env, nil
	}
	if prof != nil {
		prof.Agent = ag.Socket()
	}
	kept, ok := agentkey.ChildEnv(env)
	if !ok {
		return nil, errors.New("--env SSH_AUTH_SOCK with --signing-key ssh-agent: would let the server ask the agent to sign as this log; leave it out")
	}
	return kept, nil
}
