package interop

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// buildCollector builds the OpenTelemetry Collector of otelcol/ (a
// module of its own, outside go.work: the Collector's dependencies are
// not the product's), or returns the one at $AEGIS_OTELCOL, which
// .ci/run builds ahead, while the npm packages install.
func buildCollector(t *testing.T, dir string) string {
	t.Helper()
	if bin := os.Getenv("AEGIS_OTELCOL"); bin != "" {
		if fi, err := os.Stat(bin); err == nil && fi.Mode().IsRegular() {
			return bin
		}
		t.Logf("no collector at $AEGIS_OTELCOL (%s): building it", bin)
	}
	bin := filepath.Join(dir, "otelcol")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = "otelcol"
	cmd.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build otelcol: %v\n%s", err, out)
	}
	return bin
}

// freeOTelPort returns a loopback port free a moment ago.
func freeOTelPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startCollector runs the collector receiving OTLP/HTTP and OTLP/gRPC
// on loopback ports and writing what it receives to out, and returns
// the OTLP/HTTP endpoint once it accepts connections.
func startCollector(t *testing.T, bin, dir, out string) string {
	t.Helper()
	endpoint, _ := startCollectors(t, bin, dir, out)
	return endpoint
}

// startCollectors is startCollector returning both endpoints: OTLP/HTTP's
// and OTLP/gRPC's.
func startCollectors(t *testing.T, bin, dir, out string) (httpEndpoint, grpcEndpoint string) {
	t.Helper()
	port, grpcPort := freeOTelPort(t), freeOTelPort(t)
	for grpcPort == port {
		grpcPort = freeOTelPort(t)
	}
	cfg := fmt.Sprintf(`receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%d
      grpc:
        endpoint: 127.0.0.1:%d
exporters:
  file:
    path: %s
    flush_interval: 100ms
  file/metrics:
    path: %s
    flush_interval: 100ms
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [file]
    metrics:
      receivers: [otlp]
      exporters: [file/metrics]
`, port, grpcPort, out, metricsPath(out))
	cfgPath := filepath.Join(dir, "otelcol.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	cmd := exec.Command(bin, "--config", "file:"+cfgPath)
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for _, p := range []int{port, grpcPort} {
		addr := fmt.Sprintf("127.0.0.1:%d", p)
		for deadline := time.Now().Add(time.Minute); ; {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				c.Close()
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the collector does not listen on %s: %v\n%s", addr, err, stderr.String())
			}
			time.Sleep(50 * time.Millisecond) // polling a port being opened
		}
	}
	return fmt.Sprintf("http://127.0.0.1:%d", port), fmt.Sprintf("http://127.0.0.1:%d", grpcPort)
}

// metricsPath is where the collector writing spans to out writes the
// metrics it receives.
func metricsPath(out string) string { return strings.TrimSuffix(out, ".json") + ".metrics.json" }

// otlpPoint is the part of an OTLP JSON data point the test reads.
type otlpPoint struct {
	Count      string `json:"count"` // histograms
	AsInt      string `json:"asInt"` // sums
	Attributes []struct {
		Key   string `json:"key"`
		Value struct {
			String *string `json:"stringValue"`
		} `json:"value"`
	} `json:"attributes"`
}

func (p otlpPoint) attr(k string) string {
	for _, a := range p.Attributes {
		if a.Key == k && a.Value.String != nil {
			return *a.Value.String
		}
	}
	return ""
}

// readOTLPMetrics reads the data points of each metric the collector's
// file exporter wrote, from the last export that has the metric (the
// SDK's metrics are cumulative).
func readOTLPMetrics(t *testing.T, path string) map[string][]otlpPoint {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	got := map[string][]otlpPoint{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var req struct {
			ResourceMetrics []struct {
				ScopeMetrics []struct {
					Metrics []struct {
						Name      string                            `json:"name"`
						Histogram *struct{ DataPoints []otlpPoint } `json:"histogram"`
						Sum       *struct{ DataPoints []otlpPoint } `json:"sum"`
					} `json:"metrics"`
				} `json:"scopeMetrics"`
			} `json:"resourceMetrics"`
		}
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			continue // a line being written
		}
		for _, rm := range req.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					switch {
					case m.Histogram != nil:
						got[m.Name] = m.Histogram.DataPoints
					case m.Sum != nil:
						got[m.Name] = m.Sum.DataPoints
					}
				}
			}
		}
	}
	return got
}

