// Command capture writes the seed corpora of aegis's fuzz targets: real
// sessions with the official MCP reference servers, recorded byte for byte
// in both directions, and hand-made nasty cases.
//
//	cd interop && npm ci && cd ..
//	go run ./fuzz/capture            # from the repository root
//
// It drives @modelcontextprotocol/server-everything and server-filesystem
// (the versions pinned in interop/package-lock.json) over stdio with raw
// JSON-RPC lines it writes itself, so that the client side carries exactly
// the escapes, ids and shapes chosen below; it answers the servers' own
// requests (roots/list) as a client would. Everything written to a server
// and everything read from it is kept as sent, and cut into seeds:
//
//	internal/relay/testdata/fuzz/FuzzRelay/real_*     client and server streams, a few exchanges each
//	internal/relay/testdata/fuzz/FuzzRelay/nasty_*    hand-made client streams and answers
//	frame/testdata/fuzz/FuzzClassify/real_*  one line of each kind seen
//	frame/testdata/fuzz/FuzzClassify/nasty_* hand-made lines
//	frame/testdata/fuzz/FuzzReader/real_*    a server stream with read sizes
//
// Files it does not name are left alone; the ones it names are rewritten.
// Server output varies a little between runs (times, temporary names), so
// a rerun changes some bytes; commit the result only when the servers or
// the cases changed. get-env is never called: its answer would put this
// machine's environment into the repository.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"time"
)

const (
	// maxSeed bounds each stream of a FuzzRelay seed, below the target's
	// own bound (64 KiB), so that no seed is cut.
	maxSeed = 60 << 10
	// packTo is the size up to which exchanges are packed into one seed.
	packTo = 12 << 10
	// maxLineSeed bounds the lines kept as FuzzClassify seeds.
	maxLineSeed = 8 << 10
	// fsRoot is the directory server-filesystem serves; fixed, so that the
	// seeds do not change with a temporary name.
	fsRoot = "/tmp/aegis-capture-fs"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("capture: ")
	root := flag.String("root", ".", "the repository root")
	flag.Parse()
	nodeModules := filepath.Join(*root, "interop", "node_modules", "@modelcontextprotocol")
	everything := filepath.Join(nodeModules, "server-everything", "dist", "index.js")
	filesystem := filepath.Join(nodeModules, "server-filesystem", "dist", "index.js")
	for _, p := range []string{everything, filesystem} {
		if _, err := os.Stat(p); err != nil {
			log.Fatalf("%v\nrun `npm ci` in interop/ first", err)
		}
	}
	out := &corpus{root: *root}

	ev, err := start("everything", "node", everything, "stdio")
	if err != nil {
		log.Fatal(err)
	}
	driveEverything(ev)
	ev.close()

	if err := makeFSRoot(); err != nil {
		log.Fatal(err)
	}
	fs, err := start("filesystem", "node", filesystem, fsRoot)
	if err != nil {
		log.Fatal(err)
	}
	driveFilesystem(fs)
	fs.close()

	for _, s := range []*server{ev, fs} {
		out.relaySeeds(s)
		out.lineSeeds(s)
		out.readerSeed(s)
	}
	out.nasty()
	log.Printf("wrote %d files, %d bytes", out.files, out.bytes)
}

// exchange is what crossed the wire while one step of a script ran.
type exchange struct {
	name     string
	up, down []byte
}

// server is one running MCP server and what crossed its stdio.
type server struct {
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan []byte
	done  chan struct{}
	ex    []*exchange
	cur   *exchange
	ids   map[string]bool // server→client request ids already answered
}

func start(name string, argv ...string) (*server, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = io.Discard
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	s := &server{name: name, cmd: cmd, stdin: stdin, lines: make(chan []byte, 1024), done: make(chan struct{}), ids: map[string]bool{}}
	go func() {
		defer close(s.done)
		br := bufio.NewReaderSize(stdout, 1<<20)
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				s.lines <- line
			}
			if err != nil {
				return
			}
		}
	}()
	return s, nil
}

// step starts a new exchange.
func (s *server) step(name string) {
	s.cur = &exchange{name: name}
	s.ex = append(s.ex, s.cur)
}

