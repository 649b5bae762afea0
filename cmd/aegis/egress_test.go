package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"flag"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/journal/record"
)

// localCA makes a CA and a certificate for name it signs; it returns
// the server's certificate and the CA's PEM.
func localCA(t testing.TB, name string) (tls.Certificate, []byte) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "aegis test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ = x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: name},
		DNSNames: []string{name}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key},
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
}

// egressServices starts the granted services: plain HTTP and HTTPS (for
// localhost, signed by a CA written to dir/ca.pem) on loopback.
func egressServices(t testing.TB, dir string, h http.Handler) (httpPort, tlsPort int, caPath string) {
	t.Helper()
	cert, caPEM := localCA(t, "localhost")
	caPath = filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caPath, caPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	plain := httptest.NewServer(h)
	t.Cleanup(plain.Close)
	tlsSrv := httptest.NewUnstartedServer(h)
	tlsSrv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	tlsSrv.StartTLS()
	t.Cleanup(tlsSrv.Close)
	return plain.Listener.Addr().(*net.TCPAddr).Port, tlsSrv.Listener.Addr().(*net.TCPAddr).Port, caPath
}

// egressGolden, set, makes TestConfineEgressEscape write its log and the
// session's key to journal/verify's testdata (egress.jsonl, egress.pub),
// the golden log of egress records that journal/verify and
// journal/record test.
var egressGolden = flag.Bool("egress-golden", false, "write TestConfineEgressEscape's log to journal/verify/testdata/egress.jsonl")

// egressAttempts are the probe's attempts under --allow-egress and what
// each must give: through the proxy to the granted services, allowed;
// every other way, blocked.
var egressAttempts = []struct{ name, want string }{
	{"egress_proxy_http", "allowed"},
	{"egress_proxy_https", "allowed"},
	{"egress_proxy_literal", "blocked status 403"},
	{"egress_proxy_other_host", "blocked status 403"},
	{"egress_proxy_metadata", "blocked status 403"},
	{"egress_proxy_sni_spoofed", "blocked status 0"},
	{"egress_direct_granted_port", "blocked EACCES"},
	{"egress_direct_other_port", "blocked EACCES"},
	{"egress_direct_public", "blocked EACCES"},
	{"egress_proxy_port_public", "blocked ENETUNREACH"},
	{"egress_proxy_port_private", "blocked ENETUNREACH"},
	{"egress_proxy_port_loopback", "blocked ECONNREFUSED"},
	{"egress_ipv6_loopback", "blocked EACCES"},
	{"egress_ipv6_proxy_port", "blocked ECONNREFUSED"},
	{"egress_ipv6_public", "blocked EACCES"},
	{"egress_dns_udp", "blocked EPERM"},
	{"egress_dns_tcp", "blocked EACCES"},
	{"egress_resolve", "blocked status 0"},
	{"egress_setns_init", "blocked EACCES"},
	{"unix_stream_connect", "blocked EACCES"},
	{"listen_unbound", "blocked EACCES"},
	{"udp_socket", "blocked EPERM"},
}

