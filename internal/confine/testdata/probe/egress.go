package main

// The ways around wrap --allow-egress's proxy, and through it. The
// proxy is the one HTTP_PROXY names; -egress-http and -egress-tls are
// the granted service (plain HTTP and HTTPS on localhost), -egress-ca
// the CA that signs the latter's certificate.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

var (
	egressHTTP = flag.Int("egress-http", 0, "a plain HTTP service on localhost, granted")
	egressTLS  = flag.Int("egress-tls", 0, "an HTTPS service on localhost, granted")
	egressCA   = flag.String("egress-ca", "", "the PEM file of the CA that signs the HTTPS service's certificate")
)

// errStatus is a proxy's refusal, read as "blocked <status>".
type errStatus struct{ code int }

func (e errStatus) Error() string { return "status " + strconv.Itoa(e.code) }

func init() {
	for name, f := range map[string]func() error{
		// Through the proxy, as a client configured by HTTP_PROXY does.
		"egress_proxy_http":        func() error { return proxyGet(fmt.Sprintf("http://localhost:%d/", *egressHTTP), "") },
		"egress_proxy_https":       func() error { return proxyGet(fmt.Sprintf("https://localhost:%d/", *egressTLS), "") },
		"egress_proxy_literal":     func() error { return proxyGet(fmt.Sprintf("http://127.0.0.1:%d/", *egressHTTP), "") },
		"egress_proxy_other_host":  func() error { return proxyGet("http://example.com/", "") },
		"egress_proxy_metadata":    func() error { return proxyGet("http://169.254.169.254/latest/meta-data/", "") },
		"egress_proxy_sni_spoofed": func() error { return proxyGet(fmt.Sprintf("https://localhost:%d/", *egressTLS), "evil.example") },
		// Around it: the granted service's port directly, another
		// loopback port, a public address, the proxy's own port on
		// another host or another loopback address, IPv6, DNS.
		"egress_direct_granted_port": func() error { return connectTo(unix.AF_INET, "127.0.0.1", *egressHTTP) },
		"egress_direct_other_port":   func() error { return connectTo(unix.AF_INET, "127.0.0.1", *portDenied) },
		"egress_direct_public":       func() error { return connectTo(unix.AF_INET, "93.184.215.14", 443) },
		"egress_proxy_port_public":   func() error { return connectTo(unix.AF_INET, "93.184.215.14", proxyPort()) },
		"egress_proxy_port_private":  func() error { return connectTo(unix.AF_INET, "10.255.255.1", proxyPort()) },
		"egress_proxy_port_loopback": func() error { return connectTo(unix.AF_INET, "127.0.0.2", proxyPort()) },
		"egress_ipv6_loopback":       func() error { return connectTo(unix.AF_INET6, "::1", *port6Denied) },
		"egress_ipv6_proxy_port":     func() error { return connectTo(unix.AF_INET6, "::1", proxyPort()) },
		"egress_ipv6_public":         func() error { return connectTo(unix.AF_INET6, "2606:4700::6810:84e5", 443) },
		"egress_dns_udp":             dnsUDP,
		"egress_dns_tcp":             func() error { return connectTo(unix.AF_INET, "1.1.1.1", 53) },
		"egress_resolve": func() error {
			_, err := net.DefaultResolver.LookupHost(context.Background(), "example.com")
			if err != nil {
				return errStatus{0}
			}
			return nil
		},
		"egress_setns_init": func() error {
			fd, err := unix.Open("/proc/1/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			return unix.Setns(fd, unix.CLONE_NEWNET)
		},
	} {
		attempts[name] = f
	}
}

// proxyPort is the port HTTP_PROXY names (0 when none).
func proxyPort() int {
	u, err := url.Parse(os.Getenv("HTTP_PROXY"))
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(u.Port())
	return n
}

// proxyGet fetches target through HTTP_PROXY (Go's own environment
// reading skips localhost, so the proxy is named explicitly); sni, when
// set, is the server name the TLS handshake sends instead of the host.
func proxyGet(target, sni string) error {
	proxy, err := url.Parse(os.Getenv("HTTP_PROXY"))
	if err != nil || proxy.Host == "" {
		return fmt.Errorf("setup: no HTTP_PROXY")
	}
	pool := x509.NewCertPool()
	if *egressCA != "" {
		pem, err := os.ReadFile(*egressCA)
		if err != nil {
			return fmt.Errorf("setup: %w", err)
		}
		pool.AppendCertsFromPEM(pem)
	}
	tc := &tls.Config{RootCAs: pool, ServerName: sni}
	if sni != "" {
		tc.InsecureSkipVerify = true // the name sent is the point, not the certificate
	}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: http.ProxyURL(proxy), TLSClientConfig: tc}}
	resp, err := c.Get(target)
	if err != nil {
		var errno unix.Errno
		if errors.As(err, &errno) {
			return errno
		}
		return errStatus{0}
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != 200 {
		return errStatus{resp.StatusCode}
	}
	return nil
}

func connectTo(family int, addr string, port int) error {
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ip := net.ParseIP(addr)
	if family == unix.AF_INET6 {
		sa := &unix.SockaddrInet6{Port: port}
		copy(sa.Addr[:], ip.To16())
		return unix.Connect(fd, sa)
	}
	sa := &unix.SockaddrInet4{Port: port}
	copy(sa.Addr[:], ip.To4())
	return unix.Connect(fd, sa)
}

// dnsUDP sends a DNS query for example.com to a public resolver over UDP
// and waits a moment for an answer.
func dnsUDP() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	q := []byte{0x12, 0x34, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 7, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 3, 'c', 'o', 'm', 0, 0, 1, 0, 1}
	return unix.Sendto(fd, q, 0, &unix.SockaddrInet4{Port: 53, Addr: [4]byte{1, 1, 1, 1}})
}
