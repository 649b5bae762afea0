# A minimal MCP server over stdio: answers initialize and every
# tools/call with one text content, one line per answer.
import sys, json
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    if m.get("method") == "initialize":
        r = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "b", "version": "1"}}
    elif m.get("method") == "tools/call":
        r = {"content": [{"type": "text", "text": "ok"}]}
    else:
        r = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}) + "\n")
    sys.stdout.flush()
