"""A hand-written MCP server over stdio (no SDK) that speaks the 2025-11-25
handshake and breaks the protocol on request, for ferrule's client tests.

It refuses `server/discover` (-32601, as the Node servers do), answers
`initialize`, lists its tools in pages (the second cursor is the empty
string, which is a cursor), and each tool misbehaves one way:

- `mismatch`: structured content that breaks its output schema;
- `garbage`: lines that are no JSON-RPC, an answer to an id never asked,
  a request of the server's, then the answer;
- `late_progress`: the answer, then progress for the request it answered;
- `storm`: thousands of list-changed notifications, then the answer;
- `huge`: a text result of `megabytes` MB;
- `picture`: an image, an audio clip and an embedded blob;
- `big_ids`: answers to ids never asked, each id a string of 100 kB;
- `hang_list`: says the list changed, then never answers `tools/list` again;
- `huge_method`: a 2 MB result whose structured content has a "method" key;
- `pid`: its process id;
- `echo`: its text.

With `--silent` it never answers anything (a server that hangs at start).
With `--goodbye PATH` it writes `started` to PATH as it starts, and
`stdin closed` when its input ends (a server stopped gracefully sees that).
With `--crowded` its last page leads to pages of 1,000 more tools each (`c0`,
`c1`...; among the first, one with a 200-character name), without end; with
`--endless`, to pages of one tool each (`e0`, `e1`...), without end.
"""

import json
import os
import sys

SILENT = "--silent" in sys.argv
CROWD = 1000 if "--crowded" in sys.argv else 1 if "--endless" in sys.argv else 0
STATE = {"hang_list": False}

TOOLS = [
    {"name": "echo", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}},
    {
        "name": "mismatch",
        "inputSchema": {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"},
        "outputSchema": {
            "type": "object",
            "properties": {"sum": {"type": "integer"}},
            "required": ["sum"],
        },
    },
    {"name": "garbage", "inputSchema": {"type": "object"}},
    {"name": "late_progress", "inputSchema": {"type": "object"}},
    {"name": "storm", "inputSchema": {"type": "object"}},
    {
        "name": "huge",
        "inputSchema": {"type": "object", "properties": {"megabytes": {"type": "integer"}}, "required": ["megabytes"]},
    },
    {"name": "picture", "inputSchema": {"type": "object"}},
    {"name": "big_ids", "inputSchema": {"type": "object"}},
    {"name": "hang_list", "inputSchema": {"type": "object"}},
    {"name": "huge_method", "inputSchema": {"type": "object"}},
    {"name": "pid", "inputSchema": {"type": "object"}},
    {"name": "broken_schema", "inputSchema": {"type": "object", "properties": {"x": {"$ref": "https://example.com/x"}}}},
]


def crowd(page):
    """The `page`th page after the last of `TOOLS`, with `--crowded` or `--endless`."""
    prefix = "c" if CROWD > 1 else "e"
    tools = [{"name": f"{prefix}{page * CROWD + n}", "inputSchema": {"type": "object"}} for n in range(CROWD)]
    if page == 0 and CROWD > 1:
        tools[1]["name"] = "n" * 200
    return tools


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def answer(id_, result):
    send({"jsonrpc": "2.0", "id": id_, "result": result})


def text(value):
    return {"content": [{"type": "text", "text": value}]}


def call(id_, name, arguments, meta):
    token = meta.get("progressToken")
    if name == "echo":
        answer(id_, text(arguments.get("text", "")))
    elif name == "mismatch":
        answer(id_, {"content": [{"type": "text", "text": "many"}], "structuredContent": {"sum": "many"}})
    elif name == "garbage":
        sys.stdout.write("this is not json\n[1, 2, 3]\n\n")
        send({"jsonrpc": "2.0", "id": 987654, "result": {}})
        send({"jsonrpc": "2.0", "id": "srv-1", "method": "ping"})
        send({"jsonrpc": "2.0", "id": "srv-2", "method": "sampling/createMessage", "params": {}})
        answer(id_, text("survived"))
    elif name == "late_progress":
        answer(id_, text("early"))
        if token is not None:
            for step in range(3):
                send({"jsonrpc": "2.0", "method": "notifications/progress",
                      "params": {"progressToken": token, "progress": step + 1, "message": "too late"}})
    elif name == "storm":
        line = json.dumps({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}) + "\n"
        sys.stdout.write(line * 5000)
        answer(id_, text("calm"))
    elif name == "huge":
        answer(id_, text("h" * (arguments["megabytes"] << 20)))
    elif name == "big_ids":
        for n in range(50):
            send({"jsonrpc": "2.0", "id": f"{n}-" + "i" * 100_000, "result": {}})
        answer(id_, text("sent"))
    elif name == "hang_list":
        STATE["hang_list"] = True
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        answer(id_, text("hanging"))
    elif name == "pid":
        answer(id_, text(str(os.getpid())))
    elif name == "huge_method":
        answer(id_, {"content": [], "structuredContent": {"method": "GET", "blob": "x" * (2 << 20)}})
    elif name == "picture":
        answer(id_, {"content": [
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
            {"type": "resource", "resource": {"uri": "file:///r/report.pdf", "blob": "JVBERi0=",
                                              "mimeType": "application/pdf"}},
        ]})
    else:
        send({"jsonrpc": "2.0", "id": id_, "error": {"code": -32602, "message": f"Unknown tool: {name}"}})


def goodbye(what):
    """Writes `what` to the file `--goodbye` names, if it names one."""
    if "--goodbye" in sys.argv:
        with open(sys.argv[sys.argv.index("--goodbye") + 1], "w") as file:
            file.write(what)


def main():
    goodbye("started")
    if SILENT:
        print("silent here", file=sys.stderr, flush=True)
    for line in sys.stdin:
        if SILENT:
            continue
        message = json.loads(line)
        method, id_ = message.get("method"), message.get("id")
        if id_ is None:
            continue
        params = message.get("params") or {}
        if method == "initialize":
            answer(id_, {"protocolVersion": "2025-11-25", "capabilities": {"tools": {"listChanged": True}},
                         "serverInfo": {"name": "hostile", "version": "1"}})
        elif method == "tools/list":
            if STATE["hang_list"]:
                continue
            cursor = params.get("cursor")
            if cursor is None:
                answer(id_, {"tools": TOOLS[:3], "nextCursor": ""})
            elif cursor == "":
                answer(id_, {"tools": TOOLS[3:6], "nextCursor": "last"})
            elif cursor == "last" and not CROWD:
                answer(id_, {"tools": TOOLS[6:]})
            elif cursor == "last":
                answer(id_, {"tools": TOOLS[6:], "nextCursor": "0"})
            else:
                answer(id_, {"tools": crowd(int(cursor)), "nextCursor": str(int(cursor) + 1)})
        elif method == "tools/call":
            call(id_, params.get("name"), params.get("arguments") or {}, params.get("_meta") or {})
        elif method == "ping":
            answer(id_, {})
        else:
            send({"jsonrpc": "2.0", "id": id_, "error": {"code": -32601, "message": "Method not found"}})
    goodbye("stdin closed")


if __name__ == "__main__":
    main()
