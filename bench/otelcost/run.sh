#!/bin/bash
# What telemetry costs a recorded call: `aegis wrap` driven by calls.py
# with telemetry off (no OTEL_*) and on (OTLP/HTTP to a live collector,
# spans and metrics), alternated, and the table of CPU and wall per call.
#
#   bench/otelcost/run.sh AEGIS OTELCOL [PAIRS [CALLS]]
#
# AEGIS: the binary (CGO_ENABLED=0 go build -trimpath ./cmd/aegis);
# OTELCOL: the collector of interop/otelcol (cd interop/otelcol && go
# build -o /tmp/otelcol .). PAIRS off/on runs (default 10) of CALLS
# calls each (default 3000). The collector writes what it takes to
# /dev/null, or, with OTELCOST_OUT=FILE, to FILE and FILE.metrics: a
# collector writing to the disk the journal syncs to slows the syncs of
# the runs with telemetry on, a cost of the collector's placement, not
# of aegis's telemetry. OTELCOST_DURABILITY sets wrap's --durability
# (default strict, wrap's default): none takes the syncs, and their
# scatter, out of the calls, which leaves telemetry's own CPU per call.
set -euo pipefail
aegis=$(realpath "$1") otelcol=$(realpath "$2") pairs=${3:-10} calls=${4:-3000}
here=$(dirname "$(realpath "$0")")
dir=$(mktemp -d)
out=${OTELCOST_OUT:-/dev/null} mout=/dev/null durability=${OTELCOST_DURABILITY:-strict}
[ -n "${OTELCOST_OUT:-}" ] && mout=$OTELCOST_OUT.metrics
col=
cleanup() { [ -n "$col" ] && kill "$col" 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
read -r http grpc < <(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
cat > "$dir/otelcol.yaml" <<YAML
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:$http
      grpc:
        endpoint: 127.0.0.1:$grpc
exporters:
  file:
    path: $out
  file/metrics:
    path: $mout
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
YAML
"$otelcol" --config "$dir/otelcol.yaml" >"$dir/otelcol.log" 2>&1 &
col=$!
until grep -q "Everything is ready" "$dir/otelcol.log"; do
  kill -0 "$col" || { cat "$dir/otelcol.log"; exit 1; }
  sleep 0.1
done
"$aegis" keygen --out "$dir/key" >/dev/null 2>&1
echo "# aegis: $aegis ($(sha256sum "$aegis" | cut -c1-12)); $pairs pairs of $calls calls, off and on in turn first, durability $durability; $(nproc) CPUs; the collector writes to $out"
echo "# pair mode load1 cpu_us/call wall_us/call aegis_loop_us/call"
# Odd pairs run off first, even pairs on first: a run's place in the
# sequence (the disk's writeback of the run before, say) falls on both.
for i in $(seq "$pairs"); do
  order="off http://127.0.0.1:$http"
  [ $((i % 2)) = 0 ] && order="http://127.0.0.1:$http off"
  for m in $order; do
    load=$(cut -d' ' -f1 /proc/loadavg)
    echo "$i $load $(python3 "$here/calls.py" "$aegis" "$calls" "$m" "$dir" "$durability")"
  done
done | tee "$dir/runs" | awk '{ m = $3; printf "%s %s %s %s %s %s\n", $1, m, $2, substr($4, 8), substr($5, 9), substr($6, 15) }'
python3 - "$dir/runs" <<'PY'
import sys, statistics as st
runs = {}
for line in open(sys.argv[1]):
    f = line.split()
    v = {k: float(x) for k, x in (kv.split("=") for kv in f[3:])}
    v["load"] = float(f[1])
    runs.setdefault(int(f[0]), {})[f[2]] = v
pairs = [r for r in runs.values() if "on" in r and "off" in r]
for key, what in (("cpu_us", "CPU per call (aegis + server)"), ("wall_us", "wall per call"), ("aegis_loop_us", "aegis's own CPU per call in the loop")):
    ratios = [r["on"][key] / r["off"][key] for r in pairs]
    on, off = sum(r["on"][key] for r in pairs), sum(r["off"][key] for r in pairs)
    print("# %s, on/off: sums %.1f / %.1f us = %.3fx; median of pairs %.3fx; pairs %s" % (
        what, on, off, on / off, st.median(ratios), " ".join("%.2f" % x for x in ratios)))
print("# CPU ratio by pair with its mean load: " + ", ".join("%.2f@%.1f" % (r["on"]["cpu_us"] / r["off"]["cpu_us"], (r["on"]["load"] + r["off"]["load"]) / 2) for r in pairs))
PY
