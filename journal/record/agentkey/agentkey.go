package agentkey

import (
	"bytes"
	"crypto"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/aegisrelay/aegis/journal/record"
)

// Signer is a crypto.Signer of an Ed25519 key held by an ssh-agent:
// each Sign is one request to the agent (one round trip over its unix
// socket). The journal asks it for the session key's certificate once
// per log opened, and for each head file and checkpoint, on their own
// goroutines; never for a record. Sign may be called concurrently (the
// requests take turns on the one connection). A request that fails is
// made once more on a new connection (an agent restarted).
type Signer struct {
	sock string
	key  ssh.PublicKey
	pub  ed25519.PublicKey

	mu   sync.Mutex
	conn net.Conn
	ag   agent.ExtendedAgent
}

// Dial connects to the ssh-agent at sock and returns a signer of
// the Ed25519 key it holds that want names: its SHA256 fingerprint, its
// public key (OpenSSH's or aegis's form), or a .pub file holding it.
func Dial(sock, want string) (*Signer, error) {
	if sock == "" {
		return nil, errors.New("no ssh-agent: SSH_AUTH_SOCK is not set (start one with eval \"$(ssh-agent)\" and add the key with ssh-add)")
	}
	match, err := matcher(want)
	if err != nil {
		return nil, err
	}
	s := &Signer{sock: sock}
	if err := s.dial(); err != nil {
		return nil, err
	}
	keys, err := s.ag.List()
	if err != nil {
		s.conn.Close()
		return nil, fmt.Errorf("listing the keys of the ssh-agent at %s: %v", sock, err)
	}
	var held []string
	for _, k := range keys {
		pk, err := ssh.ParsePublicKey(k.Blob)
		if err != nil {
			continue
		}
		fp := ssh.FingerprintSHA256(pk)
		held = append(held, fp+" "+k.Comment+" ("+pk.Type()+")")
		if !match(pk, fp) {
			continue
		}
		ck, ok := pk.(ssh.CryptoPublicKey)
		raw, isEd := ed25519.PublicKey(nil), false
		if ok {
			raw, isEd = ck.CryptoPublicKey().(ed25519.PublicKey)
		}
		if !isEd || pk.Type() != ssh.KeyAlgoED25519 {
			s.conn.Close()
			return nil, fmt.Errorf("the ssh-agent's key %s %s is %s, not Ed25519: aegis signs with Ed25519 only (make one with ssh-keygen -t ed25519)", fp, k.Comment, pk.Type())
		}
		s.key, s.pub = pk, raw
		return s, nil
	}
	s.conn.Close()
	if len(held) == 0 {
		return nil, fmt.Errorf("the ssh-agent at %s holds no keys (add one with ssh-add; a locked agent lists none)", sock)
	}
	return nil, fmt.Errorf("the ssh-agent at %s holds no key %s; it holds %s (ssh-add -l lists them)", sock, want, strings.Join(held, ", "))
}

// matcher returns what tells the key want names: by fingerprint
// (SHA256:…), or by its public key, given as OpenSSH's or aegis's text
// or as a .pub file holding either.
func matcher(want string) (func(ssh.PublicKey, string) bool, error) {
	if strings.HasPrefix(want, "SHA256:") {
		return func(_ ssh.PublicKey, fp string) bool { return fp == want }, nil
	}
	var pub ed25519.PublicKey
	var err error
	if strings.HasPrefix(want, ssh.KeyAlgoED25519+" ") || strings.HasPrefix(want, "ed25519:") {
		pub, err = record.ParsePublicKey(want)
	} else {
		pub, err = record.ReadPublicKeyFile(want)
	}
	if err != nil {
		return nil, fmt.Errorf("%v (name the agent's key by its fingerprint, ssh-agent:SHA256:…, as ssh-add -l prints it, or by its public key or .pub file)", err)
	}
	want2, err := ssh.NewPublicKey(pub)
	if err != nil {
		return nil, err
	}
	return func(pk ssh.PublicKey, _ string) bool { return bytes.Equal(pk.Marshal(), want2.Marshal()) }, nil
}

// dial (re)connects to the agent. Called with mu held, or before s is
// shared.
func (s *Signer) dial() error {
	conn, err := net.Dial("unix", s.sock)
	if err != nil {
		return fmt.Errorf("cannot reach the ssh-agent at %s (SSH_AUTH_SOCK): %v", s.sock, err)
	}
	s.conn, s.ag = conn, agent.NewClient(conn)
	return nil
}

// Socket is the agent's socket, as Dial was given it.
func (s *Signer) Socket() string { return s.sock }

// Close closes the connection to the agent.
func (s *Signer) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn.Close()
}

// Public returns the key's ed25519.PublicKey.
func (s *Signer) Public() crypto.PublicKey { return s.pub }

// Sign asks the agent for the Ed25519 signature of msg (RFC 8032: the
// agent signs msg itself, not a digest; opts must say so, crypto.Hash(0)).
// The caller checks the signature against Public before relying on it.
func (s *Signer) Sign(_ io.Reader, msg []byte, opts crypto.SignerOpts) ([]byte, error) {
	if opts != nil && opts.HashFunc() != crypto.Hash(0) {
		return nil, errors.New("ssh-agent: Ed25519 signs the message, not a digest")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sig, err := s.ag.Sign(s.key, msg)
	if err != nil {
		// The agent's client does not say whether the connection broke
		// (it formats the error): dial again and ask once more, which
		// costs one request if the agent refused instead.
		s.conn.Close()
		if derr := s.dial(); derr != nil {
			return nil, fmt.Errorf("%v; %w", err, derr)
		}
		sig, err = s.ag.Sign(s.key, msg)
	}
	if err != nil {
		return nil, fmt.Errorf("ssh-agent at %s: signing with %s: %v", s.sock, ssh.FingerprintSHA256(s.key), err)
	}
	if sig.Format != ssh.KeyAlgoED25519 || len(sig.Blob) != ed25519.SignatureSize {
		return nil, fmt.Errorf("ssh-agent at %s: a %s signature of %d bytes, not Ed25519's", s.sock, sig.Format, len(sig.Blob))
	}
	return sig.Blob, nil
}

// ChildEnv returns a child's environment env (nil: this process's) with
// SSH_AUTH_SOCK taken out. The agent signs whatever a process that
// reaches its socket asks, and a child that could ask it would certify
// a session key of its own and sign records as the log's. An env given
// with SSH_AUTH_SOCK in it on purpose (wrap --clean-env --env
// SSH_AUTH_SOCK) is refused for the same reason: ok is false. The
// socket's path is still in the file system: a child that finds it by
// itself is not kept out by this.
func ChildEnv(env []string) (kept []string, ok bool) {
	inherited := env == nil
	if inherited {
		env = os.Environ()
	}
	kept = make([]string, 0, len(env))
	for _, e := range env {
		if name, _, _ := strings.Cut(e, "="); name != "SSH_AUTH_SOCK" {
			kept = append(kept, e)
		} else if !inherited {
			return nil, false
		}
	}
	return kept, true
}
