# A small MCP server for aegis's tool-pinning tests. Its tools are the
# JSON array in the file $TOOLS, re-read on every request, inserted in
# tools/list answers byte for byte (so a test can send duplicate keys), or
# $PAGE tools a page when $PAGE > 0. A request that finds the file changed
# since the last tools/list is preceded by notifications/tools/list_changed.
# $ERA chooses how it answers before anything else: unset, every method
# (server/discover included) with a result; "modern", only 2026-07-28
# (server/discover names it, initialize is refused -32022, a request
# without its _meta is refused); "legacy", server/discover is refused
# -32601; "silent", server/discover is never answered.
import json, os, sys

path = os.environ["TOOLS"]
page = int(os.environ.get("PAGE", "0"))
era = os.environ.get("ERA", "")
listed = None

def send(m):
    sys.stdout.write(json.dumps(m) + "\n")
    sys.stdout.flush()

for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    text = open(path).read().strip()
    if listed is not None and text != listed and "id" in m:
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        listed = text
    if "id" not in m or "method" not in m:
        continue
    rid, method, params = m["id"], m["method"], m.get("params") or {}
    modern = (params.get("_meta") or {}).get("io.modelcontextprotocol/protocolVersion") == "2026-07-28"
    if method == "server/discover" and era == "silent":
        continue
    if method == "server/discover" and era == "legacy":
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}})
    elif era == "modern" and method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32022, "message": "Unsupported protocol version",
              "data": {"supported": ["2026-07-28"], "requested": params.get("protocolVersion")}}})
    elif era == "modern" and not modern:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": "no io.modelcontextprotocol/protocolVersion in _meta"}})
    elif method == "server/discover" and era == "modern":
        send({"jsonrpc": "2.0", "id": rid, "result": {"resultType": "complete", "supportedVersions": ["2026-07-28"],
              "capabilities": {"tools": {}}, "ttlMs": 0, "cacheScope": "private"}})
    elif method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": params.get("protocolVersion", "2025-11-25"),
              "capabilities": {"tools": {"listChanged": True}}, "serverInfo": {"name": "toolserver", "version": "1"}}})
    elif method == "tools/list":
        listed = text
        if page > 0:
            tools = json.loads(text)
            start = int(params.get("cursor") or 0)
            result = {"tools": tools[start:start + page]}
            if start + page < len(tools):
                result["nextCursor"] = str(start + page)
            send({"jsonrpc": "2.0", "id": rid, "result": result})
        else:
            sys.stdout.write('{"jsonrpc":"2.0","id":%s,"result":{"tools":%s}}\n' % (json.dumps(rid), text))
            sys.stdout.flush()
    elif method == "tools/call":
        send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "called " + params.get("name", "")}]}})
    else:
        send({"jsonrpc": "2.0", "id": rid, "result": {}})
