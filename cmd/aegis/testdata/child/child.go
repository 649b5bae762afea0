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

// testChild is the wrapped child server of $AEGIS_TEST_CHILD. Modes:
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
//	protocol      a server of both revisions, rounds and tasks (protocolChild)
//	orphan        start a grandchild that holds stdout open ($AEGIS_TEST_IN gets its pid), write a line, exit
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
	case "protocol":
		return protocolChild(logf)
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
	case "orphan":
		gc := exec.Command("sleep", "120")
		gc.Stdout = os.Stdout
		if err := gc.Start(); err != nil {
			return 1
		}
		os.WriteFile(os.Getenv("AEGIS_TEST_IN"), []byte(strconv.Itoa(gc.Process.Pid)), 0o600)
		write([]byte(`{"jsonrpc":"2.0","method":"notifications/orphaned"}`))
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
	self, err := os.Executable()
	if err != nil {
		return 1
	}
	if err := floorrelay.Run([]string{"env", "AEGIS_TEST_CHILD=echo", self}, os.Stdin, os.Stdout, os.Stderr); err != nil && !errors.As(err, &exit) {
		return 1
	}
	return 0
}

// protocolChild is a server that speaks MCP 2026-07-28 (rounds, the Tasks
// extension) and 2025-11-25 (tasks, server requests), by tool:
//
//	login   without params.requestState: input_required, asking an
//	        elicitation ("login") with requestState "st-1"; with "st-1":
//	        complete, its text the login answer's action
//	slow    with params.task (2025-11-25): a CreateTaskResult, task
//	        "task-25", completed at its first tasks/get, its result given
//	        by tasks/result; without: resultType task, task "task-26":
//	        tasks/get answers working, then input_required (key "confirm"),
//	        and after tasks/update the task completes, said by
//	        notifications/tasks (later tasks/get answer completed)
//	ask     an elicitation/create request (id "srv-1") to the client,
//	        then, once answered, the call's result
//	hang    no answer; a notifications/cancelled naming it is answered
//	        late, with a result that says whether the call's cancelled
//	        outcome was in $AEGIS_TEST_AUDIT when it arrived
//
// Every other request gets an empty result.
func protocolChild(logf *os.File) int {
	out := bufio.NewWriter(os.Stdout)
	write := func(s string) {
		out.WriteString(s)
		out.WriteByte('\n')
		out.Flush()
	}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	polls26, updated := 0, false
	for sc.Scan() {
		line := sc.Bytes()
		if logf != nil {
			logf.Write(append(append([]byte(nil), line...), '\n'))
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name         string          `json:"name"`
				RequestState string          `json:"requestState"`
				Task         json.RawMessage `json:"task"`
				TaskID       string          `json:"taskId"`
				RequestID    json.RawMessage `json:"requestId"`
			} `json:"params"`
		}
		if json.Unmarshal(line, &msg) != nil {
			continue
		}
		id := string(msg.ID)
		result := func(r string) { write(`{"jsonrpc":"2.0","id":` + id + `,"result":` + r + `}`) }
		switch {
		case msg.Method == "notifications/cancelled":
			// Says whether the call's cancelled outcome was in the log
			// when this notification arrived.
			seen := "missing"
			if bytes.Contains(readAudit(os.Getenv("AEGIS_TEST_AUDIT")), []byte(`"status":"cancelled"`)) {
				seen = "recorded"
			}
			write(`{"jsonrpc":"2.0","id":` + string(msg.Params.RequestID) + `,"result":{"content":[{"type":"text","text":"too late, cancel ` + seen + `"}]}}`)
		case msg.ID == nil:
		case msg.Method == "tools/call" && msg.Params.Name == "login" && msg.Params.RequestState == "":
			result(`{"resultType":"input_required","inputRequests":{"login":{"method":"elicitation/create","params":{"mode":"form","message":"GitHub login?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}}},"requestState":"st-1"}`)
		case msg.Method == "tools/call" && msg.Params.Name == "login":
			var retry struct {
				Params struct {
					InputResponses map[string]struct {
						Action string `json:"action"`
					} `json:"inputResponses"`
				} `json:"params"`
			}
			json.Unmarshal(line, &retry)
			result(`{"resultType":"complete","content":[{"type":"text","text":"login ` + retry.Params.InputResponses["login"].Action + `"}]}`)
		case msg.Method == "tools/call" && msg.Params.Name == "slow" && msg.Params.Task != nil:
			result(`{"task":{"taskId":"task-25","status":"working","createdAt":"2026-01-01T00:00:00Z","ttl":60000}}`)
		case msg.Method == "tools/call" && msg.Params.Name == "slow":
			result(`{"resultType":"task","taskId":"task-26","status":"working","createdAt":"2026-01-01T00:00:00Z","ttlMs":60000}`)
		case msg.Method == "tasks/get" && msg.Params.TaskID == "task-25":
			result(`{"taskId":"task-25","status":"completed","createdAt":"2026-01-01T00:00:00Z","ttl":60000}`)
		case msg.Method == "tasks/result" && msg.Params.TaskID == "task-25":
			result(`{"content":[{"type":"text","text":"task-25 done"}],"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"task-25"}}}`)
		case msg.Method == "tasks/get" && msg.Params.TaskID == "task-26":
			polls26++
			switch {
			case updated:
				result(`{"resultType":"complete","taskId":"task-26","status":"completed","result":{"content":[{"type":"text","text":"task-26 done"}]}}`)
			case polls26 == 1:
				result(`{"resultType":"complete","taskId":"task-26","status":"working"}`)
			default:
				result(`{"resultType":"complete","taskId":"task-26","status":"input_required","inputRequests":{"confirm":{"method":"elicitation/create","params":{"message":"go on?"}}}}`)
			}
		case msg.Method == "tasks/update" && msg.Params.TaskID == "task-26":
			updated = true
			result(`{"resultType":"complete"}`)
			write(`{"jsonrpc":"2.0","method":"notifications/tasks","params":{"taskId":"task-26","status":"completed","result":{"content":[{"type":"text","text":"task-26 done"}]}}}`)
		case msg.Method == "tools/call" && msg.Params.Name == "ask":
			write(`{"jsonrpc":"2.0","id":"srv-1","method":"elicitation/create","params":{"message":"name?","requestedSchema":{"type":"object","properties":{}}}}`)
			if !sc.Scan() {
				return 1
			}
			result(`{"content":[{"type":"text","text":"asked"}]}`)
		case msg.Method == "tools/call" && msg.Params.Name == "hang":
		case msg.Method == "initialize":
			var init struct {
				Params struct {
					ProtocolVersion string `json:"protocolVersion"`
				} `json:"params"`
			}
			json.Unmarshal(line, &init)
			result(`{"protocolVersion":"` + init.Params.ProtocolVersion + `","capabilities":{"tools":{}},"serverInfo":{"name":"protocol","version":"1"}}`)
		default:
			result(`{"content":[]}`)
		}
	}
	return 0
}

// readAudit returns the content of an audit file (or nothing, if it cannot
// be read), without the pre-zeroed space at its end.
func readAudit(path string) []byte {
	data, _ := os.ReadFile(path)
	return bytes.TrimRight(data, "\x00")
}