// send writes raw lines (each gets its '\n') to the server.
func (s *server) send(lines ...string) {
	for _, l := range lines {
		b := []byte(l + "\n")
		if _, err := s.stdin.Write(b); err != nil {
			log.Fatalf("%s: write: %v", s.name, err)
		}
		s.cur.up = append(s.cur.up, b...)
	}
}

// msg is what the script reads from a server line.
type msg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

func sameID(a json.RawMessage, b string) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal([]byte(b), &y) == nil && reflect.DeepEqual(x, y)
}

// await reads server lines into the current exchange until the responses
// to every id in ids have come (matched by value, as JSON.parse reads
// them), answering the server's own requests on the way. It returns the
// results by id. On timeout it gives up on the rest.
func (s *server) await(timeout time.Duration, ids ...string) map[string]json.RawMessage {
	got := map[string]json.RawMessage{}
	deadline := time.After(timeout)
	for len(got) < len(ids) {
		select {
		case line := <-s.lines:
			s.cur.down = append(s.cur.down, line...)
			var m msg
			if json.Unmarshal(line, &m) != nil {
				continue
			}
			if m.Method != "" && m.ID != nil && !s.ids[string(m.ID)] {
				s.ids[string(m.ID)] = true
				if m.Method == "roots/list" {
					s.send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"roots":[{"uri":"file:///aegis-capture-root","name":"capture root ✓"}]}}`)
				} else {
					s.send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"error":{"code":-32601,"message":"Method not found"}}`)
				}
				continue
			}
			for _, id := range ids {
				if m.Method == "" && m.ID != nil && sameID(m.ID, id) {
					got[id] = m.Result
				}
			}
		case <-deadline:
			log.Printf("%s: %s: no answer to %d of ids %v within %v", s.name, s.cur.name, len(ids)-len(got), ids, timeout)
			return got
		}
	}
	return got
}

// drain keeps what the server says for d without waiting for anything.
func (s *server) drain(d time.Duration) { s.await(d) }

func (s *server) call(id, line string) json.RawMessage {
	s.send(line)
	return s.await(15*time.Second, id)[id]
}

func (s *server) close() {
	s.step("eof")
	s.stdin.Close()
	timer := time.AfterFunc(5*time.Second, func() { s.cmd.Process.Kill() })
	for line := range s.linesUntilDone() {
		s.cur.down = append(s.cur.down, line...)
	}
	s.cmd.Wait()
	timer.Stop()
}

func (s *server) linesUntilDone() <-chan []byte {
	out := make(chan []byte)
	go func() {
		defer close(out)
		for {
			select {
			case l := <-s.lines:
				out <- l
			case <-s.done:
				for {
					select {
					case l := <-s.lines:
						out <- l
					default:
						return
					}
				}
			}
		}
	}()
	return out
}

