package supervise

import (
	"fmt"
	"os"
	"strings"
)

// CleanEnv is a child's environment under wrap --clean-env: HOME, PATH
// and LANG from this process's (those that are set), then each of pass,
// a NAME taken from this process's environment or a NAME=VALUE set as
// given, a later one replacing an earlier of the same name. It returns
// the environment and the names in it, in order of first appearance
// (session_start records the names, never the values).
func CleanEnv(pass []string) (env, names []string, err error) {
	vals := map[string]string{}
	set := func(name, val string) {
		if _, ok := vals[name]; !ok {
			names = append(names, name)
		}
		vals[name] = val
	}
	for _, name := range []string{"HOME", "PATH", "LANG"} {
		if v, ok := os.LookupEnv(name); ok {
			set(name, v)
		}
	}
	for _, e := range pass {
		name, val, hasVal := strings.Cut(e, "=")
		if name == "" || strings.ContainsAny(name, " \t\n\x00") {
			return nil, nil, fmt.Errorf("--env %q: want NAME or NAME=VALUE", e)
		}
		if !hasVal {
			v, ok := os.LookupEnv(name)
			if !ok {
				return nil, nil, fmt.Errorf("--env %s: %s is not set in aegis's environment (use --env %s=VALUE)", name, name, name)
			}
			val = v
		}
		set(name, val)
	}
	env = make([]string, 0, len(names))
	for _, n := range names {
		env = append(env, n+"="+vals[n])
	}
	if names == nil {
		names = []string{}
	}
	return env, names, nil
}

// WithoutEnv returns env without the variable name.
func WithoutEnv(env []string, name string) []string {
	kept := make([]string, 0, len(env))
	for _, e := range env {
		if n, _, _ := strings.Cut(e, "="); n != name {
			kept = append(kept, e)
		}
	}
	return kept
}

// ChildEnv is the child's environment as wrap's flags ask: with clean
// (--clean-env), CleanEnv(pass) and the names it records; without it nil
// (aegis's own environment) and no names, or, for a confined child,
// aegis's own without SSH_AUTH_SOCK. pass without clean is an error.
func ChildEnv(clean bool, pass []string, confined bool) (env, names []string, err error) {
	switch {
	case clean:
		return CleanEnv(pass)
	case len(pass) > 0:
		return nil, nil, fmt.Errorf("--env needs --clean-env (without it the child already has aegis's environment)")
	case confined:
		// A confined child does not learn where the user's ssh-agent
		// is: whatever key signs the log, the agent's keys sign for
		// whoever reaches it. --clean-env --env SSH_AUTH_SOCK passes it
		// on purpose.
		return WithoutEnv(os.Environ(), "SSH_AUTH_SOCK"), nil, nil
	}
	return nil, nil, nil
}
