# Sorts the samples of a perf profile of `aegis wrap` by what they are
# part of, first match wins: telemetry's own goroutines and calls (the tap
# on the journal's writer, the reading goroutine by step, the exporting
# goroutine, the OTLP client's net/http goroutines, the metrics SDK), the
# collector's work (marking, sweeping), and the rest (relay, journal,
# scheduler, start-up), and sums telemetry's part.
#
#   perf record -F 4999 -g -o on.data -- python3 bench/otelcost/calls.py AEGIS N ENDPOINT DIR [DURABILITY]
#   perf script -i on.data --comm COMM > on.script   # COMM: the binary's name, cut to 15 characters
#   python3 bench/otelcost/classify.py on.script
#
# One sample is 1/4999 s of CPU; over N calls, samples / N / 4999 s a call.
# A run's samples include what it costs once (start, the first export,
# Close): compare runs of one length, or two lengths for the marginal call.
import collections, re, sys

RULES = [
    ("tap", "otelexport.(*Exporter).Tap"),
    ("reader:decode", "record.(*Decoder)"),
    ("reader:sha", "sha256.Sum256 <- github.com/aegisrelay/aegis/internal/otelexport"),
    ("reader:metrics", "otelexport.(*meters)"),
    ("reader:OnEnd", "otelexport.(*processor).OnEnd"),
    ("reader:calls", "journal/calls"),
    ("reader:other", "otelexport.(*Exporter).run"),
    ("exporter:marshal", "protobuf"),
    ("exporter", "otelexport.(*processor)"),
    ("otlp", "otlptrace"),
    ("metric-sdk", "otel/sdk/metric"),
    ("net/http", "net/http"),
    ("gc", "runtime.gcBgMarkWorker"),
    ("gc", "runtime.gcAssistAlloc"),
    ("gc-other", "runtime.gc"),
    ("gc-other", "runtime.bgsweep"),
    ("gc-other", "runtime.bgscavenge"),
    ("sysmon", "runtime.sysmon"),
    ("sched", "runtime.schedule"),
    ("sched", "runtime.mcall"),
    ("sched", "runtime.park_m"),
    ("journal", "journal."),
    ("relay", "relay."),
    ("start", "runtime.main"),
    ("start", "rt0_go"),
]
TELEMETRY = ("tap", "reader:", "exporter", "otlp", "metric-sdk", "net/http", "gc")


def samples(path):
    cur = []
    for line in open(path):
        line = line.rstrip("\n")
        if not line.strip():
            if cur:
                yield cur
            cur = []
        elif line[0] in "\t ":
            m = re.match(r"\s*[0-9a-f]+ (.*?)\+0x[0-9a-f]+ \(", line) or re.match(r"\s*[0-9a-f]+ (.*?) \(", line)
            cur.append(m.group(1) if m else line.strip())
    if cur:
        yield cur


def kind(stack):
    s = " <- ".join(stack)
    for name, pat in RULES:
        if pat in s:
            return name
    return "other"


for path in sys.argv[1:]:
    c = collections.Counter(kind(s) for s in samples(path))
    tel = {k: v for k, v in c.items() if k.startswith(TELEMETRY)}
    print("%s: %d samples, telemetry %d: %s; the rest: %s" % (
        path, sum(c.values()), sum(tel.values()),
        " ".join("%s=%d" % kv for kv in sorted(tel.items())),
        " ".join("%s=%d" % kv for kv in sorted(c.items()) if kv[0] not in tel)))