const initialize = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{"listChanged":true}},"clientInfo":{"name":"aegis-capture","version":"1.0.0"}}}`

func driveEverything(s *server) {
	s.step("initialize")
	s.call("0", initialize)
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	s.drain(500 * time.Millisecond)

	s.step("lists")
	s.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, `{"jsonrpc":"2.0","id":2,"method":"prompts/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"resources/list"}`, `{"jsonrpc":"2.0","id":4,"method":"resources/templates/list"}`,
		`{"jsonrpc":"2.0","id":"ping-ü","method":"ping"}`)
	res := s.await(15*time.Second, "1", "2", "3", "4", `"ping-ü"`)
	var resources struct {
		Resources []struct{ URI string } `json:"resources"`
	}
	json.Unmarshal(res["3"], &resources)

	s.step("resources/read")
	for i, r := range resources.Resources {
		if i == 2 {
			break
		}
		uri, _ := json.Marshal(r.URI)
		id := fmt.Sprint(10 + i)
		s.call(id, `{"jsonrpc":"2.0","id":`+id+`,"method":"resources/read","params":{"uri":`+string(uri)+`}}`)
	}

	s.step("echo unicode and escapes")
	// Escapes the client chose: \/ in the method, \u in a key, U+2028,
	// an astral character as a surrogate pair, a raw one, quotes, a tab.
	s.call("20", `{"jsonrpc":"2.0","id":20,"method":"tools\/call","params":{"name":"echo","arguments":{"message":"h\u00e9llo w\u00f6rld \u2028 \ud83d\ude00 😀 \"quoted\" back\\slash \/ tab\t nul\u0000 end"}}}`)
	s.call("21", `{"jsonrpc":"2.0","id":21,"method":"tools/call","params":{"n\u0061me":"echo","arguments":{"message":"ünïcödé — ✓ 日本語 עברית"}}}`)

	s.step("sums and a bad argument")
	s.call("22", `{"jsonrpc":"2.0","id":22,"method":"tools/call","params":{"name":"get-sum","arguments":{"a":1e3,"b":-0.5}}}`)
	s.call("23", `{"jsonrpc":"2.0","id":23.0,"method":"tools/call","params":{"name":"get-sum","arguments":{"a":"one","b":2}}}`)

	s.step("images and resources")
	s.call("24", `{"jsonrpc":"2.0","id":24,"method":"tools/call","params":{"name":"get-tiny-image","arguments":{}}}`)
	s.call("25", `{"jsonrpc":"2.0","id":25,"method":"tools/call","params":{"name":"get-annotated-message","arguments":{"messageType":"error","includeImage":true}}}`)
	s.call("26", `{"jsonrpc":"2.0","id":26,"method":"tools/call","params":{"name":"get-resource-links","arguments":{"count":4}}}`)
	s.call("27", `{"jsonrpc":"2.0","id":27,"method":"tools/call","params":{"name":"get-resource-reference","arguments":{"resourceType":"Blob","resourceId":2}}}`)
	s.call("28", `{"jsonrpc":"2.0","id":28,"method":"tools/call","params":{"name":"get-structured-content","arguments":{"location":"Chicago"}}}`)
	s.call("29", `{"jsonrpc":"2.0","id":29,"method":"tools/call","params":{"name":"gzip-file-as-resource","arguments":{"name":"hello.txt.gz","data":"data:text/plain;base64,aGVsbG8sIHdvcmxkIQo=","outputType":"resource"}}}`)

	s.step("roots and progress")
	s.call(`"roots"`, `{"jsonrpc":"2.0","id":"roots","method":"tools/call","params":{"name":"get-roots-list","arguments":{}}}`)
	s.send(`{"jsonrpc":"2.0","id":30,"method":"tools/call","params":{"name":"trigger-long-running-operation","arguments":{"duration":1,"steps":3},"_meta":{"progressToken":"tok-1"}}}`)
	s.await(15*time.Second, "30")

	s.step("ambiguous frames a real server reads")
	// JSON.parse keeps the last duplicate: the server runs echo.
	s.call("31", `{"jsonrpc":"2.0","id":31,"method":"tools/call","params":{"name":"get-sum","name":"echo","arguments":{"message":"duplicate name"}}}`)
	// A case-variant key the server ignores: it answers a ping.
	// (server-everything 2026.8.31 does not answer it at all.)
	s.send(`{"jsonrpc":"2.0","id":32,"method":"ping","Method":"tools/call","params":{"name":"echo"}}`)
	s.drain(time.Second)
	s.call("33", `{"jsonrpc":"2.0","id":33,"method":"tools/call","params":{"name":"no-such-tool","arguments":{}}}`)

	s.step("batch")
	// The TypeScript transport drops batches: no answer comes.
	s.send(`[{"jsonrpc":"2.0","id":40,"method":"tools/call","params":{"name":"echo","arguments":{"message":"in a batch"}}},{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"name":"get-sum","arguments":{"a":1,"b":2}}},{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"x","progress":1}}]`)
	s.drain(time.Second)

	s.step("large result")
	big := strings.Repeat("0123456789abcdef ", 1200) // 20 KB
	s.call("42", `{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"echo","arguments":{"message":"`+big+`"}}}`)

	s.step("logging on and off")
	s.call("43", `{"jsonrpc":"2.0","id":43,"method":"logging/setLevel","params":{"level":"debug"}}`)
	s.call("44", `{"jsonrpc":"2.0","id":44,"method":"tools/call","params":{"name":"toggle-simulated-logging","arguments":{}}}`)
	s.drain(1500 * time.Millisecond)
	s.call("45", `{"jsonrpc":"2.0","id":45,"method":"tools/call","params":{"name":"toggle-simulated-logging","arguments":{}}}`)

	s.step("out of order")
	s.send(`{"jsonrpc":"2.0","id":50,"method":"tools/call","params":{"name":"trigger-long-running-operation","arguments":{"duration":1,"steps":2}}}`)
	var ids []string
	for i := 51; i < 56; i++ {
		id := fmt.Sprint(i)
		ids = append(ids, id)
		s.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"get-sum","arguments":{"a":` + id + `,"b":0.25}}}`)
	}
	s.await(15*time.Second, append(ids, "50")...)
}

func makeFSRoot() error {
	if err := os.RemoveAll(fsRoot); err != nil {
		return err
	}
	files := map[string]string{
		"notes.txt":                      "first line\nsecond line — with ünïcödé\n\ttabbed \"quoted\" \\ line\n",
		"ünïcødé 😀.md":                   "# Ünïcødé\n\nA file whose name is not ASCII.\n",
		"sub/dir/deep.json":              `{"key":"value","list":[1,2,3],"nested":{"a":null}}` + "\n",
		"sub/crlf.txt":                   "windows\r\nline endings\r\n",
		"pixel.png":                      "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\xcf\xc0\xf0\x1f\x00\x05\x00\x01\xff\x89\x99=\x1d\x00\x00\x00\x00IEND\xaeB`\x82",
		"big.txt":                        bigText(),
		"sub/dir/.hidden":                "hidden\n",
		"sub/dir/weird name [1] {x}.txt": "brackets\n",
	}
	for name, data := range files {
		p := filepath.Join(fsRoot, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			return err
		}
		// Fixed times, so that get_file_info answers the same each run.
		t := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		os.Chtimes(p, t, t)
	}
	return nil
}

