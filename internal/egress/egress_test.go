package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/aegisrelay/aegis/journal/record"
)

func TestParseGrant(t *testing.T) {
	for _, tt := range []struct{ in, want, err string }{
		{"registry.npmjs.org", "registry.npmjs.org:443", ""},
		{"Registry.NPMJS.org.:8443", "registry.npmjs.org:8443", ""},
		{"*.example.org", "*.example.org:443", ""},
		{"localhost:8080", "localhost:8080", ""},
		{"127.0.0.1:80", "127.0.0.1:80", ""},
		{"[::1]:80", "[::1]:80", ""},
		{"[::1]", "[::1]:443", ""},
		{"::ffff:10.0.0.1", "10.0.0.1:443", ""},
		{"*.org", "", "two labels"},
		{"example.org:0", "", "1..65535"},
		{"example.org:99999", "", "1..65535"},
		{"exa mple.org", "", "is not"},
		{"bücher.example", "", "is not"},
		{"-bad.example", "", "is not"},
		{"a.*.example", "", "is not"},
		{"[fe80::1%eth0]:443", "", "zone"},
		{"", "", "is not"},
		{"Registry.Test:8443=127.0.0.1", "registry.test:8443=127.0.0.1", ""},
		{"npm.corp=10.0.0.5", "npm.corp:443=10.0.0.5", ""},
		{"npm.corp=[::1]", "npm.corp:443=::1", ""},
		{"npm.corp=::ffff:10.0.0.5", "npm.corp:443=10.0.0.5", ""},
		{"npm.corp=", "", "an IP address"},
		{"npm.corp=npm.example", "", "an IP address"},
		{"npm.corp=fe80::1%eth0", "", "an IP address"},
		{"*.corp.example=10.0.0.5", "", "only a name"},
		{"10.0.0.6=10.0.0.5", "", "only a name"},
		{"=10.0.0.5", "", "is not"},
	} {
		g, err := ParseGrant(tt.in)
		switch {
		case tt.err != "" && (err == nil || !errors.Is(err, ErrGrant) || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("ParseGrant(%q) = %v, %v; want an ErrGrant naming %q", tt.in, g, err, tt.err)
		case tt.err == "" && (err != nil || g.String() != tt.want):
			t.Errorf("ParseGrant(%q) = %v, %v; want %s", tt.in, g, err, tt.want)
		}
	}
}

func TestMatch(t *testing.T) {
	gs, err := ParseGrants([]string{"*.example.org", "pkg.test:80", "10.0.0.7:443"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		host string
		port uint16
		want string
	}{
		{"a.example.org", 443, "*.example.org:443"},
		{"a.b.example.org", 443, "*.example.org:443"},
		{"example.org", 443, ""},
		{"badexample.org", 443, ""},
		{"a.example.org", 80, ""},
		{"pkg.test", 80, "pkg.test:80"},
		{"pkg.test", 443, ""},
		{"10.0.0.7", 443, "10.0.0.7:443"},
		{"10.0.0.8", 443, ""},
	} {
		g, ok := gs.Match(tt.host, tt.port)
		if got := map[bool]string{true: g.String()}[ok]; got != tt.want {
			t.Errorf("Match(%s, %d) = %q; want %q", tt.host, tt.port, got, tt.want)
		}
	}
}

func TestPublic(t *testing.T) {
	for _, tt := range []struct {
		addr string
		want bool
	}{
		{"93.184.215.14", true}, {"2606:4700::6810:84e5", true},
		{"127.0.0.1", false}, {"10.1.2.3", false}, {"172.16.0.1", false}, {"192.168.1.1", false},
		{"169.254.169.254", false}, {"100.64.0.1", false}, {"0.0.0.0", false}, {"255.255.255.255", false},
		{"::1", false}, {"::", false}, {"fe80::1", false}, {"fd00:ec2::254", false}, {"ff02::1", false},
		{"::ffff:127.0.0.1", false}, {"::ffff:169.254.169.254", false}, {"64:ff9b::a9fe:a9fe", false},
		{"64:ff9b::5db8:d70e", true}, {"2001:db8::1", false},
	} {
		if got := Public(netip.MustParseAddr(tt.addr)); got != tt.want {
			t.Errorf("Public(%s) = %v; want %v", tt.addr, got, tt.want)
		}
	}
}

// fakeNet resolves names from a table and dials every address at one
// real server, noting the addresses dialled.
type fakeNet struct {
	names  map[string][]string
	server string
	mu     sync.Mutex
	dialed []string
}

func (f *fakeNet) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	var out []netip.Addr
	for _, a := range f.names[host] {
		out = append(out, netip.MustParseAddr(a))
	}
	if out == nil {
		return nil, errors.New("no such host")
	}
	return out, nil
}

func (f *fakeNet) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	f.mu.Lock()
	f.dialed = append(f.dialed, addr)
	f.mu.Unlock()
	var d net.Dialer
	return d.DialContext(ctx, network, f.server)
}