// TestConfineEgressEscape: under --confine --allow-egress the probe
// reaches the granted services through the proxy (Go's HTTP client, over
// HTTP and HTTPS with certificate checks) and nothing else: the granted
// service's port directly, another loopback port, a public address, the
// proxy's port on another address, IPv6, DNS over UDP and TCP, a unix
// socket, setns into init's network, a listener; the proxy refuses an IP
// literal, a host not granted, the metadata address and a ClientHello
// naming another server. Every proxy connection is an egress record
// naming the call that was in flight; the log verifies.
func TestConfineEgressEscape(t *testing.T) {
	t.Parallel()
	env := newEscapeEnv(t)
	httpPort, tlsPort, caPath := egressServices(t, env.read, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "granted\n")
	}))
	argv := append(env.probeArgv(t), "-egress-http", strconv.Itoa(httpPort), "-egress-tls", strconv.Itoa(tlsPort), "-egress-ca", caPath)

	// Unconfined, the direct ways work: the suite would prove nothing
	// otherwise.
	control, err := exec.Command(argv[0], append(argv[1:], "-direct", "egress_direct_granted_port", "egress_direct_other_port")...).Output()
	if err != nil || strings.Count(string(control), " allowed\n") != 2 {
		t.Fatalf("unconfined probe: %q, %v; want both allowed", control, err)
	}

	f := newFixture(t)
	var in bytes.Buffer
	for i, a := range egressAttempts {
		in.WriteString(attemptLine(i+1, a.name))
	}
	grants := []string{"--allow-egress", "localhost:" + strconv.Itoa(httpPort), "--allow-egress", "localhost:" + strconv.Itoa(tlsPort)}
	args := append([]string{"wrap", "--audit", f.audit, "--signing-key", f.key, "--grace", "20s",
		"--confine", "--allow-read", env.read}, grants...)
	cmd := exec.Command(aegisBin, append(append(args, "--"), argv...)...)
	cmd.Stdin = &in
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	runBounded(t, cmd, 60*time.Second)
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("wrap exit %d\n%s", code, stderr.String())
	}
	got := map[int]string{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var resp struct {
			ID     int
			Result struct{ Content []struct{ Text string } }
		}
		if err := json.Unmarshal([]byte(line), &resp); err != nil || len(resp.Result.Content) != 1 {
			t.Fatalf("response %q: %v", line, err)
		}
		got[resp.ID] = resp.Result.Content[0].Text
	}
	for i, a := range egressAttempts {
		if got[i+1] != a.want {
			t.Errorf("%s = %q; want %q", a.name, got[i+1], a.want)
		}
	}

	recs := sessionRecords(t, f)
	enf := recs[1].Body.(*record.Enforcement)
	want := []string{"localhost:" + strconv.Itoa(httpPort), "localhost:" + strconv.Itoa(tlsPort)}
	if enf.Egress == nil || !enf.Egress.NetNS || !enf.HostsEnforced || !slices.Equal(enf.Egress.Grants, want) ||
		!slices.Equal(enf.NetPorts, []int{enf.Egress.ProxyPort}) {
		t.Errorf("enforcement %+v, egress %+v; want the grants %q, a network namespace, hosts enforced, TCP to the proxy's port alone", enf, enf.Egress, want)
	}
	// The intent of each call, by its id.
	intentOf := map[string]uint64{}
	for _, r := range recs {
		if in, ok := r.Body.(*record.Intent); ok {
			intentOf[string(in.Call.Text)] = r.Seq
		}
	}
	type egressWant struct {
		call, host, decision, reason, sni string
		port                              int
	}
	wantEgress := []egressWant{
		{"1", "localhost", "allowed", "", "", httpPort},
		{"2", "localhost", "allowed", "", "localhost", tlsPort},
		{"3", "127.0.0.1", "refused", "no --allow-egress grant covers it", "", httpPort},
		{"4", "example.com", "refused", "no --allow-egress grant covers it", "", 80},
		{"5", "169.254.169.254", "refused", "no --allow-egress grant covers it", "", 80},
		{"6", "localhost", "refused", "the TLS ClientHello names another server than the CONNECT", "evil.example", tlsPort},
	}
	var egress []*record.Record
	opened := map[uint64]*record.Egress{}
	for _, r := range recs {
		e, ok := r.Body.(*record.Egress)
		switch {
		case !ok:
		case e.Open:
			opened[e.Conn] = e
		default:
			egress = append(egress, r)
			// An allowed connection's opening record comes first, and
			// says what its end says but the totals.
			o := opened[e.Conn]
			if (o != nil) != (e.Decision == "allowed") || o != nil && (o.Host != e.Host || o.Port != e.Port || o.Addr != e.Addr ||
				o.Grant != e.Grant || o.SNI != e.SNI || !slices.Equal(o.InFlight, e.InFlight) || o.BytesUp != 0 || o.BytesDown != 0) {
				t.Errorf("egress record %+v: its opening record %+v; want one, before it, for an allowed connection only", e, o)
			}
		}
	}
	if len(egress) != len(wantEgress) {
		t.Fatalf("%d egress records; want %d", len(egress), len(wantEgress))
	}
	// A record is written when its connection ends, so their order is
	// that of the ends (the HTTPS client keeps its tunnel until exit).
	for _, w := range wantEgress {
		i := slices.IndexFunc(egress, func(r *record.Record) bool {
			e := r.Body.(*record.Egress)
			return e.Host == w.host && e.Port == w.port && e.Decision == w.decision && e.SNI == w.sni
		})
		if i < 0 {
			t.Errorf("no egress record of host %s port %d %s sni %q", w.host, w.port, w.decision, w.sni)
			continue
		}
		e := egress[i].Body.(*record.Egress)
		// A tunnel the probe kept open ends with the probe or with the
		// session, whichever the proxy sees first.
		ended := w.decision == "allowed" && e.Reason == "the session ended"
		if e.Reason != w.reason && !ended || !slices.Contains(e.InFlight, intentOf[w.call]) {
			t.Errorf("egress record %+v; want the reason %q, call %s's intent (seq %d) in flight", e, w.reason, w.call, intentOf[w.call])
		}
		if w.decision == "allowed" && (e.Addr != "127.0.0.1:"+strconv.Itoa(w.port) || e.Grant != "localhost:"+strconv.Itoa(w.port) || e.BytesUp == 0 || e.BytesDown == 0) {
			t.Errorf("allowed egress record %+v; want the address 127.0.0.1:%d, its grant, bytes both ways", e, w.port)
		}
		if w.decision == "refused" && (e.Addr != "" || e.Grant != "" || e.BytesUp != 0 || e.BytesDown != 0) {
			t.Errorf("refused egress record %+v; want nothing dialled, no grant, no byte carried", e)
		}
	}
	f.mustVerify(t, 0)
	if *egressGolden {
		dir := filepath.Join("..", "..", "journal", "verify", "testdata")
		if err := os.WriteFile(filepath.Join(dir, "egress.jsonl"), readAudit(f.audit), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "egress.pub"), []byte(f.pub+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	logOut, err := exec.Command(aegisBin, "log", f.audit).Output()
	for _, line := range []string{
		"egress GET localhost:" + strconv.Itoa(httpPort) + " allowed by localhost:" + strconv.Itoa(httpPort) + ", to 127.0.0.1:" + strconv.Itoa(httpPort),
		"egress CONNECT localhost:" + strconv.Itoa(tlsPort) + " refused: the TLS ClientHello names another server than the CONNECT (it named evil.example)",
		"egress GET 169.254.169.254:80 refused: no --allow-egress grant covers it",
	} {
		if err != nil || !strings.Contains(string(logOut), line) {
			t.Errorf("aegis log: %v\n%s\nwants a line holding %q", err, logOut, line)
		}
	}
}

// TestConfineEgressNoNamespace: where no network namespace can be made
// (a user namespace whose limit is spent, as where user namespaces are
// off), --allow-egress is refused with exit 69 and says why; with
// --best-effort the child runs, reaches the granted service through the
// proxy, and the record drops the namespace by name.
func TestConfineEgressNoNamespace(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Fatal("unshare (util-linux) is needed")
	}
	env := newEscapeEnv(t)
	httpPort, tlsPort, caPath := egressServices(t, env.read, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "granted\n")
	}))
	argv := append(env.probeArgv(t), "-egress-http", strconv.Itoa(httpPort), "-egress-tls", strconv.Itoa(tlsPort), "-egress-ca", caPath)
	for _, bestEffort := range []bool{false, true} {
		f := newFixture(t)
		args := []string{"wrap", "--audit", f.audit, "--signing-key", f.key, "--grace", "20s", "--confine", "--allow-read", env.read,
			"--allow-egress", "localhost:" + strconv.Itoa(httpPort)}
		if bestEffort {
			args = append(args, "--best-effort")
		}
		wrap := strings.Join(append(append([]string{aegisBin}, args...), append([]string{"--"}, argv...)...), " ")
		// The outer user namespace allows one more inside it: the one the
		// inner unshare takes, leaving none for aegis to make.
		cmd := exec.Command("unshare", "--user", "--map-root-user", "sh", "-c",
			"echo 1 > /proc/sys/user/max_user_namespaces && exec unshare --user --map-user=65534 --map-group=65534 "+wrap)
		cmd.Stdin = strings.NewReader(attemptLine(1, "egress_proxy_http") + attemptLine(2, "egress_direct_other_port"))
		var out, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &stderr
		runBounded(t, cmd, 60*time.Second)
		recs := sessionRecords(t, f)
		end := recs[len(recs)-1].Body.(*record.SessionEnd)
		if !bestEffort {
			if code := cmd.ProcessState.ExitCode(); code != 69 || end.Reason != record.EndConfinementRefused || !strings.Contains(end.Detail, "network namespace: unavailable") {
				t.Errorf("without --best-effort: exit %d, session_end %+v; want 69, confinement_refused naming the network namespace\n%s", code, end, stderr.String())
			}
			continue
		}
		enf := recs[1].Body.(*record.Enforcement)
		if cmd.ProcessState.ExitCode() != 0 || enf.Egress == nil || enf.Egress.NetNS || enf.HostsEnforced ||
			!slices.ContainsFunc(enf.Dropped, func(d string) bool { return strings.HasPrefix(d, "network namespace: unavailable") }) {
			t.Errorf("with --best-effort: exit %d, enforcement %+v egress %+v; want it run, without a namespace, the drop named\n%s", cmd.ProcessState.ExitCode(), enf, enf.Egress, stderr.String())
		}
		if !strings.Contains(out.String(), `"text":"allowed"`) || !strings.Contains(out.String(), `"text":"blocked EACCES"`) {
			t.Errorf("with --best-effort: %s; want the proxy allowed, the other port blocked by Landlock", out.String())
		}
		f.mustVerify(t, 0)
	}
}