func bigText() string {
	var b strings.Builder
	for i := range 450 {
		fmt.Fprintf(&b, "line %04d: the quick brown fox jumps over the lazy dog ✓\n", i)
	}
	return b.String() // ~26 KB
}

func driveFilesystem(s *server) {
	p := func(name string) string {
		b, _ := json.Marshal(filepath.Join(fsRoot, name))
		return string(b)
	}
	s.step("initialize")
	s.call("0", initialize)
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	s.drain(500 * time.Millisecond)

	s.step("lists")
	s.call("1", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	s.call("2", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_allowed_directories","arguments":{}}}`)
	s.call("3", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_directory","arguments":{"path":`+p("")+`}}}`)
	s.call("4", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"list_directory_with_sizes","arguments":{"path":`+p("")+`,"sortBy":"size"}}}`)
	s.call("5", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"directory_tree","arguments":{"path":`+p("")+`}}}`)

	s.step("reads")
	s.call("6", `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"read_text_file","arguments":{"path":`+p("notes.txt")+`}}}`)
	s.call("7", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read_text_file","arguments":{"path":`+p("ünïcødé 😀.md")+`}}}`)
	s.call("8", `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"read_text_file","arguments":{"path":`+p("big.txt")+`,"head":5}}}`)
	s.call("9", `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"read_multiple_files","arguments":{"paths":[`+p("sub/dir/deep.json")+`,`+p("sub/crlf.txt")+`,`+p("missing.txt")+`]}}}`)
	s.call("10", `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"read_media_file","arguments":{"path":`+p("pixel.png")+`}}}`)
	s.call("11", `{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"get_file_info","arguments":{"path":`+p("sub/dir/deep.json")+`}}}`)
	s.call("12", `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"search_files","arguments":{"path":`+p("")+`,"pattern":"**/*.txt"}}}`)

	s.step("large result")
	s.call("13", `{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"read_text_file","arguments":{"path":`+p("big.txt")+`}}}`)

	s.step("writes")
	s.call("14", `{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"write_file","arguments":{"path":`+p("new ✓.txt")+`,"content":"written\nby \"capture\"\u2028\n"}}}`)
	s.call("15", `{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":"edit_file","arguments":{"path":`+p("notes.txt")+`,"edits":[{"oldText":"second line","newText":"2nd line"}],"dryRun":true}}}`)
	s.call("16", `{"jsonrpc":"2.0","id":16,"method":"tools/call","params":{"name":"create_directory","arguments":{"path":`+p("made/here")+`}}}`)
	s.call("17", `{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"move_file","arguments":{"source":`+p("new ✓.txt")+`,"destination":`+p("made/here/moved.txt")+`}}}`)

	s.step("refusals")
	s.call("18", `{"jsonrpc":"2.0","id":18,"method":"tools/call","params":{"name":"read_text_file","arguments":{"path":"/etc/passwd"}}}`)
	s.call("19", `{"jsonrpc":"2.0","id":19,"method":"tools/call","params":{"name":"read_text_file","arguments":{"path":`+p("../../etc/hostname")+`}}}`)
	s.call("20", `{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"delete_file","arguments":{"path":`+p("notes.txt")+`}}}`)
	s.call("21", `{"jsonrpc":"2.0","id":21,"method":"no/such/method"}`)
}

// corpus writes seed files.
type corpus struct {
	root         string
	files, bytes int
}

func (c *corpus) write(dir, name string, vals ...any) {
	b := []byte("go test fuzz v1\n")
	for _, v := range vals {
		switch v := v.(type) {
		case []byte:
			b = fmt.Appendf(b, "[]byte(%q)\n", v)
		case uint16:
			b = fmt.Appendf(b, "uint16(%d)\n", v)
		case byte:
			b = fmt.Appendf(b, "byte(%q)\n", v)
		default:
			log.Fatalf("corpus value of type %T", v)
		}
	}
	d := filepath.Join(c.root, dir)
	if err := os.MkdirAll(d, 0o755); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, name), b, 0o644); err != nil {
		log.Fatal(err)
	}
	c.files++
	c.bytes += len(b)
}

