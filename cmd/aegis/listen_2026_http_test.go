package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/journal/record"
)

// httpMeta is the _meta every 2026-07-28 request carries.
const httpMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"listen-2026","version":"1"}}`

// modern returns the headers of a 2026-07-28 POST with Mcp-Method method
// and, when name is not empty, Mcp-Name name.
func modern(method, name string) []string {
	h := []string{"Mcp-Protocol-Version: 2026-07-28", "Mcp-Method: " + method}
	if name != "" {
		h = append(h, "Mcp-Name: "+name)
	}
	return h
}

// rpcAnswer is a JSON-RPC answer as the tests read it.
type rpcAnswer struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code int `json:"code"`
	} `json:"error"`
}

// waitFile waits until the file at path holds want, or fails the test
// after 20 seconds, saying what it holds.
func waitFile(t *testing.T, path, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		data, _ := os.ReadFile(path)
		if bytes.Contains(data, []byte(want)) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s holds %q; want it to hold %q", path, data, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestListen2026Headers: a 2026-07-28 POST needs no session: it reaches
// the child without initialize, and no Mcp-Session-Id is given. Its
// Mcp-Method and Mcp-Name headers are required and must say what the
// body says, as every decoder reads it: a request whose headers
// disagree, or whose body decoders read differently, is answered 400
// (HeaderMismatch -32020 with the request's id, or -32600) and never
// reaches the child or the log.
func TestListen2026Headers(t *testing.T) {
	f := newFixture(t)
	childLog := filepath.Join(f.dir, "child.log")
	l := f.listen(t, nil, append([]string{"env", "AEGIS_TEST_LOG=" + childLog}, child("echo")...)...)
	call := func(id, name string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + name + `","arguments":{},` + httpMeta + `}}`
	}
	tests := []struct {
		name   string
		method string
		body   string
		hdr    []string
		want   int // HTTP status
		code   int // JSON-RPC error code; 0: an answer from the child
	}{
		{"tools/call", "POST", call("1", "echo"), modern("tools/call", "echo"), 200, 0},
		{"white space around Mcp-Name", "POST", call("2", "echo"), modern("tools/call", "  echo\t"), 200, 0},
		{"Mcp-Name in Base64", "POST", call("3", "echo"), modern("tools/call", "=?base64?ZWNobw==?="), 200, 0},
		{"resources/read", "POST", `{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"file:///a",` + httpMeta + `}}`, modern("resources/read", "file:///a"), 200, 0},
		{"tasks/get", "POST", `{"jsonrpc":"2.0","id":5,"method":"tasks/get","params":{"taskId":"t-1",` + httpMeta + `}}`, modern("tasks/get", "t-1"), 200, 0},
		{"no Mcp-Method", "POST", call("10", "echo"), []string{"Mcp-Protocol-Version: 2026-07-28", "Mcp-Name: echo"}, 400, -32020},
		{"Mcp-Method differs", "POST", call("11", "echo"), modern("tools/list", "echo"), 400, -32020},
		{"Mcp-Method in another case", "POST", call("12", "echo"), modern("TOOLS/CALL", "echo"), 400, -32020},
		{"no Mcp-Name", "POST", call("13", "echo"), modern("tools/call", ""), 400, -32020},
		{"Mcp-Name differs", "POST", call("14", "rm"), modern("tools/call", "echo"), 400, -32020},
		{"Mcp-Name bad Base64", "POST", call("15", "echo"), modern("tools/call", "=?base64?ZWNobw?="), 400, -32020},
		{"Mcp-Name differs for resources/read", "POST", `{"jsonrpc":"2.0","id":16,"method":"resources/read","params":{"uri":"file:///secret",` + httpMeta + `}}`, modern("resources/read", "file:///a"), 400, -32020},
		{"Mcp-Name differs for prompts/get", "POST", `{"jsonrpc":"2.0","id":17,"method":"prompts/get","params":{"name":"p",` + httpMeta + `}}`, modern("prompts/get", "q"), 400, -32020},
		{"Mcp-Name differs for tasks/cancel", "POST", `{"jsonrpc":"2.0","id":18,"method":"tasks/cancel","params":{"taskId":"t-2",` + httpMeta + `}}`, modern("tasks/cancel", "t-1"), 400, -32020},
		{"_meta declares another revision", "POST", strings.Replace(call("19", "echo"), `protocolVersion":"2026-07-28"`, `protocolVersion":"2025-11-25"`, 1), modern("tools/call", "echo"), 400, -32020},
		{"duplicate params.name", "POST", `{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"echo","name":"rm","arguments":{},` + httpMeta + `}}`, modern("tools/call", "echo"), 400, -32600},
		{"case-variant params.name", "POST", `{"jsonrpc":"2.0","id":21,"method":"tools/call","params":{"name":"echo","Name":"rm","arguments":{},` + httpMeta + `}}`, modern("tools/call", "echo"), 400, -32600},
		{"case-variant method", "POST", `{"jsonrpc":"2.0","id":22,"method":"tools/list","METHOD":"tools/call","params":{"name":"rm",` + httpMeta + `}}`, modern("tools/list", ""), 400, -32600},
		{"unsupported revision", "POST", call("23", "echo"), []string{"Mcp-Protocol-Version: 2099-01-01", "Mcp-Method: tools/call", "Mcp-Name: echo"}, 400, -32022},
		{"initialize", "POST", `{"jsonrpc":"2.0","id":24,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"},` + httpMeta + `}}`, modern("initialize", ""), 404, -32601},
		{"no _meta", "POST", `{"jsonrpc":"2.0","id":25,"method":"tools/list","params":{}}`, modern("tools/list", ""), 400, -32602},
		{"no clientCapabilities", "POST", `{"jsonrpc":"2.0","id":26,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, modern("tools/list", ""), 400, -32602},
		{"a notification without _meta", "POST", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, modern("notifications/initialized", ""), 400, -32602},
		{"GET", "GET", "", []string{"Mcp-Protocol-Version: 2026-07-28"}, 405, -32000},
		{"DELETE", "DELETE", "", []string{"Mcp-Protocol-Version: 2026-07-28"}, 405, -32000},
	}
	var reached []string
	for _, tt := range tests {
		resp := l.request(t, tt.method, "", tt.body, tt.hdr...)
		p := payloads(t, resp)
		if resp.StatusCode != tt.want {
			t.Errorf("%s: status %d; want %d (%q)", tt.name, resp.StatusCode, tt.want, p)
			continue
		}
		if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
			t.Errorf("%s: Mcp-Session-Id %q; want none on 2026-07-28", tt.name, sid)
		}
		if len(p) != 1 {
			t.Errorf("%s: %d payloads %q; want one answer", tt.name, len(p), p)
			continue
		}
		var a rpcAnswer
		if err := json.Unmarshal([]byte(p[0]), &a); err != nil {
			t.Errorf("%s: answer %q: %v", tt.name, p[0], err)
			continue
		}
		got := 0
		if a.Error != nil {
			got = a.Error.Code
		}
		if got != tt.code {
			t.Errorf("%s: error code %d; want %d (%s)", tt.name, got, tt.code, p[0])
		}
		if tt.code == 0 {
			reached = append(reached, tt.body)
		} else if tt.code != -32000 && strings.Contains(tt.body, `"id"`) {
			var req struct {
				ID json.RawMessage `json:"id"`
			}
			json.Unmarshal([]byte(tt.body), &req)
			if string(a.ID) != string(req.ID) {
				t.Errorf("%s: error id %s; want the request's, %s", tt.name, a.ID, req.ID)
			}
		}
	}
	// The child read the accepted lines, byte for byte, and nothing
	// else: no initialize before them, no refused line.
	if len(reached) == 0 {
		t.Fatal("no request reached the child")
	}
	waitFile(t, childLog, reached[len(reached)-1])
	data, _ := os.ReadFile(childLog)
	if want := strings.Join(reached, "\n") + "\n"; string(data) != want {
		t.Errorf("the child read\n%s\nwant\n%s", data, want)
	}
	l.stop(t)
	// One session for the principal's stateless requests beside the
	// listener's, its peer the endpoint; intents for the accepted calls
	// only.
	served := strings.TrimSuffix(strings.TrimPrefix(l.url, "http://"), "/mcp")
	starts, intents := 0, 0
	for _, r := range f.records(t) {
		switch b := r.Body.(type) {
		case *record.SessionStart:
			starts++
			if b.Transport != record.TransportHTTP || b.Peer != served {
				t.Errorf("session_start %+v; want http, peer %s", b, served)
			}
		case *record.Intent:
			intents++
		}
	}
	if starts != 2 || intents != 3 {
		t.Errorf("%d session_starts, %d intents; want 2 (the listener's, the stateless session's) and 3 (the accepted tools/calls)", starts, intents)
	}
}

// v2Server returns node and the interop's server of the official
// TypeScript SDK v2 (stdio, both revisions; tools echo and delete_all).
func v2Server(t *testing.T) (node, server string) {
	t.Helper()
	server, err := filepath.Abs("../../interop/testdata/v2/server.mjs")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("../../interop/node_modules/@modelcontextprotocol/server/package.json"); err != nil {
		t.Fatalf("the TypeScript SDK v2 is not installed (%v): run `npm ci` in interop/ first", err)
	}
	if node, err = exec.LookPath("node"); err != nil {
		t.Fatalf("node is not on PATH (%v): these tests need Node.js 20 or later", err)
	}
	return node, server
}

// TestListen2026SharedChild: clients of one principal share one child
// (a stateless session), and two that use the same id at once never
// receive each other's answer: each gets its own, from the official
// TypeScript SDK v2 server, whose answers name the text sent.
func TestListen2026SharedChild(t *testing.T) {
	t.Parallel()
	node, server := v2Server(t)
	f := newFixture(t)
	l := f.listen(t, nil, node, server)
	const clients, rounds = 4, 5
	var wg sync.WaitGroup
	errs := make(chan error, clients*rounds)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				text := fmt.Sprintf("client %d round %d", c, i)
				body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + text + `"},` + httpMeta + `}}`
				resp, err := l.do("POST", "", body, modern("tools/call", "echo")...)
				if err != nil {
					errs <- err
					return
				}
				p, err := readPayloads(resp)
				if err != nil || resp.StatusCode != 200 || len(p) != 1 || !strings.Contains(p[0], `"text":"`+text+`"`) || !strings.HasSuffix(p[0], `"id":1}`) {
					errs <- fmt.Errorf("%s: %d %q, %v; want its own answer, id 1", text, resp.StatusCode, p, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	l.stop(t)
	starts, intents, outcomes := 0, 0, 0
	for _, r := range f.records(t) {
		switch r.Body.(type) {
		case *record.SessionStart:
			starts++
		case *record.Intent:
			intents++
		case *record.Outcome:
			outcomes++
		}
	}
	if starts != 2 || intents != clients*rounds || outcomes != clients*rounds {
		t.Errorf("%d session_starts, %d intents, %d outcomes; want 2 (one child for the principal), %d, %d", starts, intents, outcomes, clients*rounds, clients*rounds)
	}
	if out, err := exec.Command(aegisBin, "verify", "--key", f.pub, f.audit).CombinedOutput(); err != nil {
		t.Errorf("aegis verify: %v\n%s", err, out)
	}
}

// TestListen2026Cancel: a 2026-07-28 client that closes its response
// stream before the answer cancels its request: the child reads a
// notifications/cancelled naming the request's id token as the client
// wrote it; the id is free again for the next request.
func TestListen2026Cancel(t *testing.T) {
	f := newFixture(t)
	childLog := filepath.Join(f.dir, "child.log")
	// A child that reads and never answers.
	l := f.listen(t, nil, "sh", "-c", `exec cat >> "$0"`, childLog)
	for _, id := range []string{`7.0`, `"x\u0041"`, `7`} {
		body := `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"slow","arguments":{},` + httpMeta + `}}`
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			req, _ := http.NewRequestWithContext(ctx, "POST", l.url, strings.NewReader(body))
			for _, h := range append(modern("tools/call", "slow"), "Accept: application/json, text/event-stream", "Content-Type: application/json", "Authorization: Bearer "+l.token) {
				k, v, _ := strings.Cut(h, ": ")
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				_, err = readPayloads(resp)
			}
			done <- err
		}()
		waitFile(t, childLog, body)
		cancel()
		<-done
		want := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + id + `,"reason":"the client closed its response stream"}}`
		waitFile(t, childLog, body+"\n"+want+"\n")
	}
	// Each call is recorded cancelled, with no response.
	l.stop(t)
	var statuses []string
	for _, r := range f.records(t) {
		if o, ok := r.Body.(*record.Outcome); ok {
			statuses = append(statuses, fmt.Sprintf("%s/%v", o.Status, o.HasResponse))
		}
	}
	if got, want := strings.Join(statuses, " "), "cancelled/false cancelled/false cancelled/false"; got != want {
		t.Errorf("outcomes %s; want %s", got, want)
	}
}

// paramChild is a shell server that lists one tool, sql, declaring three
// arguments mirrored in Mcp-Param-* headers, and answers any other
// request with an empty result; it appends each line it reads to $0.
const paramChild = `while IFS= read -r line; do
printf '%s\n' "$line" >> "$0"
id=$(printf '%s' "$line" | sed -n 's/^{"jsonrpc":"2.0","id":\([^,]*\),.*/\1/p')
[ -z "$id" ] && continue
case "$line" in
*'"method":"tools/list"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"sql","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"n":{"type":"integer","x-mcp-header":"N"},"where":{"type":"object","properties":{"zone":{"type":"string","x-mcp-header":"Zone"}}},"query":{"type":"string"}}}}]}}\n' "$id" ;;
*) printf '{"jsonrpc":"2.0","id":%s,"result":{"content":[]}}\n' "$id" ;;
esac
done`

// TestListen2026ParamHeaders: once the child's tools/list has declared
// arguments mirrored in headers (x-mcp-header), a tools/call must carry
// each such argument it has in its Mcp-Param-{Name} header, equal once
// decoded; one that does not is HeaderMismatch and never reaches the
// child.
func TestListen2026ParamHeaders(t *testing.T) {
	f := newFixture(t)
	childLog := filepath.Join(f.dir, "child.log")
	l := f.listen(t, nil, "sh", "-c", paramChild, childLog)
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + httpMeta + `}}`
	if resp := l.request(t, "POST", "", list, modern("tools/list", "")...); resp.StatusCode != 200 {
		t.Fatalf("tools/list: %d %q", resp.StatusCode, payloads(t, resp))
	} else {
		payloads(t, resp)
	}
	call := func(id int, args string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"sql","arguments":%s,%s}}`, id, args, httpMeta)
	}
	tests := []struct {
		name string
		args string
		hdr  []string
		want int
	}{
		{"every header", `{"region":"us-west1","n":42,"where":{"zone":"b"},"query":"select"}`, []string{"Mcp-Param-Region: us-west1", "Mcp-Param-N: 42", "Mcp-Param-Zone: b"}, 200},
		{"Base64 and a number written otherwise", `{"region":"us-west1","n":42}`, []string{"Mcp-Param-Region: =?base64?dXMtd2VzdDE=?=", "mcp-param-n: 42.0"}, 200},
		{"null and absent values need no header", `{"region":null,"query":"select"}`, nil, 200},
		{"no Mcp-Param-Region", `{"region":"us-west1"}`, nil, 400},
		{"Mcp-Param-Region differs", `{"region":"eu-west1"}`, []string{"Mcp-Param-Region: us-west1"}, 400},
		{"Mcp-Param-N differs", `{"n":42}`, []string{"Mcp-Param-N: 43"}, 400},
		{"nested Mcp-Param-Zone differs", `{"where":{"zone":"a"}}`, []string{"Mcp-Param-Zone: b"}, 400},
		{"bad Base64", `{"region":"us-west1"}`, []string{"Mcp-Param-Region: =?base64?dXMtd2VzdDE?="}, 400},
	}
	reached := []string{list}
	for i, tt := range tests {
		body := call(10+i, tt.args)
		resp := l.request(t, "POST", "", body, append(modern("tools/call", "sql"), tt.hdr...)...)
		p := payloads(t, resp)
		if resp.StatusCode != tt.want {
			t.Errorf("%s: status %d %q; want %d", tt.name, resp.StatusCode, p, tt.want)
			continue
		}
		if tt.want == 200 {
			reached = append(reached, body)
			continue
		}
		var a rpcAnswer
		if json.Unmarshal([]byte(p[0]), &a); a.Error == nil || a.Error.Code != -32020 {
			t.Errorf("%s: %q; want HeaderMismatch -32020", tt.name, p)
		}
	}
	waitFile(t, childLog, reached[len(reached)-1])
	data, _ := os.ReadFile(childLog)
	if want := strings.Join(reached, "\n") + "\n"; string(data) != want {
		t.Errorf("the child read\n%s\nwant\n%s", data, want)
	}
}

// sdkHTTPClient is the official TypeScript SDK v2 client over Streamable
// HTTP: argv[1] the URL, argv[2] the bearer token, argv[3] "auto" or the
// revision to pin. It lists the tools and calls echo, and prints both as
// one JSON object.
const sdkHTTPClient = `
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
const [url, token, rev] = process.argv.slice(1);
const mode = rev === 'auto' ? 'auto' : { pin: rev };
const client = new Client({ name: 'aegis-listen-2026', version: '1.0.0' }, { versionNegotiation: { mode } });
await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: 'Bearer ' + token } } }));
const out = { tools: (await client.listTools()).tools.map((t) => t.name) };
const r = await client.callTool({ name: 'echo', arguments: { text: 'through aegis over ' + rev } });
out.echo = r.content.map((c) => c.text).join('');
console.log(JSON.stringify(out));
await client.close();
`

// TestListen2026SDKClient: the official TypeScript SDK v2 client, pinned
// to 2026-07-28 (stateless: server/discover, per-request _meta, the
// headers) and negotiating, calls the SDK's own server through aegis wrap
// --listen and gets what the server answers; each call is recorded.
func TestListen2026SDKClient(t *testing.T) {
	t.Parallel()
	node, server := v2Server(t)
	modules, err := filepath.Abs("../../interop")
	if err != nil {
		t.Fatal(err)
	}
	for _, rev := range []string{"2026-07-28", "auto"} {
		t.Run(rev, func(t *testing.T) {
			f := newFixture(t)
			l := f.listen(t, nil, node, server)
			cmd := exec.Command(node, "--input-type=module", "-e", sdkHTTPClient, l.url, l.token, rev)
			cmd.Dir = modules // where the SDK's modules resolve
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("the SDK client: %v\n%s\naegis:\n%s", err, out, l.errText())
			}
			var got struct {
				Tools []string
				Echo  string
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("the SDK client printed %q: %v", out, err)
			}
			if want := "through aegis over " + rev; got.Echo != want || strings.Join(got.Tools, ",") != "echo,delete_all" {
				t.Errorf("the SDK client got %+v; want tools echo,delete_all and echo %q", got, want)
			}
			l.stop(t)
			calls := 0
			for _, r := range f.records(t) {
				if in, ok := r.Body.(*record.Intent); ok && string(in.Tool) == "echo" {
					calls++
				}
			}
			if calls != 1 {
				t.Errorf("%d intents of echo; want 1", calls)
			}
		})
	}
}

// listenChild is a shell server that answers a subscriptions/listen with
// two notifications of no subscription or another one, then the
// acknowledgment and a change notification naming the subscription (its
// id written as a number of the same value, 7 as 7.0); it appends each
// line it reads to $0.
const listenChild = `while IFS= read -r line; do
printf '%s\n' "$line" >> "$0"
id=$(printf '%s' "$line" | sed -n 's/^{"jsonrpc":"2.0","id":\([^,]*\),.*/\1/p')
case "$line" in
*'"method":"subscriptions/listen"'*)
printf '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"no subscription"}}\n'
printf '{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":99}}}\n'
printf '{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":%s.0},"notifications":{"toolsListChanged":true}}}\n' "$id"
printf '{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":%s.0}}}\n' "$id" ;;
esac
done`

// TestListen2026Subscription: a subscriptions/listen's stream carries
// the notifications that name it as their subscription (matched by value,
// as ids are), and nothing else; its client closing the stream ends the
// subscription: the child reads notifications/cancelled naming it.
func TestListen2026Subscription(t *testing.T) {
	f := newFixture(t)
	childLog := filepath.Join(f.dir, "child.log")
	l := f.listen(t, nil, "sh", "-c", listenChild, childLog)
	body := `{"jsonrpc":"2.0","id":7,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` + httpMeta + `}}`
	resp := l.request(t, "POST", "", body, modern("subscriptions/listen", "")...)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("subscriptions/listen: %d %s; want 200, an SSE stream", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	want := []string{
		`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":7.0},"notifications":{"toolsListChanged":true}}}`,
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":7.0}}}`,
	}
	sc := bufio.NewScanner(resp.Body)
	var got []string
	for len(got) < len(want) && sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && d != "" {
			got = append(got, d)
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the listen stream carried\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	resp.Body.Close()
	waitFile(t, childLog, body+"\n"+`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"the client closed its response stream"}}`+"\n")
}

