package httpfront

import (
	"net"
	"net/url"
	"strings"
)

// loopbackNames are the host names allowed by default, with any port:
// what a client on this machine calls it. A page that DNS-rebinds its own
// name to 127.0.0.1 still sends that name in Host, and is refused.
var loopbackNames = []string{"localhost", "127.0.0.1", "::1"}

// hostAllowed reports whether a Host header names this server: a
// loopback name, or one of extra ("name" any port, "name:port" that
// port, "*" anything).
func hostAllowed(host string, extra []string) bool {
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	} else {
		name = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	}
	name = strings.ToLower(name)
	for _, n := range loopbackNames {
		if name == n {
			return true
		}
	}
	for _, e := range extra {
		e = strings.ToLower(e)
		if e == "*" || e == name || e == strings.ToLower(host) {
			return true
		}
	}
	return false
}

// originAllowed reports whether an Origin header is one allowed: http or
// https on a loopback name, or one of extra (an origin as sent, such as
// https://app.example.com, or "*").
func originAllowed(origin string, extra []string) bool {
	for _, e := range extra {
		if e == "*" || strings.EqualFold(strings.TrimSuffix(e, "/"), origin) {
			return true
		}
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	h := strings.ToLower(u.Hostname())
	for _, n := range loopbackNames {
		if h == n {
			return true
		}
	}
	return false
}
