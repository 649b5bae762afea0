package egress

import "net/netip"

// nonPublic are the ranges no name is dialled in unless its grant allows
// it (Grant.Loopback for loopback, an IP literal grant for its address):
// the local machine, private and shared networks, link-local addresses
// (the cloud metadata service, 169.254.169.254 and fd00:ec2::254, among
// them), and what is reserved, documentation or not unicast. IPv4-mapped
// IPv6 addresses are classified as the IPv4 address they carry; NAT64's
// well-known prefix as the IPv4 address it embeds.
var nonPublic = func() []netip.Prefix {
	var ps []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
		"172.16.0.0/12", "192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16",
		"198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
		"::/128", "::1/128", "100::/64", "2001::/23", "2001:db8::/32", "fc00::/7", "fe80::/10", "ff00::/8",
	} {
		ps = append(ps, netip.MustParsePrefix(s))
	}
	return ps
}()

// nat64 is the well-known NAT64 prefix (RFC 6052).
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// Public reports whether a is an address a granted name may be dialled
// at without a grant for local addresses.
func Public(a netip.Addr) bool {
	a = a.Unmap()
	if nat64.Contains(a) {
		b := a.As16()
		a = netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	}
	if !a.IsValid() || a.Zone() != "" {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// allowedAddr reports whether g's connection may be dialled at a: a
// pinned grant at its pin only; a literal grant at its own address only; a grant for the local machine
// at loopback addresses; every other grant at public addresses only.
func allowedAddr(g Grant, a netip.Addr) bool {
	a = a.Unmap()
	switch {
	case g.Pin.IsValid():
		return a == g.Pin
	case g.Literal():
		return a.String() == g.Host
	case g.Host == "localhost":
		return a.IsLoopback()
	default:
		return Public(a)
	}
}
