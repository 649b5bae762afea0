package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aegisrelay/aegis/internal/floorrelay"
)

// testChild is the test binary acting as the wrapped child server. Modes:
//
//	echo          answer every request with an empty result (batches with an array)
//	copy          copy stdin to $AEGIS_TEST_IN and $AEGIS_TEST_OUT to stdout, byte for byte
//	die-on-call   exit 3 on the first tools/call, unanswered
//	hang          never answer; stay alive after stdin EOF until SIGTERM
//	hang-noterm   the same, ignoring SIGTERM, and says so (notifications/ready)
//	junk          write junk lines to stdout, then echo
//	big           answer tools/call with a 20 MiB result
//	check-intent  answer tools/call with "ok" only if its intent is already in $AEGIS_TEST_AUDIT
//	relay         the benchmarks' floor relay: start an echo child and copy bytes both ways
//	roots         answer tools/call with a roots/list request of the same id first
//
// Every mode appends the lines it reads to $AEGIS_TEST_LOG when set.
func testChild(mode string) int {
	var logf *os.File
	if p := os.Getenv("AEGIS_TEST_LOG"); p != "" {
		logf, _ = os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	}
	out := bufio.NewWriter(os.Stdout)
	var mu sync.Mutex
	write := func(b []byte) {
		mu.Lock()
		defer mu.Unlock()
		out.Write(b)
		out.WriteByte('\n')
		out.Flush()
	}
	switch mode {
	case "relay":
		return relayChild()
	case "copy":
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			data, _ := os.ReadFile(os.Getenv("AEGIS_TEST_OUT"))
			os.Stdout.Write(data)
		}()
		in, _ := io.ReadAll(os.Stdin)
		os.WriteFile(os.Getenv("AEGIS_TEST_IN"), in, 0o600)
		wg.Wait()
		return 0
	case "hang", "hang-noterm":
		if mode == "hang-noterm" {
			signal.Ignore(syscall.SIGTERM)
			// Said once SIGTERM is ignored: a test that waits for it knows
			// the SIGTERM after the grace period cannot end this child.
			write([]byte(`{"jsonrpc":"2.0","method":"notifications/ready"}`))
		}
		io.Copy(io.Discard, os.Stdin)
		time.Sleep(time.Hour)
		return 0
	case "junk":
		write([]byte("this is not json"))
		write([]byte("\x00\x01\x02 {{{"))
	}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if logf != nil {
			logf.Write(append(append([]byte(nil), line...), '\n'))
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if bytes.HasPrefix(bytes.TrimSpace(line), []byte("[")) {
			var batch []struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(line, &batch) == nil {
				var answers []string
				for _, m := range batch {
					if m.ID != nil && m.Method != "" {
						answers = append(answers, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"content":[]}}`)
					}
				}
				if len(answers) > 0 {
					write([]byte("[" + strings.Join(answers, ",") + "]"))
				}
			}
			continue
		}
		if json.Unmarshal(line, &msg) != nil || msg.ID == nil || msg.Method == "" {
			continue
		}
		id := string(msg.ID)
		switch {
		case mode == "roots" && msg.Method == "tools/call":
			// A server→client request with the very id of the call, then,
			// once the client has answered it, the call's response.
			write([]byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"roots/list"}`))
			if !sc.Scan() {
				return 1
			}
			write([]byte(`{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":"after roots"}]}}`))
		case mode == "die-on-call" && msg.Method == "tools/call":
			return 3
		case mode == "big" && msg.Method == "tools/call":
			write([]byte(`{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":"` + strings.Repeat("x", 20<<20) + `"}]}}`))
		case mode == "check-intent" && msg.Method == "tools/call":
			sum := sha256.Sum256(line)
			audit := readAudit(os.Getenv("AEGIS_TEST_AUDIT"))
			verdict := "missing"
			if bytes.Contains(audit, []byte(`"request_digest":"sha256:`+hex.EncodeToString(sum[:])+`"`)) {
				verdict = "ok"
			}
			write([]byte(`{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":"` + verdict + `"}]}}`))
		default:
			write([]byte(`{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[]}}`))
		}
	}
	if code, err := strconv.Atoi(os.Getenv("AEGIS_TEST_EXIT")); err == nil {
		return code
	}
	return 0
}

// relayChild is the floor a relay is measured against (package
// floorrelay, BENCHMARKS.md) around the echo child.
func relayChild() int {
	// The echo child's own exit status is not the floor's concern; a child
	// that could not be started is.
	var exit *exec.ExitError
	if err := floorrelay.Run(child("echo"), os.Stdin, os.Stdout, os.Stderr); err != nil && !errors.As(err, &exit) {
		return 1
	}
	return 0
}