// otlpSpan is the part of an OTLP JSON span the test reads.
type otlpSpan struct {
	Name         string `json:"name"`
	Kind         int    `json:"kind"`
	TraceID      string `json:"traceId"`
	TraceState   string `json:"traceState"`
	ParentSpanID string `json:"parentSpanId"`
	Attributes   []struct {
		Key   string `json:"key"`
		Value struct {
			String *string `json:"stringValue"`
			Int    *string `json:"intValue"`
		} `json:"value"`
	} `json:"attributes"`
	Status struct {
		Code int `json:"code"`
	} `json:"status"`
}

func (s otlpSpan) attr(k string) string {
	for _, a := range s.Attributes {
		if a.Key == k {
			if a.Value.String != nil {
				return *a.Value.String
			}
			if a.Value.Int != nil {
				return *a.Value.Int
			}
		}
	}
	return ""
}

// readOTLPSpans reads the spans the collector's file exporter wrote so far.
func readOTLPSpans(t *testing.T, path string) []otlpSpan {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var spans []otlpSpan
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var req struct {
			ResourceSpans []struct {
				ScopeSpans []struct {
					Spans []otlpSpan `json:"spans"`
				} `json:"scopeSpans"`
			} `json:"resourceSpans"`
		}
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			continue // a line being written
		}
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				spans = append(spans, ss.Spans...)
			}
		}
	}
	return spans
}

// runPolicyCalls runs policyCalls through aegis wrap --policy with env
// added, with the Go SDK client, and returns aegis's stderr and the bytes
// the client wrote to aegis and read from it, every one of them (the
// client reads until aegis exits).
func runPolicyCalls(t *testing.T, argv []string, env ...string) (stderr string, wire *clientWire) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), sessionTimeout)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "aegis-otel", Version: "1.0.0"}, nil)
	var errBuf syncBuffer
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = &errBuf
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	inR.Close()
	outW.Close()
	wire = &clientWire{in: inW, out: outR}
	defer outR.Close()
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: wireReader{wire}, Writer: wireWriter{wire}}, nil)
	if err != nil {
		inW.Close()
		cmd.Wait()
		t.Fatalf("connect: %v\n%s", err, errBuf.String())
	}
	for _, c := range policyCalls {
		start := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
		if (c.code == "") != (err == nil && !res.IsError) {
			t.Errorf("tools/call %s = %v, %+v; want code %q", c.tool, err, res, c.code)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("tools/call %s took %v", c.tool, d)
		}
	}
	cs.Close() // closes aegis's stdin
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-ctx.Done():
		cmd.Process.Kill()
		<-exited
		t.Fatalf("aegis did not exit once its stdin closed:\n%s", errBuf.String())
	}
	// aegis has exited: what the client has not read of its stdout is
	// read here, to the pipe's end (a read the client is in finishes
	// first: wireReader's lock).
	if _, err := io.Copy(io.Discard, wireReader{wire}); err != nil {
		t.Fatal(err)
	}
	return errBuf.String(), wire
}

// clientWire is the client's end of aegis's stdin and stdout, keeping
// every byte written and read.
type clientWire struct {
	in             *os.File
	out            *os.File
	sent, received syncBuffer
	mu             sync.Mutex // held across a read of out and its keeping
}

type wireWriter struct{ w *clientWire }

func (w wireWriter) Write(p []byte) (int, error) {
	n, err := w.w.in.Write(p)
	w.w.sent.Write(p[:n])
	return n, err
}

func (w wireWriter) Close() error { return w.w.in.Close() }

type wireReader struct{ w *clientWire }

func (r wireReader) Read(p []byte) (int, error) {
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	n, err := r.w.out.Read(p)
	r.w.received.Write(p[:n])
	return n, err
}

// Close leaves out open, so that nothing aegis relays to the client is
// lost to a closed pipe: runPolicyCalls reads it to its end.
func (r wireReader) Close() error { return nil }

// relayedBytes is what aegis relayed each way, as the client saw it: the
// bytes it wrote, and the bytes it read but for aegis's own refusals
// (error responses with data.aegis: the server sent none of them).
func (w *clientWire) relayedBytes(t *testing.T) (clientToServer, serverToClient int) {
	t.Helper()
	for _, line := range strings.SplitAfter(w.received.String(), "\n") {
		var m struct {
			Error *struct {
				Data struct {
					Aegis json.RawMessage `json:"aegis"`
				} `json:"data"`
			} `json:"error"`
		}
		if line == "" {
			continue
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("a line aegis wrote to the client: %v: %q", err, line)
		}
		if m.Error == nil || m.Error.Data.Aegis == nil {
			serverToClient += len(line)
		}
	}
	return len(w.sent.String()), serverToClient
}

