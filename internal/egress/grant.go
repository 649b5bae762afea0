package egress

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// DefaultPort is the port of a grant that names none: HTTPS's, since what
// a server fetches is nearly always fetched over HTTPS.
const DefaultPort = 443

// Grant is one --allow-egress NAME[:PORT]: a host name, a wildcard
// (*.example.org: every name beneath example.org, not example.org
// itself) or an IP literal, and a port; or NAME[:PORT]=ADDR, a name
// pinned to an address.
type Grant struct {
	// Host is lower case, without a trailing dot or brackets; a wildcard
	// keeps its "*." prefix.
	Host string
	Port uint16
	// Pin is the address a NAME[:PORT]=ADDR grant dials its name at,
	// unresolved, whatever kind of address it is (invalid: none).
	Pin netip.Addr
}

// ParseGrant reads a --allow-egress value: NAME, NAME:PORT, *.SUFFIX[:PORT],
// an IPv4 literal[:PORT] or [IPv6][:PORT], or NAME[:PORT]=ADDR. It fails
// with ErrGrant.
func ParseGrant(s string) (Grant, error) {
	if name, addr, ok := strings.Cut(s, "="); ok {
		return parsePinned(s, name, addr)
	}
	host, port := s, ""
	if h, p, err := net.SplitHostPort(s); err == nil {
		host, port = h, p
	} else if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		host = s[1 : len(s)-1]
	}
	g := Grant{Port: DefaultPort}
	if port != "" {
		n, err := strconv.ParseUint(port, 10, 16)
		if err != nil || n == 0 {
			return Grant{}, fmt.Errorf("%w: %q: the port must be a number in 1..65535", ErrGrant, s)
		}
		g.Port = uint16(n)
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return Grant{}, fmt.Errorf("%w: %q: an address with a zone", ErrGrant, s)
		}
		g.Host = a.Unmap().String()
		return g, nil
	}
	name := strings.ToLower(strings.TrimSuffix(host, "."))
	rest, wild := strings.CutPrefix(name, "*.")
	if !validName(rest) {
		return Grant{}, fmt.Errorf("%w: %q is not NAME[:PORT], *.SUFFIX[:PORT] or an IP address", ErrGrant, s)
	}
	if wild && !strings.Contains(rest, ".") {
		return Grant{}, fmt.Errorf("%w: %q: a wildcard needs a suffix of two labels or more (*.example.org)", ErrGrant, s)
	}
	g.Host = name
	return g, nil
}

// parsePinned reads NAME[:PORT]=ADDR (s): a name, neither a wildcard nor
// a literal, and the IP address it is dialled at (IPv6 bracketed or not).
func parsePinned(s, name, addr string) (Grant, error) {
	g, err := ParseGrant(name)
	if err != nil {
		return Grant{}, err
	}
	if g.Literal() || strings.HasPrefix(g.Host, "*.") {
		return Grant{}, fmt.Errorf("%w: %q: only a name is pinned to an address (NAME[:PORT]=ADDR)", ErrGrant, s)
	}
	a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(addr, "["), "]"))
	if err != nil || a.Zone() != "" {
		return Grant{}, fmt.Errorf("%w: %q: after = comes an IP address without a zone", ErrGrant, s)
	}
	g.Pin = a.Unmap()
	return g, nil
}

// String is the grant's canonical form, as records name it: NAME:PORT,
// [IPv6]:PORT, or NAME:PORT=ADDR.
func (g Grant) String() string {
	s := net.JoinHostPort(g.Host, strconv.Itoa(int(g.Port)))
	if g.Pin.IsValid() {
		s += "=" + g.Pin.String()
	}
	return s
}

// Literal reports whether the grant names an IP address.
func (g Grant) Literal() bool {
	_, err := netip.ParseAddr(g.Host)
	return err == nil
}

// Loopback reports whether the grant names the local machine: the name
// localhost, a loopback address, or a name pinned to one. Its connections may reach loopback
// addresses, which every other name is refused.
func (g Grant) Loopback() bool {
	if g.Host == "localhost" || g.Pin.IsLoopback() {
		return true
	}
	a, err := netip.ParseAddr(g.Host)
	return err == nil && a.IsLoopback()
}

// matches reports whether the grant covers host (normalised, see
// normalHost) on port.
func (g Grant) matches(host string, port uint16) bool {
	if port != g.Port {
		return false
	}
	if suffix, ok := strings.CutPrefix(g.Host, "*"); ok {
		_, isIP := netip.ParseAddr(host)
		return isIP != nil && strings.HasSuffix(host, suffix) && len(host) > len(suffix)
	}
	return host == g.Host
}

// Grants are the grants of a session.
type Grants []Grant

// ParseGrants reads every --allow-egress value, each grant once.
func ParseGrants(ss []string) (Grants, error) {
	var gs Grants
	for _, s := range ss {
		g, err := ParseGrant(s)
		if err != nil {
			return nil, err
		}
		if !gs.has(g) {
			gs = append(gs, g)
		}
	}
	return gs, nil
}

func (gs Grants) has(g Grant) bool {
	for _, h := range gs {
		if h == g {
			return true
		}
	}
	return false
}

// Match returns the first grant that covers host on port.
func (gs Grants) Match(host string, port uint16) (Grant, bool) {
	for _, g := range gs {
		if g.matches(host, port) {
			return g, true
		}
	}
	return Grant{}, false
}

// Strings are the grants' canonical forms.
func (gs Grants) Strings() []string {
	out := make([]string, len(gs))
	for i, g := range gs {
		out[i] = g.String()
	}
	return out
}

// maxName is the longest host name DNS can carry.
const maxName = 253

// validName reports whether s is a DNS host name in lower case: labels of
// letters, digits and hyphens (underscores too, which real names carry),
// none empty, none over 63 bytes, at most maxName in all. Non-ASCII names
// are refused: clients send their punycode form.
func validName(s string) bool {
	if s == "" || len(s) > maxName {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// normalHost is host as grants are matched against it: an IP literal in
// its canonical form, a name in lower case without a trailing dot; ok
// false when host is neither.
func normalHost(host string) (string, bool) {
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return "", false
		}
		return a.Unmap().String(), true
	}
	name := strings.ToLower(strings.TrimSuffix(host, "."))
	return name, validName(name)
}
