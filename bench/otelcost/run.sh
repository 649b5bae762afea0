#!/bin/bash
# What telemetry costs a recorded call: `aegis wrap` driven by calls.py
# with telemetry off (no OTEL_*) and on (OTLP/HTTP to a live collector,
# spans and metrics), alternated, and the table of CPU and wall per call.
#
#   bench/otelcost/run.sh AEGIS OTELCOL [PAIRS [CALLS[,CALLS2]]]
#
# AEGIS: the binary (CGO_ENABLED=0 go build -trimpath ./cmd/aegis);
# OTELCOL: the collector of interop/otelcol (cd interop/otelcol && go
# build -o /tmp/otelcol .). PAIRS off/on runs (default 10) of CALLS
# calls each (default 3000). With two lengths (3000,12000), each pair
# runs both, and the table adds the marginal cost of a call: on minus
# off over the longer runs less the same over the shorter, divided by
# the calls between them, which takes out what a run costs once (the
# exporter's start, its first connection, its last export at Close).
# The collector writes what it takes to
# /dev/null, or, with OTELCOST_OUT=FILE, to FILE and FILE.metrics: a
# collector writing to the disk the journal syncs to slows the syncs of
# the runs with telemetry on, a cost of the collector's placement, not
# of aegis's telemetry. OTELCOST_DURABILITY sets wrap's --durability
# (default strict, wrap's default): none takes the syncs, and their
# scatter, out of the calls, which leaves telemetry's own CPU per call.
# OTELCOST_PROTOCOL=grpc exports over OTLP/gRPC to the collector's gRPC
# port (default http/protobuf, the specification's default, to its
# HTTP port). OTELCOST_PIN=1 runs the collector on the last CPU and the
# calls (the driver, aegis and the server) on the others (taskset): on a machine of
# two, a collector sharing the calls' cores takes them from the calls
# while it reads and writes what they export, which the runs with
# telemetry on pay in the CPU time of their own threads (migrations,
# caches), a cost of where the collector runs rather than of aegis.
# OTELCOST_PACE=SECONDS waits that long before each call (calls.py), as
# an agent's calls come apart: the wait is in the wall per call, and
# what a reading costs once is shared by the calls of its delay.
set -euo pipefail
aegis=$(realpath "$1") otelcol=$(realpath "$2") pairs=${3:-10} calls=${4:-3000}
here=$(dirname "$(realpath "$0")")
dir=$(mktemp -d)
out=${OTELCOST_OUT:-/dev/null} mout=/dev/null durability=${OTELCOST_DURABILITY:-strict}
export OTELCOST_PROTOCOL=${OTELCOST_PROTOCOL:-http/protobuf}
case $OTELCOST_PROTOCOL in
  http/protobuf|grpc) ;;
  *) echo "OTELCOST_PROTOCOL: $OTELCOST_PROTOCOL: want http/protobuf or grpc" >&2; exit 2 ;;
esac
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
colpin=() callpin=()
if [ -n "${OTELCOST_PIN:-}" ]; then
  last=$(($(nproc) - 1))
  [ "$last" -ge 1 ] || { echo "OTELCOST_PIN needs two CPUs or more" >&2; exit 2; }
  colpin=(taskset -c "$last") callpin=(taskset -c "0-$((last - 1))")
fi
"${colpin[@]}" "$otelcol" --config "$dir/otelcol.yaml" >"$dir/otelcol.log" 2>&1 &
col=$!
until grep -q "Everything is ready" "$dir/otelcol.log"; do
  kill -0 "$col" || { cat "$dir/otelcol.log"; exit 1; }
  sleep 0.1