// otelLogRow is the part of aegis log --json's call line the test reads.
type otelLogRow struct {
	Type       string  `json:"type"`
	Seq        int64   `json:"seq"`
	OutcomeSeq *int64  `json:"outcome_seq"`
	Tool       *string `json:"tool"`
	Status     string  `json:"status"`
	Verdict    string  `json:"verdict"`
	SID        string  `json:"sid"`
}

// TestOTelCollector: aegis wrap, with OTEL_EXPORTER_OTLP_ENDPOINT naming
// a real OpenTelemetry Collector, exports a span per call the Go SDK
// client made (allowed, denied, held for approval and refused, rate
// limited) with the MCP conventions' attributes, and each span joins
// aegis log --json's line of its call and the log's own lines: seq,
// outcome seq, status and the SHA-256 of the records' lines. The
// collector also receives the metrics: the duration histogram counts
// every call, and the refusals by code are those the client was
// answered with. With the collector stopped, the calls go as before and
// aegis says what was not exported.
func TestOTelCollector(t *testing.T) { testOTelCollector(t, "http/protobuf") }

// TestOTelCollectorGRPC is TestOTelCollector over OTLP/gRPC, chosen by
// OTEL_EXPORTER_OTLP_PROTOCOL=grpc: the SDK's gRPC exporters send the
// spans and the metrics to the collector's gRPC receiver.
func TestOTelCollectorGRPC(t *testing.T) { testOTelCollector(t, "grpc") }