// startProxy serves a proxy for grants on a loopback listener; the
// records of connections ended come back on the channel, each checked
// against its opening record when it was allowed.
func startProxy(t *testing.T, grants []string, fn *fakeNet, maxConns int) (string, chan *record.Egress) {
	t.Helper()
	gs, err := ParseGrants(grants)
	if err != nil {
		t.Fatal(err)
	}
	recs := make(chan *record.Egress, 16)
	var mu sync.Mutex
	opened := map[uint64]record.Egress{}
	p := New(Config{Grants: gs, Resolver: fn, Dial: fn.Dial, MaxConns: maxConns, MaxHeader: 1024,
		Record: func(r *record.Egress) error {
			mu.Lock()
			defer mu.Unlock()
			if r.Open {
				if _, dup := opened[r.Conn]; dup || r.Conn == 0 || r.Decision != record.EgressAllowed || r.BytesUp != 0 || r.BytesDown != 0 {
					t.Errorf("opening record %+v: want an allowed connection's first, numbered, before any byte", r)
				}
				opened[r.Conn] = *r
				return nil
			}
			o, ok := opened[r.Conn]
			if r.Decision == record.EgressAllowed {
				o.Open, o.BytesUp, o.BytesDown, o.DurationMS, o.Reason = false, r.BytesUp, r.BytesDown, r.DurationMS, r.Reason
				if !ok || fmt.Sprint(o) != fmt.Sprint(*r) {
					t.Errorf("allowed record %+v; want its opening record's fields, opened %v", r, ok)
				}
			} else if ok {
				t.Errorf("refused record %+v had an opening record", r)
			}
			recs <- r
			return nil
		}, InFlight: func() []uint64 { return []uint64{3, 5} }})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go p.Serve(ln)
	t.Cleanup(p.Close)
	return ln.Addr().String(), recs
}

// connectTLS sends CONNECT target through the proxy, then a TLS
// handshake naming sni and one GET; it returns the proxy's status line
// and the GET's body (or the error).
func connectTLS(t *testing.T, proxy, target, sni string) (status, body string, err error) {
	t.Helper()
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		return "", "", err
	}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		return resp.Status, string(b), nil
	}
	tc := tls.Client(c, &tls.Config{ServerName: sni, InsecureSkipVerify: true})
	tr := &http.Transport{DialTLSContext: func(context.Context, string, string) (net.Conn, error) { return tc, nil }}
	defer tr.CloseIdleConnections()
	r, err := (&http.Client{Transport: tr}).Get("https://" + target + "/")
	if err != nil {
		return resp.Status, "", err
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return resp.Status, string(b), nil
}

