# An MCP stdio server whose one tool, meta, answers with the exact line
# of the tools/call request it received, so that a test sees what aegis
# forwarded of params._meta (traceparent, tracestate, baggage).
import json
import sys

for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    method = m.get("method")
    if method == "initialize":
        r = {"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}},
             "serverInfo": {"name": "meta", "version": "1"}}
    elif method == "server/discover":  # 2026-07-28
        r = {"resultType": "complete", "supportedVersions": ["2026-07-28", "2025-11-25"], "capabilities": {"tools": {}}}
    elif method == "tools/list":
        r = {"resultType": "complete", "tools": [{"name": "meta", "inputSchema": {"type": "object"}}]}
    elif method == "tools/call":
        r = {"resultType": "complete", "content": [{"type": "text", "text": line.rstrip("\n")}]}
    else:
        r = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}) + "\n")
    sys.stdout.flush()
