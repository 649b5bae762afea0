# Drives N tools/call through `aegis wrap`, one at a time (the next sent
# once the answer is read), durability strict (wrap's default), and
# prints the CPU per call of aegis and its python3 server (getrusage of
# the waited children: the whole run, start and Close included), the
# wall time per call of the calls' loop, and aegis's own CPU per call
# within the loop (/proc/PID/stat, clock ticks).
#
#   python3 calls.py AEGIS N off|ENDPOINT DIR [DURABILITY]
#
# ENDPOINT is OTEL_EXPORTER_OTLP_ENDPOINT (telemetry on), over the OTLP
# protocol OTELCOST_PROTOCOL names (OTEL_EXPORTER_OTLP_PROTOCOL; unset:
# the exporter's default, http/protobuf); off runs with no OTEL_*
# variable but OTEL_BSP_*. DIR holds the signing key (DIR/key) and the
# logs.
# DURABILITY is wrap's --durability (default strict, wrap's default).
import json, os, resource, subprocess, sys, time

aegis, n, endpoint, d = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
durability = sys.argv[5] if len(sys.argv) > 5 else "strict"
# Of the OTEL_* variables, only the batch span processor's (OTEL_BSP_*)
# are passed on: inert with telemetry off, they set its delay and bounds.
env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_") or k.startswith("OTEL_BSP_")}
if endpoint != "off":
    env["OTEL_EXPORTER_OTLP_ENDPOINT"] = endpoint
    if os.environ.get("OTELCOST_PROTOCOL"):
        env["OTEL_EXPORTER_OTLP_PROTOCOL"] = os.environ["OTELCOST_PROTOCOL"]
audit = os.path.join(d, "audit-%d.jsonl" % time.time_ns())
server = os.path.join(os.path.dirname(os.path.abspath(__file__)), "server.py")
before = resource.getrusage(resource.RUSAGE_CHILDREN)
p = subprocess.Popen([aegis, "wrap", "--durability", durability, "--audit", audit, "--signing-key", os.path.join(d, "key"), "--",
                      "/usr/bin/python3", server],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)


def rt(m):
    p.stdin.write(json.dumps(m) + "\n")
    p.stdin.flush()
    line = p.stdout.readline()
    if not line:
        sys.exit("aegis closed its output")
    return line


def selfcpu():
    f = open("/proc/%d/stat" % p.pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


rt({"jsonrpc": "2.0", "id": 0, "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}})
p.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
# OTELCOST_PACE (seconds) waits between calls: an agent's calls come
# seconds or milliseconds apart, not back to back.
pace = float(os.environ.get("OTELCOST_PACE", "0"))
a0 = selfcpu()
t0 = time.perf_counter()
for i in range(1, n + 1):
    if pace:
        time.sleep(pace)
    rt({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "echo", "arguments": {"i": i}}})
wall = time.perf_counter() - t0
a1 = selfcpu()
p.stdin.close()
if p.wait() != 0:
    sys.exit("aegis exited %d" % p.returncode)
after = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
os.remove(audit)
print("%s cpu_us=%.1f wall_us=%.1f aegis_loop_us=%.1f" % ("on" if endpoint != "off" else "off",
      cpu / n * 1e6, wall / n * 1e6, (a1 - a0) / n * 1e6))
