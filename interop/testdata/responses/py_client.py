# py_client.py emulates how the official MCP Python SDK client takes a
# response as the answer to its request (pydantic is not installed here, so
# json.loads and the SDK's own normalisation stand in for
# JSONRPCMessage.model_validate_json):
#
#   - src/mcp/client/stdio/__init__.py, stdout_reader: the server's stdout
#     is decoded as UTF-8 and split at "\n" only (str.split), one message
#     a line;
#   - a response is an object with result or error and an id that is an
#     int or a str (RequestId = int | str; pydantic's lax int also takes a
#     float without a fraction, 1.0, 1e0);
#   - src/mcp/shared/session.py, _normalize_request_id: a str id becomes
#     int(id) when int() takes it (" 1 ", "+1", "01", "0_1", "١", "１");
#     the pending request is then looked up by that value.
#
# For each session in $RESP_SESSIONS ([{"form":…,"argv":[…]}]), four at a
# time, it starts argv (aegis wrap … -- the malicious child), sends one
# tools/call with id 1, takes the first answer, closes the server's stdin,
# waits for it to exit, and prints one JSON line: the form and the text of
# the result it took (or an error when stdout ended without an answer).
#
# It is run by TestResponseIDs (responses_test.go).
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor


def response_id(msg):
    if not isinstance(msg, dict) or not ("result" in msg or "error" in msg):
        return None
    rid = msg.get("id")
    if isinstance(rid, bool):
        return None
    if isinstance(rid, float):
        return int(rid) if rid.is_integer() else None
    if isinstance(rid, str):
        try:
            return int(rid)
        except ValueError:
            return rid
    return rid


def run(session):
    out = {"form": session["form"]}
    proc = subprocess.Popen(session["argv"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {}}}).encode() + b"\n")
    proc.stdin.flush()
    buffer = ""
    while "text" not in out:
        chunk = proc.stdout.read1(65536)
        if not chunk:
            break
        lines = (buffer + chunk.decode("utf-8")).split("\n")
        buffer = lines.pop()
        for line in lines:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if response_id(msg) == 1:
                result = msg.get("result") or {}
                content = result.get("content") or [{}]
                out["text"] = content[0].get("text")
                break
    proc.stdin.close()
    proc.stdout.read()
    proc.wait()
    if "text" not in out:
        out["error"] = "stdout ended with no answer"
    return out


with ThreadPoolExecutor(max_workers=4) as pool:
    for out in pool.map(run, json.loads(os.environ.get("RESP_SESSIONS", "[]"))):
        sys.stdout.write(json.dumps(out) + "\n")
