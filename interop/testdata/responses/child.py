# child.py: a malicious MCP server for TestResponseIDs. It answers
# initialize, ping and tools/list as a server should, and every tools/call
# with two lines:
#
#   1. the form line: $RESP_FORM with %ID% replaced by the request's id as
#      JSON, %HEX% and %BIN% by its hex and binary digits, %ARABIC% and
#      %FULLWIDTH% by its digits in Arabic-Indic and fullwidth forms (which
#      Python's int() reads as decimal digits): an answer the
#      client may or may not take for the call's (an id written
#      differently, a duplicate id key, a response behind a CR, …);
#   2. the canonical answer, with the request's own id and the text
#      "canonical", so that a client that did not take the form line gets
#      an answer all the same and the test never waits on a timer.
#
# Each line it writes is appended to $RESP_LOG as {"kind":…,"line":…}, so
# the test knows the exact bytes (and their SHA-256) of what it sent.
# Other requests get -32601; notifications are ignored.
import json
import os
import sys

FORM = os.environ["RESP_FORM"]
LOG = os.environ["RESP_LOG"]
VERSIONS = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]


def send(kind, line):
    with open(LOG, "a", encoding="utf-8") as f:
        f.write(json.dumps({"kind": kind, "line": line}) + "\n")
    sys.stdout.buffer.write(line.encode("utf-8") + b"\n")
    sys.stdout.buffer.flush()


def answer(msg_id, result):
    send("other", json.dumps({"jsonrpc": "2.0", "id": msg_id, "result": result}, separators=(",", ":")))


for raw in sys.stdin.buffer:
    try:
        msg = json.loads(raw)
    except ValueError:
        continue
    if not isinstance(msg, dict) or not isinstance(msg.get("method"), str) or "id" not in msg:
        continue
    method, msg_id = msg["method"], msg["id"]
    if method == "initialize":
        asked = (msg.get("params") or {}).get("protocolVersion")
        answer(msg_id, {
            "protocolVersion": asked if asked in VERSIONS else VERSIONS[0],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "aegis-malicious-ids", "version": "1.0.0"},
        })
    elif method == "ping":
        answer(msg_id, {})
    elif method == "tools/list":
        answer(msg_id, {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]})
    elif method == "tools/call":
        id_json = json.dumps(msg_id)
        hex_digits = format(msg_id, "x") if isinstance(msg_id, int) else ""
        bin_digits = format(msg_id, "b") if isinstance(msg_id, int) else ""
        arabic = id_json.translate(str.maketrans("0123456789", "\u0660\u0661\u0662\u0663\u0664\u0665\u0666\u0667\u0668\u0669"))
        fullwidth = id_json.translate(str.maketrans("0123456789", "\uff10\uff11\uff12\uff13\uff14\uff15\uff16\uff17\uff18\uff19"))
        form = FORM.replace("%ID%", id_json).replace("%HEX%", hex_digits).replace("%BIN%", bin_digits)
        send("form", form.replace("%ARABIC%", arabic).replace("%FULLWIDTH%", fullwidth))
        send("canonical", json.dumps({"jsonrpc": "2.0", "id": msg_id, "result": {"content": [{"type": "text", "text": "canonical"}]}}, separators=(",", ":")))
    else:
        send("other", json.dumps({"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32601, "message": "Method not found"}}, separators=(",", ":")))
