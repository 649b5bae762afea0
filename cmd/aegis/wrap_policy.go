package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/aegisrelay/aegis/internal/policy"
	"github.com/aegisrelay/aegis/internal/serve"
)

// loadWrapPolicy reads and checks --policy FILE before the audit log is
// opened or the child started (serve.LoadPolicy), a rejected reload's
// diagnostics printed as a bad --policy's are. On a bad file it prints
// every diagnostic and returns ok false.
func loadWrapPolicy(path, server string) (w *serve.PolicyReloads, ok bool) {
	w, err := serve.LoadPolicy(path, server, func(err error) { printPolicyError(os.Stderr, "reload", err) })
	if err != nil {
		printPolicyError(os.Stderr, "wrap: --policy", err)
		return nil, false
	}
	return w, true
}

// printPolicyError prints a policy error: one line per diagnostic, each
// "aegis: FILE:LINE:COL: message", as compilers do.
func printPolicyError(w io.Writer, what string, err error) {
	var perr *policy.Error
	if errors.As(err, &perr) {
		for _, d := range perr.Diags {
			fmt.Fprintf(w, "aegis: %s\n", d)
		}
		problems := "1 problem"
		if n := len(perr.Diags); n != 1 {
			problems = fmt.Sprintf("%d problems", n)
		}
		fmt.Fprintf(w, "aegis: %s: %s is not a valid policy (%s)\n", what, perr.Diags[0].File, problems)
		return
	}
	fmt.Fprintf(w, "aegis: %s: %v\n", what, err)
}
