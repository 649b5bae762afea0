package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha512"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/journal/record"
)

// npmName is the registry's name: under .test, which DNS never answers,
// so that only the grant's pin can make it reachable.
const npmName = "registry.aegis.test"

// npmPackage is a tiny MCP server as an npm package: it answers
// initialize, tools/list and tools/call (hello) on stdio, on either
// revision, saying which package and version it is.
var npmPackage = map[string]string{
	"package.json": `{"name":"aegis-hello","version":"1.0.0","bin":{"aegis-hello":"server.js"}}` + "\n",
	"server.js": `#!/usr/bin/env node
const pkg = require('./package.json');
const rl = require('readline').createInterface({input: process.stdin});
rl.on('line', (line) => {
  let m;
  try { m = JSON.parse(line); } catch { return; }
  if (m.id === undefined) return;
  let result;
  switch (m.method) {
  case 'initialize':
    result = {protocolVersion: m.params.protocolVersion, capabilities: {tools: {}}, serverInfo: {name: pkg.name, version: pkg.version}};
    break;
  case 'tools/list':
    result = {tools: [{name: 'hello', description: 'says which package answers', inputSchema: {type: 'object'}}]};
    break;
  case 'tools/call':
    result = {content: [{type: 'text', text: 'hello from ' + pkg.name + '@' + pkg.version}]};
    break;
  default:
    process.stdout.write(JSON.stringify({jsonrpc: '2.0', id: m.id, error: {code: -32601, message: 'no such method'}}) + '\n');
    return;
  }
  process.stdout.write(JSON.stringify({jsonrpc: '2.0', id: m.id, result}) + '\n');
});
`,
}