func TestProxyDecisions(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello from "+r.Host) }))
	defer srv.Close()
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "plain %s %s proxy-auth=%q", r.Host, r.URL.Path, r.Header.Get("Proxy-Authorization"))
	}))
	defer plain.Close()
	_, srvPort, _ := net.SplitHostPort(srv.Listener.Addr().String())
	names := map[string][]string{
		"pkg.example":      {"93.184.215.14"},
		"meta.example":     {"169.254.169.254"},
		"rebind.example":   {"10.0.0.1", "93.184.215.15"},
		"a.mirror.example": {"93.184.215.16"},
		"localhost":        {"127.0.0.1"},
		"pinned.example":   {"93.184.215.17"},
	}
	for _, tt := range []struct {
		name, target, sni string
		wantStatus        string
		wantBody          string
		wantRec           record.Egress
	}{
		{"granted name", "pkg.example:443", "pkg.example", "200 Connection established", "hello from pkg.example:443",
			record.Egress{Host: "pkg.example", Port: 443, Method: "CONNECT", Addr: "93.184.215.14:443", Decision: "allowed", Grant: "pkg.example:443", SNI: "pkg.example"}},
		{"wildcard", "a.mirror.example:443", "a.mirror.example", "200 Connection established", "hello from a.mirror.example:443",
			record.Egress{Host: "a.mirror.example", Port: 443, Method: "CONNECT", Addr: "93.184.215.16:443", Decision: "allowed", Grant: "*.mirror.example:443", SNI: "a.mirror.example"}},
		{"SNI names another host", "pkg.example:443", "evil.example", "200 Connection established", "",
			record.Egress{Host: "pkg.example", Port: 443, Method: "CONNECT", Decision: "refused", Reason: ReasonSNI, SNI: "evil.example"}},
		{"no grant", "evil.example:443", "evil.example", "403 Forbidden", "aegis egress: " + ReasonNoGrant + "\n",
			record.Egress{Host: "evil.example", Port: 443, Method: "CONNECT", Decision: "refused", Reason: ReasonNoGrant}},
		{"granted port only", "pkg.example:8443", "pkg.example", "403 Forbidden", "aegis egress: " + ReasonNoGrant + "\n",
			record.Egress{Host: "pkg.example", Port: 8443, Method: "CONNECT", Decision: "refused", Reason: ReasonNoGrant}},
		{"IP literal not granted", "93.184.215.14:443", "", "403 Forbidden", "aegis egress: " + ReasonNoGrant + "\n",
			record.Egress{Host: "93.184.215.14", Port: 443, Method: "CONNECT", Decision: "refused", Reason: ReasonNoGrant}},
		{"metadata address", "meta.example:443", "meta.example", "403 Forbidden", "aegis egress: " + ReasonNotPublic + "\n",
			record.Egress{Host: "meta.example", Port: 443, Method: "CONNECT", Decision: "refused", Reason: ReasonNotPublic}},
		{"private answer skipped", "rebind.example:443", "rebind.example", "200 Connection established", "hello from rebind.example:443",
			record.Egress{Host: "rebind.example", Port: 443, Method: "CONNECT", Addr: "93.184.215.15:443", Decision: "allowed", Grant: "rebind.example:443", SNI: "rebind.example"}},
		{"localhost grant", "localhost:" + srvPort, "localhost", "200 Connection established", "hello from localhost:" + srvPort,
			record.Egress{Host: "localhost", Port: int(mustPort(srvPort)), Method: "CONNECT", Addr: "127.0.0.1:" + srvPort, Decision: "allowed", Grant: "localhost:" + srvPort, SNI: "localhost"}},
		{"name pinned to a loopback address, not resolved", "registry.test:443", "registry.test", "200 Connection established", "hello from registry.test:443",
			record.Egress{Host: "registry.test", Port: 443, Method: "CONNECT", Addr: "127.0.0.1:443", Decision: "allowed", Grant: "registry.test:443=127.0.0.1", SNI: "registry.test"}},
		{"name pinned to a private address, its DNS answer ignored", "pinned.example:443", "pinned.example", "200 Connection established", "hello from pinned.example:443",
			record.Egress{Host: "pinned.example", Port: 443, Method: "CONNECT", Addr: "10.0.0.5:443", Decision: "allowed", Grant: "pinned.example:443=10.0.0.5", SNI: "pinned.example"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fn := &fakeNet{names: names, server: srv.Listener.Addr().String()}
			proxy, recs := startProxy(t, []string{"pkg.example", "*.mirror.example", "rebind.example", "meta.example", "localhost:" + srvPort,
				"registry.test=127.0.0.1", "pinned.example=10.0.0.5"}, fn, 0)
			status, body, err := connectTLS(t, proxy, tt.target, tt.sni)
			if status != tt.wantStatus || tt.wantBody != "" && body != tt.wantBody || tt.wantBody == "" && err == nil {
				t.Errorf("CONNECT %s (SNI %q) = %q, %q, %v; want %q, %q", tt.target, tt.sni, status, body, err, tt.wantStatus, tt.wantBody)
			}
			r := <-recs
			got := *r
			got.BytesUp, got.BytesDown, got.DurationMS, got.Conn = 0, 0, 0, 0
			want := tt.wantRec
			want.InFlight = []uint64{3, 5}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("record\n%+v\nwant\n%+v", got, want)
			}
			if r.Decision == "allowed" && (r.BytesUp == 0 || r.BytesDown == 0) {
				t.Errorf("allowed record counts %d up, %d down; want both > 0", r.BytesUp, r.BytesDown)
			}
			if r.Decision == "refused" && len(fn.dialed) > 0 {
				t.Errorf("refused, yet dialled %v", fn.dialed)
			}
			if r.Decision == "allowed" && (len(fn.dialed) != 1 || fn.dialed[0] != r.Addr) {
				t.Errorf("dialled %v; want only the address checked, %s", fn.dialed, r.Addr)
			}
		})
	}
	t.Run("plain HTTP", func(t *testing.T) {
		fn := &fakeNet{names: names, server: plain.Listener.Addr().String()}
		proxy, recs := startProxy(t, []string{"pkg.example:80"}, fn, 0)
		u, _ := url.Parse("http://" + proxy)
		c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(u)}}
		req, _ := http.NewRequest("GET", "http://pkg.example/x", nil)
		req.Header.Set("Proxy-Authorization", "Basic c2VjcmV0")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != `plain pkg.example /x proxy-auth=""` {
			t.Errorf("body %q", b)
		}
		if r := <-recs; r.Decision != "allowed" || r.Method != "GET" || r.Port != 80 || r.Addr != "93.184.215.14:80" {
			t.Errorf("record %+v", r)
		}
	})
	t.Run("not TLS in a tunnel", func(t *testing.T) {
		fn := &fakeNet{names: names, server: srv.Listener.Addr().String()}
		proxy, recs := startProxy(t, []string{"pkg.example"}, fn, 0)
		c, _ := net.Dial("tcp", proxy)
		defer c.Close()
		io.WriteString(c, "CONNECT pkg.example:443 HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\nHost: pkg.example\r\n\r\n")
		if r := <-recs; r.Decision != "refused" || r.Reason != ReasonNotTLS || len(fn.dialed) != 0 {
			t.Errorf("record %+v, dialled %v", r, fn.dialed)
		}
	})
	t.Run("head too large", func(t *testing.T) {
		fn := &fakeNet{names: names, server: srv.Listener.Addr().String()}
		proxy, recs := startProxy(t, []string{"pkg.example"}, fn, 0)
		c, _ := net.Dial("tcp", proxy)
		defer c.Close()
		fmt.Fprintf(c, "CONNECT pkg.example:443 HTTP/1.1\r\nX: %s\r\n\r\n", strings.Repeat("a", 2048))
		st, _ := bufio.NewReader(c).ReadString('\n')
		if r := <-recs; !strings.Contains(st, "431") || r.Decision != "refused" || r.Reason != ReasonBadRequest {
			t.Errorf("status %q, record %+v", st, r)
		}
	})
	t.Run("too many connections", func(t *testing.T) {
		fn := &fakeNet{names: names, server: srv.Listener.Addr().String()}
		proxy, recs := startProxy(t, []string{"pkg.example"}, fn, 1)
		hold, _ := net.Dial("tcp", proxy)
		defer hold.Close()
		io.WriteString(hold, "CONNECT pkg.example:443 HTTP/1.1\r\n\r\n")
		bufio.NewReader(hold).ReadString('\n') // the first holds its slot, waiting for a ClientHello
		c, _ := net.Dial("tcp", proxy)
		defer c.Close()
		st, _ := bufio.NewReader(c).ReadString('\n')
		if r := <-recs; !strings.Contains(st, "503") || r.Reason != ReasonTooMany {
			t.Errorf("status %q, record %+v", st, r)
		}
	})
}