done
"$aegis" keygen --out "$dir/key" >/dev/null 2>&1
echo "# aegis: $aegis ($(sha256sum "$aegis" | cut -c1-12)); $pairs pairs of $calls calls, off and on in turn first, durability $durability; OTLP $OTELCOST_PROTOCOL;${OTELCOST_PACE:+ $OTELCOST_PACE s before each call;} $(nproc) CPUs${OTELCOST_PIN:+, the collector on CPU $last and the calls on CPUs 0-$((last - 1))}; the collector writes to $out; $(uptime)"
echo "# pair calls mode load1 cpu_us/call wall_us/call aegis_loop_us/call"
# Odd pairs run off first, even pairs on first: a run's place in the
# sequence (the disk's writeback of the run before, say) falls on both.
for i in $(seq "$pairs"); do
  port=$http
  [ "$OTELCOST_PROTOCOL" = grpc ] && port=$grpc
  order="off http://127.0.0.1:$port"
  [ $((i % 2)) = 0 ] && order="http://127.0.0.1:$port off"
  for n in ${calls//,/ }; do
    for m in $order; do
      load=$(cut -d' ' -f1 /proc/loadavg)
      echo "$i $n $load $("${callpin[@]}" python3 "$here/calls.py" "$aegis" "$n" "$m" "$dir" "$durability")"
    done
  done
done | tee "$dir/runs" | awk '{ printf "%s %s %s %s %s %s %s\n", $1, $2, $4, $3, substr($5, 8), substr($6, 9), substr($7, 15) }'
python3 - "$dir/runs" <<'PY'
import sys, statistics as st
byn = {}
for line in open(sys.argv[1]):
    f = line.split()
    v = {k: float(x) for k, x in (kv.split("=") for kv in f[4:])}
    v["load"] = float(f[2])
    byn.setdefault(int(f[1]), {}).setdefault(int(f[0]), {})[f[3]] = v
ns = sorted(byn)
for n in ns:
  runs = byn[n]
  pairs = [r for r in runs.values() if "on" in r and "off" in r]
  if len(ns) > 1:
    print("# runs of %d calls" % n)
  for key, what in (("cpu_us", "CPU per call (aegis + server)"), ("wall_us", "wall per call"), ("aegis_loop_us", "aegis's own CPU per call in the loop")):
    ratios = [r["on"][key] / r["off"][key] for r in pairs]
    on, off = sum(r["on"][key] for r in pairs), sum(r["off"][key] for r in pairs)
    print("# %s, on/off: sums %.1f / %.1f us = %.3fx; median of pairs %.3fx; pairs %s" % (
        what, on, off, on / off, st.median(ratios), " ".join("%.2f" % x for x in ratios)))
  print("# CPU ratio by pair with its mean load: " + ", ".join("%.2f@%.1f" % (r["on"]["cpu_us"] / r["off"]["cpu_us"], (r["on"]["load"] + r["off"]["load"]) / 2) for r in pairs))
if len(ns) == 2:
  # The marginal call: per pair, (on - off) of the long runs' CPU less
  # the same of the short runs', over the calls between them; against
  # the off runs' marginal call, (off long - off short) / calls.
  a, z = ns
  for key, what in (("cpu_us", "CPU (aegis + server)"), ("aegis_loop_us", "aegis's own CPU in the loop")):
    ext, base = [], []
    for i in sorted(byn[a]):
      s, l = byn[a].get(i, {}), byn[z].get(i, {})
      if not all(m in r for r in (s, l) for m in ("on", "off")):
        continue
      ext.append(((l["on"][key] - l["off"][key]) * z - (s["on"][key] - s["off"][key]) * a) / (z - a))
      base.append((l["off"][key] * z - s["off"][key] * a) / (z - a))
    if ext:
      print("# marginal call, %s: telemetry adds %.1f us by the median of pairs (mean of pairs %.1f us), pairs %s; the off runs' marginal call %.1f us (median); ratio of medians %.3fx" % (
          what, st.median(ext), sum(ext) / len(ext), " ".join("%.0f" % x for x in ext), st.median(base), (st.median(base) + st.median(ext)) / st.median(base)))
PY
