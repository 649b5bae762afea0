package confine

import (
	"fmt"
	"net"
	"strings"

	"github.com/aegisrelay/aegis/internal/egress"
)

// checkEgress puts the --allow-egress grants in their canonical form,
// each once, and refuses them beside --allow-net: with a grant the child
// has no network but the proxy, so a port of --allow-net would reach
// nothing.
func (p *Profile) checkEgress() error {
	if len(p.Egress) == 0 {
		return nil
	}
	gs, err := egress.ParseGrants(p.Egress)
	if err != nil {
		return fmt.Errorf("%w: --allow-egress %s", ErrProfile, strings.TrimPrefix(err.Error(), egress.ErrGrant.Error()+": "))
	}
	if len(p.Net) > 0 {
		return fmt.Errorf("%w: --allow-net and --allow-egress do not combine: with --allow-egress the child reaches the network only through the proxy (name the host with --allow-egress HOST:PORT)", ErrProfile)
	}
	p.Egress = gs.Strings()
	return nil
}

// Grants are the profile's --allow-egress grants (checked: Check).
func (p *Profile) Grants() egress.Grants {
	gs, _ := egress.ParseGrants(p.Egress)
	return gs
}

// proxyEnv are the variables that name the egress proxy to the child,
// upper and lower case as clients read one or the other; noProxy are
// those a child's own value of would send a host around the proxy, to
// a connect that fails.
var (
	proxyEnv = [...]string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"}
	noProxy  = [...]string{"NO_PROXY", "no_proxy"}
)

// withProxy is env with the proxy variables naming 127.0.0.1:port and
// the NO_PROXY variables removed.
func withProxy(env []string, port int) []string {
	url := "http://" + net.JoinHostPort("127.0.0.1", fmt.Sprint(port))
	out := make([]string, 0, len(env)+len(proxyEnv))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !isProxyVar(name) {
			out = append(out, kv)
		}
	}
	for _, name := range proxyEnv {
		out = append(out, name+"="+url)
	}
	return out
}

func isProxyVar(name string) bool {
	for _, n := range proxyEnv {
		if n == name {
			return true
		}
	}
	for _, n := range noProxy {
		if n == name {
			return true
		}
	}
	return false
}
