// Package otelexport exports the calls an audit log records as
// OpenTelemetry spans over OTLP, each joined to its evidence: the seq and
// digest of the records it is built from.
//
// # Off the calls' path
//
// Spans are built from the log's own lines, never from the frames: the
// journal hands each group of lines to Exporter.TapLines once it is
// written (and synced, when the durability level syncs it;
// journal.Options.TapLines), with the SHA-256 of each line its chain
// computed, so that a span says only what the log holds, after the log
// holds it, and names each record by the digest the next line's prev
// names without hashing the line again (Exporter.Tap takes the lines
// alone, and they are hashed as they are read). TapLines copies the
// group and its digests into a queue of at most Config.QueueBytes and
// returns; a group that does not fit is dropped whole, its records
// counted. One goroutine reads the queue, Config.Delay after the first
// group into an empty queue (OTEL_BSP_SCHEDULE_DELAY, 5 s by default,
// as for the SDK's batch span processor), or at once when it is half
// full, so that it wakes at most twice per delay however busy the log,
// and never while it is idle, and the calls of a delay share what a
// reading and its exports cost once. It decodes the lines, follows the
// calls with the one model of calls (package calls, Partial: the records before this run,
// and any dropped, are missing), and builds a span for each call once
// it is done, whole, from the times the log recorded (no tracer keeps
// it live), written at once in OTLP's protobuf encoding (protowire, as
// proto.Marshal writes a span of the generated types) into a buffer
// reused for the next span. Finished spans go to a second queue of at
// most Config.QueueSpans spans, held in chunks of 128 KiB used again,
// which one goroutine, woken once per reading, exports in batches of at
// most Config.Batch spans and one chunk with the OTLP client of the
// SDK's exporters (otlptrace.Client), the batch's written spans being
// its ScopeSpans' spans field, which the client marshals as they are
// (the message's unknown fields); a span that does not fit is dropped,
// and a batch the collector does not take is counted as failed. Neither
// the SDK's read-only spans nor its conversion of them into fresh
// messages is used: their allocations, and the collections they cause,
// cost a call more than everything else its telemetry does; and a
// call's own data, once its spans are built and the model of calls has
// forgotten it, is used again for a later call. Nothing a peer or a
// collector does makes a call wait or fail, or makes the exporter hold
// more than those two bounds and the calls the model holds (which the
// relay's --max-pending bounds).
//
// Close drains both queues, gives the collector at most
// Config.CloseTimeout to take what is left, and says, through
// Config.Logf, how many spans were not exported and why.
//
// # When it runs
//
// Start reads the standard OTEL_* environment variables: with neither
// OTEL_EXPORTER_OTLP_ENDPOINT nor OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
// set, or with OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none, it
// returns a nil *Exporter, whose Tap is nil and whose Close does
// nothing: no goroutine, no queue, no exporter is made. The exporters
// themselves are the OpenTelemetry Go SDK's OTLP exporters (for spans,
// their clients, otlptracehttp.NewClient and otlptracegrpc.NewClient), over
// OTLP/HTTP (http/protobuf, the specification's default) or OTLP/gRPC
// (grpc), as OTEL_EXPORTER_OTLP_TRACES_PROTOCOL and
// OTEL_EXPORTER_OTLP_METRICS_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL,
// say for each signal (any other value fails Start with ErrProtocol);
// they read the endpoint, headers, timeout, compression and TLS
// settings from the same variables; the batch span processor's
// variables, OTEL_BSP_SCHEDULE_DELAY, OTEL_BSP_EXPORT_TIMEOUT,
// OTEL_BSP_MAX_QUEUE_SIZE and OTEL_BSP_MAX_EXPORT_BATCH_SIZE, set the
// reading's delay, one export's bound, the span queue and the batch
// (a value that is not a whole number in range fails Start with
// ErrBatchSetting); OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES name the resource (service.name aegis by
// default).
//
// # Spans
//
// A call is a span of kind server named "tools/call {tool}", following
// the MCP semantic conventions (mcp.method.name, gen_ai.tool.name,
// gen_ai.operation.name execute_tool, jsonrpc.request.id,
// mcp.protocol.version, network.transport, error.type and an error
// status for any status but ok), from its first intent's ts to its
// final record's ts (its last outcome, or its task's end). Its aegis.* attributes join it to the log: aegis.session
// (the sid), aegis.record.seq and aegis.record.digest (its first
// intent's seq and the SHA-256 of that line, as the next line's prev
// names it; aegis log --json's seq), aegis.outcome.seq and
// aegis.outcome.digest (its last round's outcome; aegis log --json's
// outcome_seq), aegis.status and aegis.reason, aegis.policy.verdict,
// aegis.policy.rule and aegis.policy.set, aegis.durability, aegis.server,
// aegis.principal and aegis.log.origin (the log's checkpoint origin,
// when Config.Origin names it or this run writes seq 0). A call of
// several rounds (MCP 2026-07-28's input_required and its retries) has a
// child span per round, each with its own intent and outcome seq and
// digest; a call that became a task has a child span for the task, from
// the outcome that made it to its end, with an event per task record.
// Arguments and results are not in the log, and so never in a span.
//
// A call whose first intent records a trace (the W3C traceparent and
// tracestate the client sent in params._meta; record.Trace) is a span
// of the client's trace, its parent the client's span, so that the
// client's trace continues through aegis; any other call starts a trace
// of its own.
//
// # Metrics
//
// The same goroutine that builds the spans records, with the Go SDK's
// metrics, what the lines say: mcp.server.operation.duration (a
// histogram in seconds of each done call, from its first intent's ts to
// its final record's, by mcp.method.name, gen_ai.tool.name and
// error.type, as the MCP conventions name it), aegis.calls (done calls
// by aegis.status), aegis.refusals (refused calls by aegis.refusal.code,
// the code of the refusal frame the client got, read back from the
// intent's verdict and the outcome's reason),
// aegis.journal.commit.lines (a histogram of the lines of each group the
// journal wrote at once; Tap notes the count) and
// aegis.journal.fsync.duration (a histogram in seconds of each group's
// fdatasync, which the journal hands to TapSync; journal.Options.TapSync).
// At most 4096 group sizes and as many sync times wait to be recorded;
// past that they are dropped and counted. Bytes relayed are not in the
// log's lines: aegis.relay.bytes (a counter in By, asynchronous) is read
// from the relays themselves at each reading, through Config.Relayed
// (relay.Relayed: the bytes every session of the process read from its
// client and from its server, sessions that ended included; a pump adds
// each chunk it reads to its direction's sum, and nothing else runs until
// a reading asks). Its attribute is aegis.relay.direction,
// client_to_server or server_to_client, which peer sent the bytes: the
// conventions' network.io.direction says transmit or receive from one
// end's view, and aegis, in the middle, both receives and transmits
// every byte. Each instrument keeps at most
// MaxSeries attribute sets (tool names come from peers). The metrics
// are exported with the OTLP metric exporter of their protocol, which reads the
// OTEL_EXPORTER_OTLP_* variables (and their METRICS variants, and
// OTEL_METRIC_EXPORT_INTERVAL), when the exporter runs and
// OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_METRICS_ENDPOINT is
// set, unless OTEL_METRICS_EXPORTER=none; Close makes the last reading.
// What the metrics lose is counted and said, as for spans: the first of
// a run of readings the collector does not take at once, and at Close
// how many readings it did not take and how many measurements were
// dropped (Stats).
//
// An Exporter's methods are safe for concurrent use but Tap, TapLines
// and TapSync, which the journal's writer alone calls, one at a time:
// TapSync keeps the time it is given, unlocked, for the Tap or TapLines
// that follows it to queue with its group.
package otelexport
