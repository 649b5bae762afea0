// Package agentkey signs with an Ed25519 key an ssh-agent holds: a
// crypto.Signer that asks the agent over its unix socket, so that the
// root key of an audit log (wrap's --signing-key ssh-agent:…) never
// leaves the agent. The journal asks it for the session key's certificate
// once per log opened, and for each head file and checkpoint; every record
// is signed in process with the session key (package record).
//
// ChildEnv keeps the agent's socket (SSH_AUTH_SOCK) out of the
// environment of the server wrap starts: whoever reaches the agent can
// have it sign as the log.
//
// It is a package of its own beside record's key code so that neither
// record nor what imports it (the journal, the relay) depends on the
// agent protocol; only the command that reads --signing-key does.
package agentkey