// splitPatterns are the write sizes of the FuzzRelay seeds (see the
// target's splitSize: a byte b < 0xf0 is b+1 bytes, 0xf0.. is 4 KiB..).
var splitPatterns = [][]byte{
	{0xff},            // 64 KiB writes: whole runs of lines
	{0, 6, 0xf0, 200}, // 1, 7 bytes, 4 KiB, 201 bytes, …
	{37, 2, 0xf3, 0, 127},
}

// relaySeeds packs the exchanges into FuzzRelay seeds of up to packTo
// bytes a stream; an exchange over maxSeed is cut at a line end.
func (c *corpus) relaySeeds(s *server) {
	var up, down []byte
	n := 0
	flush := func() {
		if len(up)+len(down) == 0 {
			return
		}
		c.write("internal/relay/testdata/fuzz/FuzzRelay", fmt.Sprintf("real_%s_%02d", s.name, n),
			cutLines(up, maxSeed), cutLines(down, maxSeed), splitPatterns[n%len(splitPatterns)], uint16(0), byte(0))
		n++
		up, down = nil, nil
	}
	for _, e := range s.ex {
		if len(up)+len(e.up) > packTo || len(down)+len(e.down) > packTo {
			flush()
		}
		up, down = append(up, e.up...), append(down, e.down...)
	}
	flush()
}

// cutLines returns b cut to at most max bytes at a line end.
func cutLines(b []byte, max int) []byte {
	if len(b) <= max {
		return b
	}
	return b[:bytes.LastIndexByte(b[:max], '\n')+1]
}

// lineSeeds keeps one line of each kind the session carried: requests by
// method and tool, responses, notifications, per direction.
func (c *corpus) lineSeeds(s *server) {
	seen := map[string]bool{}
	for _, e := range s.ex {
		for dir, stream := range map[string][]byte{"up": e.up, "down": e.down} {
			for _, line := range bytes.SplitAfter(stream, []byte("\n")) {
				if len(line) == 0 || len(line) > maxLineSeed {
					continue
				}
				k := dir + " " + kindOf(line)
				if seen[k] {
					continue
				}
				seen[k] = true
				c.write("frame/testdata/fuzz/FuzzClassify", fmt.Sprintf("real_%s_%02d", s.name, len(seen)), line)
			}
		}
	}
}