func testOTelCollector(t *testing.T, protocol string) {
	dir := t.TempDir()
	col := buildCollector(t, dir)
	out := filepath.Join(dir, "spans.json")
	httpEndpoint, grpcEndpoint := startCollectors(t, col, dir, out)
	endpoint := httpEndpoint
	if protocol == "grpc" {
		endpoint = grpcEndpoint
	}
	proto := "OTEL_EXPORTER_OTLP_PROTOCOL=" + protocol
	argv, aegis, audit := wrapWithPolicy(t)
	stderr, wire := runPolicyCalls(t, argv, "OTEL_EXPORTER_OTLP_ENDPOINT="+endpoint, proto, "OTEL_SERVICE_NAME=aegis-interop")
	if strings.Contains(stderr, "telemetry:") {
		t.Errorf("aegis said, with the collector up:\n%s", stderr)
	}

	logOut, err := exec.Command(aegis, "log", "--json", audit).Output()
	if err != nil {
		t.Fatalf("aegis log --json: %v", err)
	}
	var rows []otelLogRow
	for _, line := range bytes.Split(bytes.TrimSpace(logOut), []byte("\n")) {
		var r otelLogRow
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("aegis log --json line %s: %v", line, err)
		}
		if r.Type == "call" {
			rows = append(rows, r)
		}
	}
	if len(rows) != len(policyCalls) {
		t.Fatalf("aegis log shows %d calls; want %d", len(rows), len(policyCalls))
	}
	auditBytes, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(auditBytes, []byte("\n")), []byte("\n"))
	digest := func(seq int64) string {
		d := sha256.Sum256(lines[seq])
		return "sha256:" + hex.EncodeToString(d[:])
	}

	// The file exporter flushes on its own interval: read until every
	// call's span is there.
	var spans map[string]otlpSpan
	for deadline := time.Now().Add(30 * time.Second); ; {
		spans = map[string]otlpSpan{}
		for _, s := range readOTLPSpans(t, out) {
			spans[s.attr("aegis.record.seq")] = s
		}
		if len(spans) >= len(rows) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond) // the exporter's flush interval
	}
	if len(spans) != len(rows) {
		t.Fatalf("the collector received %d spans; want %d, one per call", len(spans), len(rows))
	}
	for _, r := range rows {
		s, ok := spans[fmt.Sprint(r.Seq)]
		if !ok {
			t.Errorf("no span of the call at seq %d", r.Seq)
			continue
		}
		wantErr := map[string]string{"ok": "", "tool_error": "tool_error"}[r.Status]
		if r.Status != "ok" && r.Status != "tool_error" {
			wantErr = r.Status
		}
		checks := []struct{ key, got, want string }{
			{"name", s.Name, "tools/call " + *r.Tool},
			{"mcp.method.name", s.attr("mcp.method.name"), "tools/call"},
			{"gen_ai.tool.name", s.attr("gen_ai.tool.name"), *r.Tool},
			{"gen_ai.operation.name", s.attr("gen_ai.operation.name"), "execute_tool"},
			{"network.transport", s.attr("network.transport"), "pipe"},
			{"aegis.session", s.attr("aegis.session"), r.SID},
			{"aegis.status", s.attr("aegis.status"), r.Status},
			{"aegis.policy.verdict", s.attr("aegis.policy.verdict"), r.Verdict},
			{"error.type", s.attr("error.type"), wantErr},
			{"aegis.outcome.seq", s.attr("aegis.outcome.seq"), fmt.Sprint(*r.OutcomeSeq)},
			{"aegis.record.digest", s.attr("aegis.record.digest"), digest(r.Seq)},
			{"aegis.outcome.digest", s.attr("aegis.outcome.digest"), digest(*r.OutcomeSeq)},
			{"kind", fmt.Sprint(s.Kind), "2"}, // SPAN_KIND_SERVER
		}
		for _, c := range checks {
			if c.got != c.want {
				t.Errorf("span of seq %d: %s = %q; want %q", r.Seq, c.key, c.got, c.want)
			}
		}
		if s.attr("jsonrpc.request.id") == "" || s.attr("mcp.protocol.version") == "" {
			t.Errorf("span of seq %d lacks jsonrpc.request.id or mcp.protocol.version: %+v", r.Seq, s)
		}
		if (s.Status.Code == 2) != (wantErr != "") {
			t.Errorf("span of seq %d: status code %d; want error %v", r.Seq, s.Status.Code, wantErr != "")
		}
	}

	// The metrics: aegis's last reading at exit.
	wantRefusals := map[string]int{}
	for _, c := range policyCalls {
		if c.code != "" {
			wantRefusals[c.code]++
		}
	}
	var metrics map[string][]otlpPoint
	for deadline := time.Now().Add(30 * time.Second); ; {
		metrics = readOTLPMetrics(t, metricsPath(out))
		if len(metrics["mcp.server.operation.duration"]) > 0 && len(metrics["aegis.refusals"]) > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond) // the exporter's flush interval
	}
	durations, byTool := 0, map[string]int{}
	for _, p := range metrics["mcp.server.operation.duration"] {
		n, _ := strconv.Atoi(p.Count)
		durations += n
		byTool[p.attr("gen_ai.tool.name")] += n
		if p.attr("mcp.method.name") != "tools/call" {
			t.Errorf("duration point of %s: mcp.method.name %q", p.attr("gen_ai.tool.name"), p.attr("mcp.method.name"))
		}
	}
	if durations != len(policyCalls) {
		t.Errorf("the duration histogram counts %d calls (%v); want %d", durations, byTool, len(policyCalls))
	}
	refusals := map[string]int{}
	for _, p := range metrics["aegis.refusals"] {
		n, _ := strconv.Atoi(p.AsInt)
		refusals[p.attr("aegis.refusal.code")] += n
	}
	if fmt.Sprint(refusals) != fmt.Sprint(wantRefusals) {
		t.Errorf("refusals by code = %v; want %v", refusals, wantRefusals)
	}
	if len(metrics["aegis.journal.commit.lines"]) == 0 {
		t.Errorf("no commit group histogram: %v", metrics)
	}
	// wrap's default durability syncs every call's groups.
	if syncs := metrics["aegis.journal.fsync.duration"]; len(syncs) != 1 || syncs[0].Count == "" || syncs[0].Count == "0" {
		t.Errorf("fsync latency histogram: %+v; want one series counting the syncs", syncs)
	}
	// Bytes relayed: all the client sent, and all it read but aegis's own
	// refusals, each way.
	up, down := wire.relayedBytes(t)
	relayed := map[string]string{}
	for _, p := range metrics["aegis.relay.bytes"] {
		relayed[p.attr("aegis.relay.direction")] = p.AsInt
	}
	if want := map[string]string{"client_to_server": fmt.Sprint(up), "server_to_client": fmt.Sprint(down)}; fmt.Sprint(relayed) != fmt.Sprint(want) {
		t.Errorf("aegis.relay.bytes = %v; want %v", relayed, want)
	}

	// The collector gone: nothing listens at the endpoint.
	argv2, _, audit2 := wrapWithPolicy(t)
	dead := fmt.Sprintf("http://127.0.0.1:%d", freeOTelPort(t))
	stderr, _ = runPolicyCalls(t, argv2, "OTEL_EXPORTER_OTLP_ENDPOINT="+dead, proto)
	if !strings.Contains(stderr, "telemetry:") || !strings.Contains(stderr, "not exported") {
		t.Errorf("aegis said nothing of the spans not exported:\n%s", stderr)
	}
	if out, err := exec.Command(aegis, "log", "--json", audit2).Output(); err != nil || bytes.Count(out, []byte(`"type":"call"`)) != len(policyCalls) {
		t.Errorf("aegis log --json of the second run: %v, %d calls; want %d", err, bytes.Count(out, []byte(`"type":"call"`)), len(policyCalls))
	}
}

