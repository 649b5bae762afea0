package demo

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// pipeServer runs srv as a server on pipes and drives it with the client
// script, bounded by timeout. It returns Drive's error and the transcript.
func pipeServer(t *testing.T, srv func(r io.Reader, w io.Writer), timeout time.Duration) (error, string) {
	t.Helper()
	sr, cw := io.Pipe()
	cr, sw := io.Pipe()
	served := make(chan struct{})
	go func() {
		defer close(served)
		srv(sr, sw)
		sw.Close()
		io.Copy(io.Discard, sr) // a server that quit early must not block Drive's writes
	}()
	var log bytes.Buffer
	err := drive(cw, cr, &log, timeout)
	cw.Close()
	select {
	case <-served:
	case <-time.After(10 * time.Second):
		t.Fatal("server did not end after its stdin was closed")
	}
	return err, log.String()
}

func TestDriveServe(t *testing.T) {
	var serveErr error
	err, log := pipeServer(t, func(r io.Reader, w io.Writer) { serveErr = Serve(r, w) }, AnswerTimeout)
	if err != nil {
		t.Fatalf("Drive against Serve = %v; want nil\ntranscript:\n%s", err, log)
	}
	if serveErr != nil {
		t.Errorf("Serve = %v; want nil at EOF", serveErr)
	}
	for _, want := range []string{
		"→ initialize", "aegis-demo 1.0.0, protocol 2025-11-25",
		"→ notifications/initialized",
		"← echo, add, slow, fail",
		`→ tools/call echo {"text":"hello, aegis"}`,
		`→ tools/call add {"a":2,"b":3}`, "← 5\n",
		`→ tools/call slow {"ms":300}`, "← (in flight)",
		`→ tools/call add {"a":40,"b":2}`, "← 42\n",
		"← slow: slept 300ms",
		"→ tools/call fail {}", "← isError: fail: this tool fails on purpose",
		"→ tools/call no-such-tool {}", "← error -32602: unknown tool",
		`→ [tools/call echo {"text":"batched"}, tools/call add {"a":1.5,"b":2.25}]`,
	} {
		if !strings.Contains(log, want) {
			t.Errorf("transcript lacks %q:\n%s", want, log)
		}
	}
	if !strings.Contains(log, "[batched, 3.75]") && !strings.Contains(log, "[3.75, batched]") {
		t.Errorf("transcript lacks the batch answers:\n%s", log)
	}
	if n := strings.Count(log, "\n"); n != 12 {
		t.Errorf("transcript has %d lines; want 12:\n%s", n, log)
	}
}

// mutate runs Serve but passes each answer line through f, which may
// rewrite it or return "" to drop it.
func mutate(f func(line string) string) func(io.Reader, io.Writer) {
	return func(r io.Reader, w io.Writer) {
		pr, pw := io.Pipe()
		go func() {
			Serve(r, pw)
			pw.Close()
		}()
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if l := f(sc.Text()); l != "" {
				io.WriteString(w, l+"\n")
			}
		}
	}
}

func TestDriveCatchesBadServers(t *testing.T) {
	tests := []struct {
		name string
		srv  func(io.Reader, io.Writer)
		want error
	}{
		{"silent", func(r io.Reader, w io.Writer) { io.Copy(io.Discard, r) }, ErrTimeout},
		{"closes its output at once", func(r io.Reader, w io.Writer) {}, ErrClosed},
		{"answers initialize with an unknown version", mutate(func(l string) string {
			return strings.Replace(l, `"`+ProtocolVersion+`"`, `"2030-01-01"`, 1)
		}), ErrAnswer},
		{"adds wrong", mutate(func(l string) string {
			return strings.Replace(l, `"text":"5"`, `"text":"6"`, 1)
		}), ErrAnswer},
		{"drops the slow answer", mutate(func(l string) string {
			if strings.Contains(l, "slept") {
				return ""
			}
			return l
		}), ErrTimeout},
		{"fail is not an error", mutate(func(l string) string {
			return strings.Replace(l, `,"isError":true`, ``, 1)
		}), ErrAnswer},
		{"unknown tool succeeds", mutate(func(l string) string {
			if strings.Contains(l, "unknown tool") {
				return `{"jsonrpc":"2.0","id":8,"result":{"content":[]}}`
			}
			return l
		}), ErrAnswer},
		{"splits the batch answer", mutate(func(l string) string {
			if strings.HasPrefix(l, "[") {
				return l[1 : strings.Index(l, "},{")+1]
			}
			return l
		}), ErrTimeout},
		{"answers an id never sent", mutate(func(l string) string {
			if strings.Contains(l, `"id":1,`) {
				return l + "\n" + `{"jsonrpc":"2.0","id":999,"result":{}}`
			}
			return l
		}), ErrAnswer},
		{"sends a request of its own", mutate(func(l string) string {
			if strings.Contains(l, `"id":1,`) {
				return `{"jsonrpc":"2.0","id":0,"method":"roots/list"}` + "\n" + l
			}
			return l
		}), ErrAnswer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err, log := pipeServer(t, tt.srv, time.Second)
			t.Logf("Drive = %v", err)
			if !errors.Is(err, tt.want) {
				t.Errorf("Drive = %v; want an error matching %v\ntranscript:\n%s", err, tt.want, log)
			}
		})
	}
}