func kindOf(line []byte) string {
	var m struct {
		msg
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	if line[0] == '[' {
		return "batch"
	}
	if json.Unmarshal(line, &m) != nil {
		return "not json"
	}
	switch {
	case m.Method != "" && m.ID == nil:
		return "notification " + m.Method
	case m.Method == "tools/call":
		return "call " + m.Params.Name
	case m.Method != "":
		return "request " + m.Method
	case m.Error != nil:
		return "error"
	}
	var r struct {
		Result struct {
			IsError bool `json:"isError"`
			Content []struct {
				Type string `json:"type"`
			} `json:"content"`
		} `json:"result"`
	}
	json.Unmarshal(line, &r)
	k := fmt.Sprintf("result isError=%v", r.Result.IsError)
	for _, c := range r.Result.Content {
		k += " " + c.Type
	}
	return k
}

// readerSeed is the server stream of the first exchanges, read in small
// pieces with a small buffer.
func (c *corpus) readerSeed(s *server) {
	var down []byte
	for _, e := range s.ex {
		down = append(down, e.down...)
		if len(down) > 6<<10 {
			break
		}
	}
	c.write("frame/testdata/fuzz/FuzzReader", "real_"+s.name, cutLines(down, 8<<10), []byte{5, 0, 200, 17, 63}, uint16(64), uint16(511))
}

// nasty writes the hand-made seeds.
func (c *corpus) nasty() {
	const (
		rel = "internal/relay/testdata/fuzz/FuzzRelay"
		cls = "frame/testdata/fuzz/FuzzClassify"
	)
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	lines := map[string]string{
		"dup_name":          `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","name":"delete_file"}}`,
		"dup_method":        `{"jsonrpc":"2.0","id":2,"method":"tools/call","method":"ping","params":{"name":"x"}}`,
		"escaped_method":    `{"jsonrpc":"2.0","id":3,"\u006d\u0065thod":"\u0074ools\u002fcall","params":{"\u006eame":"rm\u0020-rf"}}`,
		"deep_arguments":    `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"x","arguments":` + deep(4990) + `}}`,
		"too_deep":          `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"x","arguments":` + deep(10001) + `}}`,
		"huge_ids":          `[{"id":1e400,"method":"tools/call","params":{"name":"a"}},{"id":123456789012345678901234567890123456789,"method":"tools/call","params":{"name":"b"}},{"id":-0.0e-999999999999,"method":"tools/call","params":{"name":"c"}}]`,
		"bom":               "\xef\xbb\xbf" + `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"x"}}`,
		"raw_nul":           "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"x\x00y\"}}",
		"escaped_nul_name":  `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"read_file\u0000delete_file"}}`,
		"invalid_utf8":      "{\"jsonrpc\":\"2.0\",\"id\":\"\xff\xfe\",\"method\":\"tools/call\",\"params\":{\"name\":\"caf\xe9\"}}",
		"case_variants":     `{"jsonrpc":"2.0","ID":9,"Method":"tools/call","paramſ":{"NAME":"x"},"params":{"name":"y"}}`,
		"wrong_types":       `[{"id":{"a":1},"method":"tools/call","params":{"name":"a"}},{"id":true,"method":"tools/call"},{"id":10,"method":"tools/call","params":[]},{"id":11,"method":"tools/call","params":{"name":5}},{"id":12,"method":["tools/call"]}]`,
		"batch_overflow":    `[{"id":13,"method":"tools/call","params":{"name":"first"}}` + strings.Repeat(",0", 4096) + `]`,
		"two_values":        `{"id":14,"method":"tools/call","params":{"name":"a"}}{"id":15,"method":"tools/call","params":{"name":"b"}}`,
		"trailing_garbage":  `{"id":16,"method":"tools/call","params":{"name":"a"}} x`,
		"surrogates":        `{"id":"\ud800","method":"tools/call","params":{"name":"\udfff\ud83d\ude00"}}`,
		"v2_fold":           `{"i_d":17,"me-thod":"tools/call","P_A_R_A_M_S":{"n-a-m-e":"x"}}`,
		"notification_call": `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"fire_and_forget"}}`,
		"null_id_call":      `{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"x"}}`,
		"numbers":           `[-0,1E+2,1e-7,0.0000000000000000000001,123456789012345678901234567890e-30,1.7976931348623157e309]`,
	}
	for name, l := range lines {
		c.write(cls, "nasty_"+name, []byte(l))
	}

	// Client streams with the answers a child might give; each a property
	// the relay must keep.
	type stream struct {
		up, down   string
		split      []byte
		max        uint16
		maxPending byte
	}
	var all []string
	for _, k := range []string{"dup_name", "dup_method", "escaped_method", "deep_arguments", "huge_ids", "bom", "raw_nul",
		"escaped_nul_name", "invalid_utf8", "case_variants", "wrong_types", "two_values", "trailing_garbage", "surrogates",
		"v2_fold", "notification_call", "null_id_call"} {
		all = append(all, lines[k])
	}
	streams := map[string]stream{
		"every_line": {up: strings.Join(all, "\n") + "\n",
			down:  `{"jsonrpc":"2.0","id":1,"result":{}}` + "\n" + `{"jsonrpc":"2.0","id":2.0,"result":{"isError":true}}` + "\n" + `{"jsonrpc":"2.0","id":1e400,"error":{"code":-32000,"message":"x"}}` + "\n",
			split: []byte{0, 1, 2, 3, 250}},
		"too_deep": {up: lines["too_deep"] + "\n" + `{"jsonrpc":"2.0","id":18,"method":"tools/call","params":{"name":"after"}}` + "\n",
			down: `{"jsonrpc":"2.0","id":18,"result":{}}` + "\n", split: []byte{0xff}},
		"batch_overflow": {up: lines["batch_overflow"] + "\n", down: `{"jsonrpc":"2.0","id":13,"result":{}}` + "\n", split: []byte{100}},
		"split_object": {up: "{\"jsonrpc\":\"2.0\",\"id\":19,\n\"method\":\"tools/call\",\n\"params\":{\"name\":\"x\"}}\n\n \t\r\n\r\n",
			down: "{\"id\":19,\"result\":{}}\r\n", split: []byte{2}},
		"no_final_newline": {up: `{"id":20,"method":"tools/call","params":{"name":"x"}}` + "\n" + `{"id":21,"method":"tools/call","params":{"name":"last"}}`,
			down: `{"id":21,"result":{}}` + "\n" + `{"id":20,"result":{}}`, split: []byte{9}},
		"crlf": {up: "{\"id\":22,\"method\":\"tools/call\",\"params\":{\"name\":\"x\"}}\r\n{\"id\":23,\"method\":\"ping\"}\r\n",
			down: "{\"id\":23,\"result\":{}}\r\n{\"id\":22,\"result\":{\"isError\":true}}\r\n", split: []byte{0}},
		"duplicate_ids_in_flight": {up: `{"id":1,"method":"tools/call","params":{"name":"a"}}` + "\n" + `{"id":1.0,"method":"tools/call","params":{"name":"b"}}` + "\n" + `{"id":"1","method":"tools/call","params":{"name":"c"}}` + "\n",
			down:  `{"id":10e-1,"result":{}}` + "\n" + `{"id":"1","error":{"code":1,"message":"e"}}` + "\n" + `{"id":1,"result":{},"error":{}}` + "\n" + `[{"id":1,"result":{}},{"id":1,"result":{}}]` + "\n",
			split: []byte{30, 0xf0}},
		"pending_cap": {up: `[{"id":1,"method":"tools/call"},{"id":2,"method":"tools/call"},{"id":3,"method":"tools/call"}]` + "\n" + `{"id":4,"method":"tools/call"}` + "\n",
			down: `{"id":1,"result":{}}` + "\n" + `{"id":4,"result":{}}` + "\n", split: []byte{0xff}, maxPending: 2},
		"frame_too_large": {up: `{"id":1,"method":"tools/call","params":{"name":"a"}}` + "\n" + strings.Repeat("x", 200) + "\n" + `{"id":2,"method":"tools/call","params":{"name":"never"}}` + "\n",
			down: `{"id":1,"result":{}}` + "\n" + strings.Repeat("y", 300), split: []byte{50}, max: 120},
		"binary_junk": {up: "\x00\x01\x02\xff\xfe\n\x1b[31mred\x1b[0m\n" + "\xef\xbb\xbf\n" + "\"just a string\"\n" + "null\n" + "[]\n" + "{}\n",
			down: "\x00\n\xff\n", split: []byte{1, 0}},
		"server_requests": {up: `{"jsonrpc":"2.0","id":0,"result":{"roots":[]}}` + "\n" + `{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":"x"}}` + "\n",
			down:  `{"jsonrpc":"2.0","id":0,"method":"roots/list"}` + "\n" + `{"jsonrpc":"2.0","method":"notifications/progress","params":{}}` + "\n" + `{"result":{"content":[]},"jsonrpc":"2.0","id":0}` + "\n",
			split: []byte{3}},
	}
	for name, s := range streams {
		c.write(rel, "nasty_"+name, []byte(s.up), []byte(s.down), s.split, s.max, s.maxPending)
	}
}