// TestOTelCollectorHTTP: aegis wrap --listen, exporting to a real
// OpenTelemetry Collector, in front of the TypeScript SDK v2 server,
// called by the official TypeScript SDK clients over Streamable HTTP on
// both revisions (v1's sessions on 2025-11-25, v2 pinned to 2026-07-28,
// where confirm is answered input_required and retried: a call of two
// rounds). Every call the log holds has its span, joined to aegis log
// --json's row by seq and digest, with transport tcp; and each carries
// the trace id of the traceparent the client sent in params._meta, its
// parent the client's span: the client's trace continues through aegis.
func TestOTelCollectorHTTP(t *testing.T) {
	dir := t.TempDir()
	col := buildCollector(t, dir)
	out := filepath.Join(dir, "spans.json")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", startCollector(t, col, dir, out))
	t.Setenv("OTEL_SERVICE_NAME", "aegis-interop-http")
	// No periodic metric reading within the test: each run's one reading
	// is the last, at exit.
	t.Setenv("OTEL_METRIC_EXPORT_INTERVAL", "3600000")
	aegis := buildAegis(t, dir)
	key := filepath.Join(dir, "key")
	keygen(t, aegis, key)
	node := lookPath(t, "node")
	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	for run, mode := range []string{"v1", "2026-07-28"} {
		t.Run(mode, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), sessionTimeout)
			defer cancel()
			audit := filepath.Join(t.TempDir(), "audit.jsonl")
			f := startListen(ctx, t, aegis, "--grace", "1s", "--audit", audit, "--signing-key", key, "--",
				node, filepath.Join("testdata", "v2", "rounds_server.mjs"))
			tok, err := os.ReadFile(strings.TrimSuffix(audit, ".jsonl") + ".token")
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.CommandContext(ctx, node, filepath.Join("testdata", "otel", "http_client.mjs"), f.url, strings.TrimSpace(string(tok)), mode,
				"00-"+traceID+"-"+parentID+"-01", "rojo=00f067aa0ba902b7")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			got, err := cmd.Output()
			if err != nil {
				t.Fatalf("client %s: %v\n%s\nwrap:\n%s", mode, err, stderr.String(), f.stderr.String())
			}
			if !strings.Contains(string(got), `"deploy: confirmed (because)"`) || !strings.Contains(string(got), `"text":"hi"`) {
				t.Fatalf("client %s printed %s; want echo and confirm answered", mode, got)
			}
			// SIGTERM: the sessions end, the log closes and the exporter
			// hands the collector what is left.
			f.cmd.Process.Signal(syscall.SIGTERM)
			if err := <-f.done; err != nil {
				t.Fatalf("wrap --listen: %v\n%s", err, f.stderr.String())
			}
			f.done <- nil
			if strings.Contains(f.stderr.String(), "telemetry:") {
				t.Errorf("aegis said, with the collector up:\n%s", f.stderr.String())
			}
			logOut, err := exec.Command(aegis, "log", "--json", audit).Output()
			if err != nil {
				t.Fatalf("aegis log --json: %v", err)
			}
			auditBytes, err := os.ReadFile(audit)
			if err != nil {
				t.Fatal(err)
			}
			lines := bytes.Split(bytes.TrimSuffix(auditBytes, []byte("\n")), []byte("\n"))
			var rows []otelLogRow
			for _, line := range bytes.Split(bytes.TrimSpace(logOut), []byte("\n")) {
				var r otelLogRow
				if err := json.Unmarshal(line, &r); err != nil {
					t.Fatalf("aegis log --json line %s: %v", line, err)
				}
				if r.Type == "call" {
					rows = append(rows, r)
				}
			}
			if len(rows) != 2 {
				t.Fatalf("aegis log shows %d calls; want 2 (echo, confirm):\n%s", len(rows), logOut)
			}
			byDigest := map[string]otlpSpan{}
			for deadline := time.Now().Add(30 * time.Second); ; {
				for _, s := range readOTLPSpans(t, out) {
					byDigest[s.attr("aegis.record.digest")+" "+s.Name] = s
				}
				n := 0
				for _, r := range rows {
					d := sha256.Sum256(lines[r.Seq])
					if _, ok := byDigest["sha256:"+hex.EncodeToString(d[:])+" tools/call "+*r.Tool]; ok {
						n++
					}
				}
				if n == len(rows) || time.Now().After(deadline) {
					break
				}
				time.Sleep(100 * time.Millisecond) // the exporter's flush interval
			}
			for _, r := range rows {
				d := sha256.Sum256(lines[r.Seq])
				s, ok := byDigest["sha256:"+hex.EncodeToString(d[:])+" tools/call "+*r.Tool]
				if !ok {
					t.Errorf("no span of the call at seq %d (%s)", r.Seq, *r.Tool)
					continue
				}
				checks := []struct{ key, got, want string }{
					{"aegis.record.seq", s.attr("aegis.record.seq"), fmt.Sprint(r.Seq)},
					{"aegis.session", s.attr("aegis.session"), r.SID},
					{"aegis.status", s.attr("aegis.status"), r.Status},
					{"network.transport", s.attr("network.transport"), "tcp"},
					{"traceId", strings.ToLower(s.TraceID), traceID},
					{"parentSpanId", strings.ToLower(s.ParentSpanID), parentID},
					{"traceState", s.TraceState, "rojo=00f067aa0ba902b7"},
				}
				if r.OutcomeSeq != nil {
					checks = append(checks, struct{ key, got, want string }{"aegis.outcome.seq", s.attr("aegis.outcome.seq"), fmt.Sprint(*r.OutcomeSeq)})
				}
				if *r.Tool == "confirm" && mode != "v1" {
					checks = append(checks, struct{ key, got, want string }{"aegis.rounds", s.attr("aegis.rounds"), "2"})
				}
				for _, c := range checks {
					if c.got != c.want {
						t.Errorf("span of seq %d (%s): %s = %q; want %q", r.Seq, *r.Tool, c.key, c.got, c.want)
					}
				}
			}
			// Bytes relayed over HTTP: this run's reading at exit (the
			// run-th with the metric in the collector's file) counts the
			// sessions' bytes each way.
			var readings [][]otlpPoint
			for deadline := time.Now().Add(30 * time.Second); ; {
				if readings = relayedReadings(t, metricsPath(out)); len(readings) > run || time.Now().After(deadline) {
					break
				}
				time.Sleep(100 * time.Millisecond) // the exporter's flush interval
			}
			if len(readings) != run+1 {
				t.Fatalf("%d readings of aegis.relay.bytes; want %d, one per run", len(readings), run+1)
			}
			relayed := map[string]int{}
			for _, p := range readings[run] {
				relayed[p.attr("aegis.relay.direction")], _ = strconv.Atoi(p.AsInt)
			}
			if len(relayed) != 2 || relayed["client_to_server"] <= 0 || relayed["server_to_client"] <= 0 {
				t.Errorf("aegis.relay.bytes = %v; want bytes both ways", relayed)
			}
		})
	}
}

