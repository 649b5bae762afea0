package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"unicode/utf8"

	"github.com/aegisrelay/aegis/gate"
	"github.com/aegisrelay/aegis/journal/record"
	"github.com/aegisrelay/aegis/policy"
	"github.com/aegisrelay/aegis/relay"
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

// start reloads the policy on SIGHUP (which the session also forwards to
// the child) and when the file changes, recording each reload through the
// relay, until the returned stop is called. A change that leaves the bytes
// as they were last seen is not a reload; SIGHUP always is.
func (w *wrapPolicy) start(r *relay.Relay, logf func(string, ...any)) (stop func()) {
	if w == nil {
		return func() {}
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	var changed <-chan struct{}
	watcher, err := policy.Watch(w.path, 0)
	if err != nil {
		logf("--policy: not watching %s for changes (%v); SIGHUP still reloads it", w.path, err)
	} else {
		changed = watcher.C()
	}
	record := func(set, status string) error {
		return r.Note(&record.PolicyReload{Set: set, Status: clip(status, maxReloadStatus)})
	}
	seen := w.gate.Current().Set()
	reload := func(force bool) {
		data, err := policy.ReadFile(w.path)
		if err == nil {
			set := policy.SetOf(data)
			if set == seen && !force {
				return
			}
			seen = set
			err = w.gate.Reload(w.path, data, record)
		} else {
			seen = ""
			err = w.gate.ReloadFile(w.path, record)
		}
		switch {
		case errors.Is(err, relay.ErrEnded):
		case err == nil:
			logf("policy %s reloaded: %s applied", w.path, w.gate.Current().Set())
		default:
			logf("policy %s reload rejected, %s stays in force:", w.path, w.gate.Current().Set())
			printPolicyError(os.Stderr, "reload", err)
		}
	}
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		for {
			select {
			case <-hup:
				reload(true)
			case <-changed:
				reload(false)
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(hup)
		close(done)
		<-finished
		if watcher != nil {
			watcher.Close()
		}
	}
}

// maxReloadStatus bounds a policy_reload's status: a rejection's message
// can quote the policy file (up to policy's 4 MiB), and a record must fit
// in a line (journal.Fits). The whole message goes to stderr.
const maxReloadStatus = 4 << 10

// clip cuts s to at most n bytes, between whole UTF-8 characters, marking
// the cut with "…".
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	k := n - len("…")
	for k > 0 && !utf8.RuneStart(s[k]) {
		k--
	}
	return s[:k] + "…"
}
