package userfiles

import (
	"crypto"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/aegisrelay/aegis/journal/record"
	"github.com/aegisrelay/aegis/journal/record/agentkey"
)

// AgentPrefix begins a signing key spec that names a key an ssh-agent
// holds rather than a file: ssh-agent:SHA256:… (ssh-keygen -lf, ssh-add
// -l), ssh-agent:ssh-ed25519 AAAA…, ssh-agent:ed25519:… or
// ssh-agent:FILE.pub. A key file whose name begins so is named
// ./ssh-agent:….
const AgentPrefix = "ssh-agent:"

// SigningKey returns the root key spec names: the key an ssh-agent at
// $SSH_AUTH_SOCK holds (AgentPrefix; the error then begins with spec), or
// the private key file spec (record.ReadPrivateKeyFile: a file its group
// or others may use is record.ErrKeyMode unless allowOpen).
func SigningKey(spec string, allowOpen bool) (crypto.Signer, error) {
	if want, ok := strings.CutPrefix(spec, AgentPrefix); ok {
		s, err := agentkey.Dial(os.Getenv("SSH_AUTH_SOCK"), want)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", spec, err)
		}
		return s, nil
	}
	return record.ReadPrivateKeyFile(spec, allowOpen)
}

// ErrAgentEnv refuses a child given SSH_AUTH_SOCK on purpose when the
// root key is an ssh-agent's.
var ErrAgentEnv = errors.New("--env SSH_AUTH_SOCK with --signing-key ssh-agent: would let the server ask the agent to sign as this log; leave it out")

// AgentFreeEnv returns the child's environment env (nil: aegis's own)
// with SSH_AUTH_SOCK taken out when key is an ssh-agent's
// (agentkey.ChildEnv, which says why), and the agent's socket ("" for a
// key of a file), which a confined child must not reach (confine's
// Profile.Agent). README's section on the agent says what this does not
// cover.
func AgentFreeEnv(key crypto.Signer, env []string) (kept []string, socket string, err error) {
	ag, ok := key.(*agentkey.Signer)
	if !ok {
		return env, "", nil
	}
	kept, ok = agentkey.ChildEnv(env)
	if !ok {
		return nil, "", ErrAgentEnv
	}
	return kept, ag.Socket(), nil
}