func mustPort(s string) uint16 {
	var n uint16
	fmt.Sscan(s, &n)
	return n
}

// TestOpeningRecordUnwritten: when an allowed connection's opening record
// cannot be written (the session has ended), nothing is carried: the
// tunnel is closed before the ClientHello goes on, a plain request is
// answered 503, and the record at the end says why.
func TestOpeningRecordUnwritten(t *testing.T) {
	var mu sync.Mutex
	var upstream int
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateActive {
			mu.Lock()
			upstream++
			mu.Unlock()
		}
	}
	srv.StartTLS()
	defer srv.Close()
	fn := &fakeNet{names: map[string][]string{"pkg.example": {"93.184.215.14"}}, server: srv.Listener.Addr().String()}
	gs, _ := ParseGrants([]string{"pkg.example", "pkg.example:80"})
	recs := make(chan *record.Egress, 4)
	p := New(Config{Grants: gs, Resolver: fn, Dial: fn.Dial, Record: func(r *record.Egress) error {
		if r.Open {
			return errors.New("the session ended")
		}
		recs <- r
		return nil
	}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go p.Serve(ln)
	defer p.Close()
	if _, _, err := connectTLS(t, ln.Addr().String(), "pkg.example:443", "pkg.example"); err == nil {
		t.Error("the tunnel carried a handshake")
	}
	if r := <-recs; r.Decision != record.EgressRefused || r.Reason != ReasonNotWritten || r.BytesUp != 0 || r.BytesDown != 0 || r.Conn != 1 {
		t.Errorf("tunnel's record %+v", r)
	}
	u, _ := url.Parse("http://" + ln.Addr().String())
	resp, err := (&http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(u)}}).Get("http://pkg.example/")
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("plain request: %v, %v; want 503", resp, err)
	} else {
		resp.Body.Close()
	}
	if r := <-recs; r.Decision != record.EgressRefused || r.Reason != ReasonNotWritten || r.BytesUp != 0 || r.Conn != 2 {
		t.Errorf("plain request's record %+v", r)
	}
	mu.Lock()
	defer mu.Unlock()
	if upstream != 0 {
		t.Errorf("the server saw %d requests", upstream)
	}
}
