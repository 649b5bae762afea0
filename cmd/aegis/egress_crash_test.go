package main

import (
	"bytes"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/journal/record"
)

// holdClient is a confined child that fetches https://localhost:PORT/hold
// through the proxy HTTPS_PROXY names (Python's urllib), trusting the CA
// at argv[2]; the server holds the answer.
const holdClient = `
import ssl, sys, urllib.request
ctx = ssl.create_default_context(cafile=sys.argv[2])
try:
    urllib.request.urlopen("https://localhost:" + sys.argv[1] + "/hold", context=ctx, timeout=60).read()
except Exception as e:
    print(e, file=sys.stderr)
`

// TestConfineEgressCrash: aegis is killed (SIGKILL) while a connection
// through its proxy is open; the log still holds the connection's
// opening record (the grant, the address dialled, the server name), only
// the totals are lost, and aegis log shows it.
func TestConfineEgressCrash(t *testing.T) {
	t.Parallel()
	env := newEscapeEnv(t)
	held := make(chan struct{}, 1)
	release := make(chan struct{})
	defer close(release)
	_, tlsPort, caPath := egressServices(t, env.read, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		held <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	f := newFixture(t)
	grant := "localhost:" + strconv.Itoa(tlsPort)
	cmd := f.wrapCmd([]string{"--confine", "--allow-exec-support", "--allow-read", env.read, "--allow-egress", grant},
		"/usr/bin/python3", "-c", holdClient, strconv.Itoa(tlsPort), caPath)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-held:
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the request never reached the server\n%s", stderr.String())
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	var opened []*record.Egress
	for _, r := range f.records(t) {
		switch b := r.Body.(type) {
		case *record.Egress:
			if !b.Open {
				t.Errorf("egress record at the end %+v, from an aegis killed mid-connection", b)
			}
			opened = append(opened, b)
		case *record.SessionEnd:
			t.Errorf("session_end %+v from an aegis killed", b)
		}
	}
	want := "127.0.0.1:" + strconv.Itoa(tlsPort)
	if len(opened) != 1 || opened[0].Grant != grant || opened[0].Addr != want || opened[0].SNI != "localhost" || opened[0].Conn != 1 {
		t.Fatalf("opening records %+v; want the one connection's, by %s to %s", opened, grant, want)
	}
	out, err := exec.Command(aegisBin, "log", f.audit).Output()
	line := "egress CONNECT " + grant + " opened, allowed by " + grant + ", to " + want + " (TLS to localhost)"
	if err != nil || !strings.Contains(string(out), line) {
		t.Errorf("aegis log: %v\n%s\nwants a line holding %q", err, out, line)
	}
}