// TestListen2026SessionBounds: a principal's stateless session counts
// against --max-sessions as a session does (the initialize beyond it is
// 503), and ends when idle for --idle-timeout: its child's session_end is
// written, and the next stateless request starts another child.
func TestListen2026SessionBounds(t *testing.T) {
	f := newFixture(t)
	childLog := filepath.Join(f.dir, "child.log")
	l := f.listen(t, []string{"--max-sessions", "1", "--idle-timeout", "1s"}, append([]string{"env", "AEGIS_TEST_LOG=" + childLog}, child("echo")...)...)
	list := func(id int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list","params":{%s}}`, id, httpMeta)
	}
	// Last-Event-ID means nothing to the revision: it is not read.
	resp := l.request(t, "POST", "", list(1), append(modern("tools/list", ""), "Last-Event-ID: 1-1")...)
	if p := payloads(t, resp); resp.StatusCode != 200 || len(p) != 1 || p[0] != `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}` {
		t.Fatalf("tools/list: %d %q; want the child's answer", resp.StatusCode, p)
	}
	resp = l.request(t, "POST", "", initializeLine)
	if p := payloads(t, resp); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("initialize beside the stateless session at --max-sessions 1: %d %q; want 503", resp.StatusCode, p)
	}
	// Idle: the stateless session ends (its session_end in the log).
	deadline := time.Now().Add(20 * time.Second)
	for !bytes.Contains(readAudit(f.audit), []byte(`"session_end"`)) {
		if time.Now().After(deadline) {
			t.Fatalf("no session_end 20 s after the stateless session went idle for 1 s:\n%s", readAudit(f.audit))
		}
		time.Sleep(20 * time.Millisecond)
	}
	sid := l.initialize(t) // its slot is free
	l.request(t, "DELETE", sid, "").Body.Close()
	// The next stateless request starts another child, once the legacy
	// session's child has exited and given its slot back.
	for {
		resp = l.request(t, "POST", "", list(2), modern("tools/list", "")...)
		p := payloads(t, resp)
		if resp.StatusCode == 200 {
			break
		}
		if resp.StatusCode != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatalf("tools/list after idleness: %d %q; want 200", resp.StatusCode, p)
		}
		time.Sleep(20 * time.Millisecond)
	}
	l.stop(t)
	starts := 0
	for _, r := range f.records(t) {
		if _, ok := r.Body.(*record.SessionStart); ok {
			starts++
		}
	}
	if starts != 4 {
		t.Errorf("%d session_starts; want 4 (the listener, a stateless session, a session, another stateless session)", starts)
	}
}
