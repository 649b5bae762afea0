package record

import (
	"bytes"
	"crypto/ed25519"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestEgressRoundTrip: allowed and refused egress records, without conn
// (as logs before opening records hold them) and with it, opening and
// closing, encode as Egress's comment writes them, decode back by both
// decoders and re-encode byte for byte; a decision that is neither, a
// conn of 0, an open that is false or of a refused connection or
// without conn are refused.
func TestEgressRoundTrip(t *testing.T) {
	ts := time.Date(2026, 12, 2, 7, 0, 0, 0, time.UTC)
	sid := [32]byte([]byte(strings.Repeat("0", 32)))
	line := func(b Body) []byte {
		dst := AppendCommon(nil, 3, ts, &sid, b.Kind(), Digest{})
		return append(b.AppendFields(dst), '}')
	}
	allowed := &Egress{Host: "registry.npmjs.org", Port: 443, Method: "CONNECT", Addr: "104.16.0.35:443", Decision: EgressAllowed,
		Grant: "registry.npmjs.org:443", SNI: "registry.npmjs.org", BytesUp: 812, BytesDown: 53211, DurationMS: 140, InFlight: []uint64{4, 9}}
	refused := &Egress{Host: "evil.example", Port: 80, Method: "GET", Decision: EgressRefused, Reason: "no --allow-egress grant covers it", InFlight: []uint64{}}
	opened := *allowed
	opened.BytesUp, opened.BytesDown, opened.DurationMS, opened.Conn, opened.Open = 0, 0, 3, 2, true
	closed := *allowed
	closed.Conn = 2
	refusedConn := *refused
	refusedConn.Conn = 1
	for _, tt := range []struct {
		b    Body
		want string
	}{
		{&opened, `"bytes_up":0,"bytes_down":0,"duration_ms":3,"in_flight":[4,9],"conn":2,"open":true}`},
		{&closed, `"bytes_up":812,"bytes_down":53211,"duration_ms":140,"in_flight":[4,9],"conn":2}`},
		{&refusedConn, `"in_flight":[],"conn":1}`},
		{allowed, `"kind":"egress","prev":"sha256:0000000000000000000000000000000000000000000000000000000000000000","host":"registry.npmjs.org","port":443,"method":"CONNECT","addr":"104.16.0.35:443","decision":"allowed","grant":"registry.npmjs.org:443","reason":null,"sni":"registry.npmjs.org","bytes_up":812,"bytes_down":53211,"duration_ms":140,"in_flight":[4,9]}`},
		{refused, `"host":"evil.example","port":80,"method":"GET","addr":null,"decision":"refused","grant":null,"reason":"no --allow-egress grant covers it","sni":null,"bytes_up":0,"bytes_down":0,"duration_ms":0,"in_flight":[]}`},
	} {
		l := line(tt.b)
		if !strings.Contains(string(l), tt.want) {
			t.Errorf("%s\ndoes not hold\n%s", l, tt.want)
		}
		var d Decoder
		r, err := d.Decode(l)
		if err != nil {
			t.Fatalf("Decode(%s) = %v", l, err)
		}
		if got := line(r.Body); string(got) != string(l) {
			t.Errorf("re-encoded\n%s\nwant\n%s", got, l)
		}
		checkAgree(t, l)
	}
	for _, bad := range []struct{ from, to string }{
		{`"decision":"refused"`, `"decision":"maybe"`},
		{`"decision":"refused"`, `"decision":7`},
		{`"conn":1}`, `"conn":0}`},
		{`"conn":1}`, `"conn":-1}`},
		{`"conn":1}`, `"conn":1,"open":true}`},  // refused
		{`"conn":1}`, `"conn":1,"open":false}`}, // never written
		{`"in_flight":[]`, `"in_flight":[],"open":true`},
	} {
		l := strings.Replace(string(line(&refusedConn)), bad.from, bad.to, 1)
		var d Decoder
		if _, err := d.Decode([]byte(l)); err == nil {
			t.Errorf("Decode(%s) = nil error; want rejected", l)
		}
	}
}

// TestEgressEnforcementRoundTrip: the egress grants of session_start's
// confine and the enforcement record's net.egress round-trip, and a
// record without them is the bytes it always was.
func TestEgressEnforcementRoundTrip(t *testing.T) {
	ts := time.Date(2026, 12, 2, 7, 0, 0, 0, time.UTC)
	sid := [32]byte([]byte(strings.Repeat("0", 32)))
	line := func(b Body) []byte {
		dst := AppendCommon(nil, 1, ts, &sid, b.Kind(), Digest{})
		return append(b.AppendFields(dst), '}')
	}
	e := &Enforcement{LandlockABI: 7, TCP: "ports", NetPorts: []int{41000}, UDP: "denied", HostsEnforced: true,
		Egress: &EgressEnforcement{Grants: []string{"localhost:8080", "*.example.org:443"}, ProxyPort: 41000, NetNS: true}}
	plain := *e
	plain.Egress, plain.HostsEnforced = nil, false
	pub, _, _ := ed25519.GenerateKey(nil)
	start := &SessionStart{Key: pub, Argv: []string{"x"}, Durability: "sync", PolicySet: "none",
		Confine: &ConfineRequest{Egress: []string{"localhost:8080"}}}
	for _, tt := range []struct {
		b         Body
		want, not string
	}{
		{e, `"hosts_enforced":true,"egress":{"grants":["localhost:8080","*.example.org:443"],"proxy_port":41000,"netns":true}},"scopes"`, ""},
		{&plain, `"hosts_enforced":false},"scopes"`, `egress`},
		{start, `"best_effort":false,"egress":["localhost:8080"]}`, ""},
	} {
		l := line(tt.b)
		if !strings.Contains(string(l), tt.want) || tt.not != "" && strings.Contains(string(l), tt.not) {
			t.Errorf("%s\ndoes not hold\n%s (or holds %q)", l, tt.want, tt.not)
		}
		var d Decoder
		r, err := d.Decode(l)
		if err != nil {
			t.Fatalf("Decode(%s) = %v", l, err)
		}
		if got := line(r.Body); string(got) != string(l) {
			t.Errorf("re-encoded\n%s\nwant\n%s", got, l)
		}
	}
}

// TestEgressGoldenDecode: the golden log of egress records written by
// aegis wrap (journal/verify's testdata/egress.jsonl) decodes by both
// decoders, each egress record re-encoding to its own fields: two
// allowed connections, each opened and then ended with its totals, and
// four refused.
func TestEgressGoldenDecode(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "verify", "testdata", "egress.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	opened := map[uint64]*Egress{}
	var ended []string
	for _, l := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		checkAgree(t, l)
		var d Decoder
		r, err := d.Decode(l)
		if err != nil {
			t.Fatalf("Decode(%s) = %v", l, err)
		}
		e, ok := r.Body.(*Egress)
		if !ok {
			continue
		}
		if enc := e.AppendFields(nil); !bytes.Contains(l, enc) {
			t.Errorf("re-encoded %s\nnot in %s", enc, l)
		}
		if e.Open {
			opened[e.Conn] = e
			continue
		}
		o := opened[e.Conn]
		if (o != nil) != (e.Decision == EgressAllowed) || o != nil && (o.Addr != e.Addr || o.Grant != e.Grant || o.BytesUp != 0) {
			t.Errorf("record %+v, opening record %+v", e, o)
		}
		ended = append(ended, e.Decision+" "+e.Reason)
	}
	want := "allowed |refused no --allow-egress grant covers it|refused no --allow-egress grant covers it|refused no --allow-egress grant covers it|" +
		"refused the TLS ClientHello names another server than the CONNECT|allowed "
	if got := strings.Join(ended, "|"); got != want {
		t.Errorf("connections ended %q; want %q", got, want)
	}
}
