package egress

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// benchServer serves a small body at / and size bytes at /large over
// HTTPS on loopback.
func benchServer(b *testing.B, size int) *httptest.Server {
	chunk := []byte(strings.Repeat("x", 64<<10))
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/large" {
			io.WriteString(w, "ok")
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(size))
		for n := 0; n < size; n += len(chunk) {
			w.Write(chunk)
		}
	}))
	b.Cleanup(srv.Close)
	return srv
}

// benchClients are a direct client and one through a proxy granted the
// server (as localhost), each opening a new connection per request.
func benchClients(b *testing.B, srv *httptest.Server) map[string]*http.Client {
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	gs, err := ParseGrants([]string{"localhost:" + strconv.Itoa(port)})
	if err != nil {
		b.Fatal(err)
	}
	p := New(Config{Grants: gs})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go p.Serve(ln)
	b.Cleanup(p.Close)
	proxy, _ := url.Parse("http://" + ln.Addr().String())
	tc := &tls.Config{InsecureSkipVerify: true}
	return map[string]*http.Client{
		"direct": {Transport: &http.Transport{TLSClientConfig: tc, DisableKeepAlives: true}},
		"proxy":  {Transport: &http.Transport{TLSClientConfig: tc, DisableKeepAlives: true, Proxy: http.ProxyURL(proxy)}},
	}
}

func get(b *testing.B, c *http.Client, u string) int64 {
	resp, err := c.Get(u)
	if err != nil {
		b.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		b.Fatalf("GET %s: %d, %v", u, resp.StatusCode, err)
	}
	return n
}

// BenchmarkConnection is one HTTPS GET of a small body on a new
// connection (TCP and TLS handshakes included), directly and through
// the proxy: the difference is what the proxy adds per connection
// (CONNECT, the ClientHello read, the resolve, the second dial).
func BenchmarkConnection(b *testing.B) {
	srv := benchServer(b, 0)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	u := "https://localhost:" + strconv.Itoa(port) + "/"
	for _, name := range []string{"direct", "proxy"} {
		c := benchClients(b, srv)[name]
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				get(b, c, u)
			}
		})
	}
}

// BenchmarkDownload is one HTTPS GET of 64 MiB, directly and through
// the proxy (bytes/s as MB/s).
func BenchmarkDownload(b *testing.B) {
	const size = 64 << 20
	srv := benchServer(b, size)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	u := "https://localhost:" + strconv.Itoa(port) + "/large"
	for _, name := range []string{"direct", "proxy"} {
		c := benchClients(b, srv)[name]
		b.Run(name, func(b *testing.B) {
			b.SetBytes(size)
			for b.Loop() {
				if n := get(b, c, u); n != size {
					b.Fatalf("%d bytes; want %d", n, size)
				}
			}
		})
	}
}