// npmTarball packs npmPackage as npm does: beneath package/, gzipped.
func npmTarball(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, name := range []string{"package.json", "server.js"} {
		body := npmPackage[name]
		if err := tw.WriteHeader(&tar.Header{Name: "package/" + name, Mode: 0o755, Size: int64(len(body)), ModTime: time.Unix(499162500, 0)}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(body))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// npmRegistry is an HTTPS npm registry for npmName on loopback, serving
// aegis-hello's metadata and tarball; it counts the TLS connections it
// accepted and notes the paths asked for.
type npmRegistry struct {
	port  int
	mu    sync.Mutex
	conns int
	paths []string
}

func startNPMRegistry(t *testing.T, cert tls.Certificate) *npmRegistry {
	t.Helper()
	reg := &npmRegistry{}
	tgz := npmTarball(t)
	sum512, sum1 := sha512.Sum512(tgz), sha1.Sum(tgz)
	var packument []byte
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reg.mu.Lock()
		reg.paths = append(reg.paths, r.URL.Path)
		reg.mu.Unlock()
		switch r.URL.Path {
		case "/aegis-hello":
			w.Header().Set("Content-Type", "application/json")
			w.Write(packument)
		case "/aegis-hello/-/aegis-hello-1.0.0.tgz":
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Write(tgz)
		default:
			http.NotFound(w, r)
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			reg.mu.Lock()
			reg.conns++
			reg.mu.Unlock()
		}
	}
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	reg.port = srv.Listener.Addr().(*net.TCPAddr).Port
	base := "https://" + net.JoinHostPort(npmName, strconv.Itoa(reg.port))
	version := map[string]any{
		"name": "aegis-hello", "version": "1.0.0", "bin": map[string]string{"aegis-hello": "server.js"},
		"dist": map[string]string{
			"tarball":   base + "/aegis-hello/-/aegis-hello-1.0.0.tgz",
			"integrity": "sha512-" + base64.StdEncoding.EncodeToString(sum512[:]),
			"shasum":    hex.EncodeToString(sum1[:]),
		},
	}
	packument, _ = json.Marshal(map[string]any{"name": "aegis-hello", "dist-tags": map[string]string{"latest": "1.0.0"},
		"versions": map[string]any{"1.0.0": version}})
	return reg
}

// TestConfineEgressNPX: npx -y from an empty cache, confined with
// --allow-egress as the only way to the network, fetches a real package
// by name from an HTTPS registry (its own CA, npm's --cafile) through
// aegis's proxy and runs it as the MCP server; the registry's name is
// known to no DNS, only to the grant that pins it (NAME:PORT=ADDR).
// Every connection the registry accepted is an allowed egress record of
// that grant, none refused; the log verifies. On both revisions.
func TestConfineEgressNPX(t *testing.T) {
	t.Parallel()
	npx, err := exec.LookPath("npx")
	if err != nil {
		t.Fatal("npx (Node.js's npm) is needed")
	}
	cert, caPEM := localCA(t, npmName)
	reg := startNPMRegistry(t, cert)
	grant := npmName + ":" + strconv.Itoa(reg.port) + "=127.0.0.1"
	for _, rev := range revisions {
		t.Run(rev, func(t *testing.T) {
			f := newFixture(t)
			// npm's home, empty cache and temporary files: the one folder
			// the child may write.
			work := filepath.Join(f.dir, "npm")
			for _, d := range []string{"home", "cache", "tmp"} {
				if err := os.MkdirAll(filepath.Join(work, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			caPath := filepath.Join(work, "ca.pem")
			if err := os.WriteFile(caPath, caPEM, 0o644); err != nil {
				t.Fatal(err)
			}
			registry := "https://" + net.JoinHostPort(npmName, strconv.Itoa(reg.port)) + "/"
			reg.mu.Lock()
			connsBefore := reg.conns
			reg.mu.Unlock()

			cmd := f.wrapCmd([]string{"--name", "npx", "--grace", "20s", "--confine", "--allow-exec-support",
				"--allow-write", work, "--allow-egress", grant},
				npx, "-y", "--registry", registry, "--cafile", caPath, "aegis-hello")
			cmd.Env = append(os.Environ(), "HOME="+filepath.Join(work, "home"), "TMPDIR="+filepath.Join(work, "tmp"),
				"npm_config_cache="+filepath.Join(work, "cache"), "npm_config_update_notifier=false",
				"npm_config_audit=false", "npm_config_fund=false", "npm_config_userconfig="+filepath.Join(work, "home", ".npmrc"))
			s := startSession(t, cmd, rev)
			watchdog := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() })
			defer watchdog.Stop()
			s.initialize("npx-test")
			s.request("tools/list", nil)
			a := s.call("hello")
			var res struct{ Content []struct{ Text string } }
			json.Unmarshal(a.Result, &res)
			if a.Error != nil || len(res.Content) != 1 || res.Content[0].Text != "hello from aegis-hello@1.0.0" {
				t.Fatalf("tools/call hello = %s, %+v; want the package's answer\n%s", a.Result, a.Error, s.stderr.String())
			}
			s.end()

			reg.mu.Lock()
			conns, paths := reg.conns-connsBefore, strings.Join(reg.paths, " ")
			reg.mu.Unlock()
			if conns == 0 || !strings.Contains(paths, "/aegis-hello/-/aegis-hello-1.0.0.tgz") {
				t.Fatalf("the registry accepted %d connections, served %s; want the tarball fetched", conns, paths)
			}
			recs := sessionRecords(t, f)
			enf := recs[1].Body.(*record.Enforcement)
			if enf.Egress == nil || !enf.Egress.NetNS || len(enf.Egress.Grants) != 1 || enf.Egress.Grants[0] != grant {
				t.Errorf("enforcement's egress %+v; want the pinned grant %s in a network namespace", enf.Egress, grant)
			}
			var allowed int
			opened := map[uint64]bool{}
			for _, r := range recs {
				e, ok := r.Body.(*record.Egress)
				if !ok {
					continue
				}
				// Each connection's opening record is written before it
				// carries a byte, its record with the totals when it ends.
				if e.Open {
					opened[e.Conn] = true
				} else if !opened[e.Conn] {
					t.Errorf("egress record %+v: no opening record before it", e)
				}
				if e.Decision != record.EgressAllowed || e.Host != npmName || e.Port != reg.port || e.Method != "CONNECT" ||
					e.Grant != grant || e.SNI != npmName || e.Addr != "127.0.0.1:"+strconv.Itoa(reg.port) || !e.Open && (e.BytesUp == 0 || e.BytesDown == 0) {
					t.Errorf("egress record %+v; want an allowed tunnel to %s by %s (at its end, bytes carried both ways)", e, npmName, grant)
				}
				// On 2025-11-25 nothing is called before initialize is
				// answered, which the package does once npx has fetched it.
				if rev == "2025-11-25" && len(e.InFlight) != 0 {
					t.Errorf("egress record %+v names calls in flight before any was made", e)
				}
				if !e.Open {
					allowed++
				}
			}
			if allowed != conns || len(opened) != conns {
				t.Errorf("%d egress records at close, %d opening; the registry accepted %d connections, each of which is both", allowed, len(opened), conns)
			}
			f.mustVerify(t, 0)
		})
	}
}
