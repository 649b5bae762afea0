package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/aegisrelay/aegis/gate"
	"github.com/aegisrelay/aegis/journal/record"
	"github.com/aegisrelay/aegis/policy"
	"github.com/aegisrelay/aegis/relay"
	"github.com/aegisrelay/aegis/serve"
)

// wrapPolicy is wrap's --policy: the Gate the relay enforces and what
// reloads it. A nil *wrapPolicy is no policy (pass-through).
type wrapPolicy struct {
	path string
	gate *policy.Gate
}

// loadWrapPolicy reads and checks --policy FILE before the audit log is
// opened or the child started. On a bad file it prints every diagnostic and
// returns ok false.
func loadWrapPolicy(path string) (w *wrapPolicy, ok bool) {
	if path == "" {
		return nil, true
	}
	p, err := policy.Load(path)
	if err != nil {
		printPolicyError(os.Stderr, "wrap: --policy", err)
		return nil, false
	}
	return &wrapPolicy{path: path, gate: policy.NewGate(p)}, true
}

// printPolicyError prints a policy error: one line per diagnostic, each
// "aegis: FILE:LINE:COL: message", as compilers do.
func printPolicyError(w io.Writer, what string, err error) {
	var perr *policy.Error
	if errors.As(err, &perr) {
		for _, d := range perr.Diags {
			fmt.Fprintf(w, "aegis: %s\n", d)
		}
		fmt.Fprintf(w, "aegis: %s: %s is not a valid policy (%d problems)\n", what, perr.Diags[0].File, len(perr.Diags))
		return
	}
	fmt.Fprintf(w, "aegis: %s: %v\n", what, err)
}

// set is session_start's policy_set.
func (w *wrapPolicy) set() string {
	if w == nil {
		return record.PassThroughSet
	}
	return w.gate.Current().Set()
}

// relayGate is the relay's Gate: a nil interface without a policy (a nil
// *policy.Gate in a non-nil interface would not be pass-through).
func (w *wrapPolicy) relayGate() gate.Gate {
	if w == nil {
		return nil
	}
	return w.gate
}

// watch is serve.Config.Watch: the policy reloaded on SIGHUP and when its
// file changes (serve.PolicyReloads), a rejected reload's diagnostics
// printed as a bad --policy's are.
func (w *wrapPolicy) watch(r *relay.Relay, logf func(string, ...any)) (stop func()) {
	if w == nil {
		return func() {}
	}
	p := &serve.PolicyReloads{Path: w.path, Gate: w.gate, Rejected: func(err error) { printPolicyError(os.Stderr, "reload", err) }}
	return p.Watch(r, logf)
}