// relayedReadings returns the aegis.relay.bytes points of each export
// the collector's file exporter wrote that has them, in order.
func relayedReadings(t *testing.T, path string) [][]otlpPoint {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var got [][]otlpPoint
	for _, line := range bytes.Split(b, []byte("\n")) {
		if !bytes.Contains(line, []byte(`"aegis.relay.bytes"`)) {
			continue
		}
		var req struct {
			ResourceMetrics []struct {
				ScopeMetrics []struct {
					Metrics []struct {
						Name string                           `json:"name"`
						Sum  struct{ DataPoints []otlpPoint } `json:"sum"`
					} `json:"metrics"`
				} `json:"scopeMetrics"`
			} `json:"resourceMetrics"`
		}
		if json.Unmarshal(line, &req) != nil {
			continue // a line being written
		}
		for _, rm := range req.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					if m.Name == "aegis.relay.bytes" {
						got = append(got, m.Sum.DataPoints)
					}
				}
			}
		}
	}
	return got
}

// TestOTelBaggage: trace context in a call's params._meta (traceparent,
// tracestate and baggage, as the Go SDK client sends them) reaches the
// server as the client sent it, baggage included, while the call's span
// continues the client's trace: its trace id and parent the
// traceparent's, its trace state the tracestate; on both revisions.
// Baggage is context for the services downstream, not span data
// (OpenTelemetry keeps it out of spans), and the log does not record
// it: it is carried by being relayed unchanged.
func TestOTelBaggage(t *testing.T) {
	dir := t.TempDir()
	col := buildCollector(t, dir)
	out := filepath.Join(dir, "spans.json")
	endpoint := startCollector(t, col, dir, out)
	aegis := buildAegis(t, dir)
	key := filepath.Join(dir, "key")
	keygen(t, aegis, key)
	const traceID, parentID = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	want := map[string]string{
		"traceparent": "00-" + traceID + "-" + parentID + "-01",
		"tracestate":  "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7",
		// W3C Baggage: members with properties and percent-encoding.
		"baggage": "userId=alice,serverNode=DF%2028,isProduction=false;ttl=60",
	}
	for _, rev := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(rev, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), sessionTimeout)
			defer cancel()
			audit := filepath.Join(t.TempDir(), "audit.jsonl")
			var stderr syncBuffer
			cmd := exec.Command(aegis, "wrap", "--audit", audit, "--signing-key", key, "--", "/usr/bin/python3", filepath.Join("testdata", "otel", "meta_server.py"))
			cmd.Env = append(os.Environ(), "OTEL_EXPORTER_OTLP_ENDPOINT="+endpoint)
			cmd.Stderr = &stderr
			client := mcp.NewClient(&mcp.Implementation{Name: "aegis-otel-baggage", Version: "1.0.0"}, nil)
			cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second},
				&mcp.ClientSessionOptions{ProtocolVersion: rev})
			if err != nil {
				t.Fatalf("connect: %v\n%s", err, stderr.String())
			}
			// A map of its own: the SDK adds its keys to it (2026-07-28).
			meta := mcp.Meta{}
			for k, v := range want {
				meta[k] = v
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "meta", Arguments: map[string]any{}, Meta: meta})
			if err != nil || len(res.Content) != 1 {
				t.Fatalf("tools/call meta = %+v, %v\n%s", res, err, stderr.String())
			}
			cs.Close()
			text, ok := res.Content[0].(*mcp.TextContent)
			if !ok {
				t.Fatalf("tools/call meta answered %T", res.Content[0])
			}
			var got struct {
				Params struct {
					Meta map[string]any `json:"_meta"`
				} `json:"params"`
			}
			if err := json.Unmarshal([]byte(text.Text), &got); err != nil {
				t.Fatalf("the server's line %q: %v", text.Text, err)
			}
			for k, v := range want {
				if got.Params.Meta[k] != v {
					t.Errorf("the server received _meta.%s %q; the client sent %q (line %s)", k, got.Params.Meta[k], v, text.Text)
				}
			}
			if strings.Contains(stderr.String(), "telemetry:") {
				t.Errorf("aegis said, with the collector up:\n%s", stderr.String())
			}

			// The collector's file holds every run's spans: this one's is
			// the span of this revision.
			var span *otlpSpan
			for deadline := time.Now().Add(30 * time.Second); span == nil; {
				for _, s := range readOTLPSpans(t, out) {
					if s.attr("mcp.protocol.version") == rev {
						span = &s
					}
				}
				if span != nil || time.Now().After(deadline) {
					break
				}
				time.Sleep(100 * time.Millisecond) // the exporter's flush interval
			}
			if span == nil {
				t.Fatalf("the collector received no span of a %s call: %+v", rev, readOTLPSpans(t, out))
			}
			for _, c := range []struct{ key, got, want string }{
				{"name", span.Name, "tools/call meta"},
				{"traceId", strings.ToLower(span.TraceID), traceID},
				{"parentSpanId", strings.ToLower(span.ParentSpanID), parentID},
				{"traceState", span.TraceState, "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"},
				{"aegis.status", span.attr("aegis.status"), "ok"},
			} {
				if c.got != c.want {
					t.Errorf("span: %s = %q; want %q", c.key, c.got, c.want)
				}
			}
		})
	}
}
