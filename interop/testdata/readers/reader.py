# reader.py: a tool server that reads stdin exactly as the official MCP
# Python SDK's stdio server does (mcp/server/stdio.py:
# anyio.wrap_file(TextIOWrapper(sys.stdin.buffer, encoding="utf-8")),
# iterated by line): a TextIOWrapper in universal-newline mode
# (newline=None), which ends a line at "\n", "\r" or "\r\n". Each line is
# decoded with json.loads (last duplicate key wins); an object is a
# message, an array a JSON-RPC batch of messages.
#
# Every tools/call it executes is appended to $READER_EXEC as one JSON line
# {"reader":"python","id":<id>,"tool":<name>}, before it is answered on
# stdout with a result. Other requests (initialize, ping, …) get an empty
# result. Lines that are not JSON are skipped, as the SDK skips them after
# reporting the exception.
import io
import json
import os
import sys

EXEC = os.environ["READER_EXEC"]


def answer(msg_id, result):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg_id, "result": result}) + "\n")
    sys.stdout.flush()


def serve(msg):
    if not isinstance(msg, dict):
        return
    method = msg.get("method")
    if not isinstance(method, str):
        return
    has_id = "id" in msg and msg["id"] is not None
    if method == "tools/call":
        params = msg.get("params")
        if not isinstance(params, dict) or not isinstance(params.get("name"), str):
            return
        with open(EXEC, "a", encoding="utf-8") as f:
            f.write(json.dumps({"reader": "python", "id": msg.get("id"), "tool": params["name"]}) + "\n")
        if has_id:
            answer(msg["id"], {"content": [{"type": "text", "text": "ran " + params["name"]}]})
    elif has_id:
        answer(msg["id"], {})


def main():
    stdin = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", newline=None)
    for line in stdin:
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, list):
            for msg in value:
                serve(msg)
        else:
            serve(value)


main()
