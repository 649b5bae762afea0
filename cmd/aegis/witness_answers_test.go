package main

import (
	"bytes"
	"crypto/ed25519"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"

	"github.com/aegisrelay/aegis/internal/exitcode"
	"github.com/aegisrelay/aegis/internal/witness"
	"github.com/aegisrelay/aegis/journal/tlog"
)

// fakeWitness is a tlog-witness on loopback that answers the n-th
// request (from 0) as script[n] says, and every request past the script
// as an honest witness holding the tree of size it last cosigned: a 409
// with that size when the request names another old size, else its
// cosignature (it checks no proof). Nothing it answers is believed by
// aegis before the cosignature checks: these are the answers of a
// witness that lies, breaks, stalls, or is not the witness at all.
type fakeWitness struct {
	name, vkey string
	srv        *httptest.Server
	signer     note.Signer
	script     []fakeAnswer
	n          atomic.Int32

	mu   sync.Mutex
	size uint64
}

// fakeAnswer answers one request whose checkpoint note has the text
// text (without its signatures).
type fakeAnswer func(fw *fakeWitness, rw http.ResponseWriter, r *http.Request, old uint64, text []byte)

func newFakeWitness(t *testing.T, name string, script ...fakeAnswer) *fakeWitness {
	t.Helper()
	_, k, _ := ed25519.GenerateKey(nil)
	s, err := torchwood.NewCosignatureSigner(name, k)
	if err != nil {
		t.Fatal(err)
	}
	vkey, err := witness.CosignatureKey(name, k.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	fw := &fakeWitness{name: name, vkey: vkey, signer: s, script: script}
	fw.srv = httptest.NewServer(http.HandlerFunc(fw.serve))
	t.Cleanup(fw.srv.Close)
	return fw
}

func (fw *fakeWitness) flag() string { return fw.srv.URL + "," + fw.vkey }

func (fw *fakeWitness) serve(rw http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	head, msg, _ := bytes.Cut(body, []byte("\n\n"))
	text, _, _ := bytes.Cut(msg, []byte("\n\n"))
	text = append(text, '\n')
	first, _, _ := bytes.Cut(head, []byte("\n"))
	old, _ := strconv.ParseUint(strings.TrimPrefix(string(first), "old "), 10, 64)
	if i := int(fw.n.Add(1)) - 1; i < len(fw.script) && fw.script[i] != nil {
		fw.script[i](fw, rw, r, old, text)
		return
	}
	fwHonest(fw, rw, r, old, text)
}

// requests is how many requests the witness received.
func (fw *fakeWitness) requests() int { return int(fw.n.Load()) }

// fwCosign returns the cosignature line of s on a note whose text is text.
func fwCosign(s note.Signer, text []byte) []byte {
	signed, err := note.Sign(&note.Note{Text: string(text)}, s)
	if err != nil {
		panic(err)
	}
	return signed[len(text)+1:]
}

func fwHonest(fw *fakeWitness, rw http.ResponseWriter, _ *http.Request, old uint64, text []byte) {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	if old != fw.size {
		rw.Header().Set("Content-Type", "text/x.tlog.size")
		rw.WriteHeader(http.StatusConflict)
		io.WriteString(rw, strconv.FormatUint(fw.size, 10)+"\n")
		return
	}
	lines := strings.Split(string(text), "\n")
	fw.size, _ = strconv.ParseUint(lines[1], 10, 64)
	rw.Write(fwCosign(fw.signer, text))
}

// fwStatus is a fixed status and body.
func fwStatus(status int, body string) fakeAnswer {
	return func(_ *fakeWitness, rw http.ResponseWriter, _ *http.Request, _ uint64, _ []byte) {
		rw.WriteHeader(status)
		io.WriteString(rw, body)
	}
}

// fwRedirect sends the request to url, which an honest witness serves.
func fwRedirect(status int, url string) fakeAnswer {
	return func(_ *fakeWitness, rw http.ResponseWriter, r *http.Request, _ uint64, _ []byte) {
		http.Redirect(rw, r, url+witness.AddCheckpointPath, status)
	}
}

// fwOtherKey answers with a well-formed cosignature by a key that is not
// the witness's, under the witness's name.
func fwOtherKey(fw *fakeWitness, rw http.ResponseWriter, _ *http.Request, _ uint64, text []byte) {
	_, k, _ := ed25519.GenerateKey(nil)
	s, _ := torchwood.NewCosignatureSigner(fw.name, k)
	rw.Write(fwCosign(s, text))
}

// fwTampered answers with the witness's own cosignature, one byte of its
// signature changed.
func fwTampered(fw *fakeWitness, rw http.ResponseWriter, _ *http.Request, _ uint64, text []byte) {
	line := fwCosign(fw.signer, text)
	// Within the base64 of the signature, another base64 character.
	if i := len(line) - 10; line[i] == 'A' {
		line[i] = 'B'
	} else {
		line[i] = 'A'
	}
	rw.Write(line)
}

// fwRaw writes resp on the connection as the whole answer.
func fwRaw(resp string) fakeAnswer {
	return func(_ *fakeWitness, rw http.ResponseWriter, _ *http.Request, _ uint64, _ []byte) {
		c, buf, err := rw.(http.Hijacker).Hijack()
		if err != nil {
			panic(err)
		}
		buf.WriteString(resp)
		buf.Flush()
		c.Close()
	}
}

// fwHang holds the request until the client gives up.
func fwHang(_ *fakeWitness, _ http.ResponseWriter, r *http.Request, _ uint64, _ []byte) {
	<-r.Context().Done()
}

// fwDrip answers 200 and then a byte at a time, never ending the body.
func fwDrip(_ *fakeWitness, rw http.ResponseWriter, r *http.Request, _ uint64, _ []byte) {
	rw.WriteHeader(http.StatusOK)
	for {
		rw.Write([]byte("—"))
		rw.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// fwHeld holds the request until release is closed, then answers as an
// honest witness.
func fwHeld(release <-chan struct{}) fakeAnswer {
	return func(fw *fakeWitness, rw http.ResponseWriter, r *http.Request, old uint64, text []byte) {
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		fwHonest(fw, rw, r, old, text)
	}
}

// TestWitnessAnswers: nothing a witness answers stops or stalls a
// session of wrap --witness (without --witness-strict): not a redirect
// (never followed, whatever its code), a 409 naming a size larger than
// the log's (at start or later), a 409 naming a smaller one or no size,
// a 422, an answer or a header over 64 KiB, an answer that writes
// control sequences to the terminal (said escaped), a cosignature by another key or one
// changed, a witness that holds the request past --witness-timeout or
// drips its answer, nor one that has not answered when the first call
// comes. Each session exits 0 with its calls answered and a log that
// verifies; what the witness did is said on stderr and recorded in the
// state file; only a valid cosignature reaches the witnessed history.
func TestWitnessAnswers(t *testing.T) {
	t.Parallel()
	// Where the redirects point: an honest witness, which receives a
	// request only if a redirect is followed.
	elsewhere := newFakeWitness(t, "example.com/elsewhere")
	release := make(chan struct{})
	const huge = "18446744073709551615"
	// escapes clear a terminal and set its title: said on stderr as
	// they came, a witness's answer would write to the user's terminal.
	// \u009b is CSI as a C1 control, which Go lets through in a header.
	const escapes = "\x1b[2J\x1b]0;owned\x07\x9b1m\u009b2J"
	tests := []struct {
		name    string
		script  []fakeAnswer
		size    uint64 // the tree the witness holds at first
		timeout time.Duration
		// held: the first call is made while the witness holds the
		// probe of the start, and answered before it is released.
		held      bool
		wantErr   []string // on stderr
		wantState string   // the witness's line in the state file holds it
		cosigned  bool     // the session's last checkpoint is in the witnessed history
	}{
		{name: "honest", wantState: "state=ok", cosigned: true},
		{name: "holding a smaller tree of the log", size: 1, wantState: "state=ok", cosigned: true},
		{name: "307 to another port", script: fwAlways(fwRedirect(307, elsewhere.srv.URL)),
			wantErr: []string{"307 Temporary Redirect", "redirects are not followed"}, wantState: "state=error cosigned=0 start=error"},
		{name: "308 to another port", script: fwAlways(fwRedirect(308, elsewhere.srv.URL)),
			wantErr: []string{"redirects are not followed"}, wantState: "state=error cosigned=0 start=error"},
		{name: "302 to another port", script: fwAlways(fwRedirect(302, elsewhere.srv.URL)),
			wantErr: []string{"redirects are not followed"}, wantState: "state=error cosigned=0 start=error"},
		{name: "a 409 naming a huge size, at start", script: []fakeAnswer{fwStatus(409, huge+"\n")},
			wantErr: []string{"says it holds " + huge + " records", "nothing authenticates", "the session goes on"}, wantState: "state=ok", cosigned: true},
		{name: "a 409 naming a huge size, always", script: fwAlways(fwStatus(409, huge+"\n")),
			wantErr: []string{"says it holds " + huge + " records", "NOT witnessed"}, wantState: "state=ahead cosigned=0 start=ahead"},
		{name: "a 409 naming a size one above the log's, always", script: fwAlways(func(fw *fakeWitness, rw http.ResponseWriter, r *http.Request, old uint64, text []byte) {
			n, _ := strconv.ParseUint(strings.Split(string(text), "\n")[1], 10, 64)
			fwStatus(409, strconv.FormatUint(n+1, 10)+"\n")(fw, rw, r, old, text)
		}), wantErr: []string{"larger tree"}, wantState: "state=ahead cosigned=0 start=ahead"},
		{name: "a 409 with no size", script: fwAlways(fwStatus(409, "forty\n")),
			wantErr: []string{"no tree size"}, wantState: "state=error cosigned=0 start=error"},
		{name: "a 409 with a negative size", script: fwAlways(fwStatus(409, "-1\n")),
			wantErr: []string{"no tree size"}, wantState: "state=error cosigned=0 start=error"},
		{name: "a 422 at start", script: []fakeAnswer{fwStatus(422, "bad proof\n")},
			wantErr: []string{"consistency proof refused", "nothing authenticates"}, wantState: "state=ok", cosigned: true},
		{name: "a 422 always", script: fwAlways(fwStatus(422, "bad proof\n")),
			wantErr: []string{"consistency proof refused"}, wantState: "state=fork cosigned=0 start=fork"},
		{name: "an answer of 1 MiB", script: fwAlways(fwStatus(200, strings.Repeat("x", 1<<20))),
			wantErr: []string{"longer than 64 KiB"}, wantState: "state=error cosigned=0 start=error"},
		{name: "a 500 whose body writes to the terminal", script: fwAlways(fwStatus(500, escapes+" oops\n")),
			wantErr: []string{`\x1b[2J`}, wantState: "state=error cosigned=0 start=error"},
		{name: "a 404 whose body writes to the terminal", script: fwAlways(fwStatus(404, escapes+"\n")),
			wantErr: []string{`\x1b[2J`}, wantState: "state=unknown-log cosigned=0 start=unknown-log"},
		{name: "a status line that writes to the terminal", script: fwAlways(fwRaw("HTTP/1.1 500 " + escapes + "\r\nContent-Length: 0\r\n\r\n")),
			wantErr: []string{"500 Internal Server Error"}, wantState: "state=error cosigned=0 start=error"},
		{name: "a header line that writes to the terminal", script: fwAlways(fwRaw("HTTP/1.1 200 OK\r\n" + escapes + "\r\n\r\n")),
			wantErr: []string{`\x1b[2J`}, wantState: "state=unreachable cosigned=0 start=unreachable"},
		{name: "a redirect whose Location writes to the terminal", script: fwAlways(fwRaw("HTTP/1.1 302 Found\r\nLocation: /\u009b2J\r\nContent-Length: 0\r\n\r\n")),
			wantErr: []string{`\u009b2J`, "redirects are not followed"}, wantState: "state=error cosigned=0 start=error"},
		{name: "a header of 1 MiB", script: fwAlways(func(fw *fakeWitness, rw http.ResponseWriter, r *http.Request, old uint64, text []byte) {
			for i := range 16 {
				rw.Header().Set("X-Pad-"+strconv.Itoa(i), strings.Repeat("x", 64<<10))
			}
			fwHonest(fw, rw, r, old, text)
		}), wantErr: []string{"unreachable"}, wantState: "state=unreachable cosigned=0 start=unreachable"},
		{name: "a cosignature by another key", script: fwAlways(fwOtherKey),
			wantErr: []string{"cosignature missing or invalid"}, wantState: "state=bad-cosignature cosigned=0 start=bad-cosignature"},
		{name: "a cosignature changed", script: fwAlways(fwTampered),
			wantErr: []string{"cosignature missing or invalid"}, wantState: "state=bad-cosignature cosigned=0 start=bad-cosignature"},
		{name: "a cosignature by another key, then honest", script: []fakeAnswer{fwOtherKey},
			wantState: "state=ok", cosigned: true},
		{name: "hangs", script: fwAlways(fwHang), timeout: 300 * time.Millisecond,
			wantErr: []string{"unreachable"}, wantState: "state=unreachable cosigned=0 start=unreachable"},
		{name: "drips its answer", script: fwAlways(fwDrip), timeout: 300 * time.Millisecond,
			wantErr: []string{"unreachable"}, wantState: "state=unreachable cosigned=0 start=unreachable"},
		{name: "holds the probe of the start", script: []fakeAnswer{fwHeld(release)}, held: true,
			wantState: "state=ok", cosigned: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newWitnessFixture(t)
			if code, errOut := f.session(t, 1); code != 0 {
				t.Fatalf("first session: exit %d\n%s", code, errOut)
			}
			fw := newFakeWitness(t, "example.com/w", tc.script...)
			fw.size = tc.size
			timeout := tc.timeout
			if timeout == 0 {
				// Longer than a first call may wait: one that waited
				// for the witness fails the test.
				timeout = 20 * time.Second
			}
			s := f.start(t, []string{"--checkpoint-file", f.cp, "--checkpoint-every", "1",
				"--witness", fw.flag(), "--witness-timeout", timeout.String()}, nil, child("echo")...)
			s.send(strings.TrimSuffix(callLine, "\n"))
			answered := make(chan string, 1)
			go func() { l, _ := s.stdout.ReadString('\n'); answered <- l }()
			select {
			case l := <-answered:
				if !strings.Contains(l, `"id":1`) {
					t.Fatalf("the first call's answer = %q\n%s", l, s.stderr)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("the first call was not answered within 10s: it waits on the witness")
			}
			if tc.held {
				if n := fw.requests(); n > 1 {
					t.Errorf("the witness received %d requests before the first call was answered; want the probe alone, held", n)
				}
				close(release)
			}
			for range 3 {
				s.send(strings.TrimSuffix(callLine, "\n"))
				if l := s.recv(); !strings.Contains(l, `"id":1`) {
					t.Fatalf("answer = %q", l)
				}
			}
			s.stdin.Close()
			if code := s.wait(30 * time.Second); code != 0 {
				t.Fatalf("wrap = exit %d; want 0\n%s", code, s.stderr)
			}
			errOut := s.stderr.String()
			if i := strings.IndexFunc(errOut, func(r rune) bool {
				return r == utf8.RuneError || unicode.IsControl(r) && r != '\n'
			}); i >= 0 {
				t.Errorf("wrap's stderr holds a control character or a byte that is no character, which the witness sent (%q)", errOut[max(0, i-40):min(len(errOut), i+40)])
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(errOut, want) {
					t.Errorf("wrap's stderr does not say %q:\n%s", want, errOut)
				}
			}
			state := string(mustReadT(t, f.cp+witness.StateExt))
			if !strings.Contains(state, "witness example.com/w "+tc.wantState) {
				t.Errorf("the state file does not hold %q:\n%s", tc.wantState, state)
			}
			final, err := tlog.ReadCheckpoint(f.cp, f.pub)
			if err != nil {
				t.Fatal(err)
			}
			w, _ := witness.New(fw.srv.URL, fw.vkey)
			hist, _ := os.ReadFile(f.cp + witness.WitnessedExt)
			got := false
			for _, n := range tlog.Split(hist) {
				idx, err := witness.Cosigners(n, []witness.Witness{w})
				if err != nil || len(idx) != 1 {
					t.Errorf("the witnessed history holds a checkpoint without a valid cosignature (%v):\n%s", err, n)
				}
				if c, err := tlog.Open(n, f.pub); err == nil && c == final {
					got = true
				}
			}
			if got != tc.cosigned {
				t.Errorf("the session's last checkpoint in the witnessed history: %v; want %v\n%s", got, tc.cosigned, errOut)
			}
			if n := elsewhere.requests(); n != 0 {
				t.Errorf("the redirect's target received %d requests; want none", n)
			}
			f.mustVerify(t, 0)
		})
	}
}

// fwAlways is a script that answers every request with a.
func fwAlways(a fakeAnswer) []fakeAnswer {
	s := make([]fakeAnswer, 64)
	for i := range s {
		s[i] = a
	}
	return s
}

// TestWitnessStrict: wrap --witness-strict waits at start, at most
// --witness-timeout, for the witnesses' word on the log's last
// checkpoint, and refuses to continue the log (exit 2, the log left as
// it was) when one says it holds a larger tree of it (any size above the
// log's) or refuses the proof from the tree it holds; a witness that
// does not answer, answers something else, or redirects is reported and
// the session goes on.
func TestWitnessStrict(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		script  []fakeAnswer
		want    int
		wantErr string
	}{
		{"a 409 naming a huge size", []fakeAnswer{fwStatus(409, "18446744073709551615\n")}, exitcode.Usage, "under --witness-strict it is not continued"},
		{"a 409 naming the log's size and one", []fakeAnswer{func(fw *fakeWitness, rw http.ResponseWriter, r *http.Request, old uint64, text []byte) {
			n, _ := strconv.ParseUint(strings.Split(string(text), "\n")[1], 10, 64)
			fwStatus(409, strconv.FormatUint(n+1, 10)+"\n")(fw, rw, r, old, text)
		}}, exitcode.Usage, "larger tree"},
		{"a 422", []fakeAnswer{fwStatus(422, "bad proof\n")}, exitcode.Usage, "consistency proof refused"},
		{"honest", nil, 0, "cosigned the last checkpoint"},
		{"hangs", fwAlways(fwHang), 0, "unreachable"},
		{"a redirect", fwAlways(fwRedirect(307, "http://127.0.0.1:1")), 0, "redirects are not followed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newWitnessFixture(t)
			if code, errOut := f.session(t, 1); code != 0 {
				t.Fatalf("first session: exit %d\n%s", code, errOut)
			}
			before := readAudit(f.audit)
			fw := newFakeWitness(t, "example.com/w", tc.script...)
			code, errOut := f.session(t, 1, "--witness", fw.flag(), "--witness-strict", "--witness-timeout", "500ms")
			if code != tc.want || !strings.Contains(errOut, tc.wantErr) {
				t.Fatalf("wrap --witness-strict = exit %d; want %d saying %q\n%s", code, tc.want, tc.wantErr, errOut)
			}
			if code != 0 {
				if got := readAudit(f.audit); !bytes.Equal(got, before) {
					t.Errorf("wrap changed the log it refused")
				}
			}
			f.mustVerify(t, 0)
		})
	}
}
