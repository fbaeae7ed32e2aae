"""The tools of stdio_server.py over streamable HTTP (the mcp 2.x SDK, both
eras on one endpoint), for ferrule's client tests.

It listens on 127.0.0.1 on a port of the system's choosing and prints the
port as its first line; it exits when its stdin ends, so it never outlives
the test that started it. Options:

- `--json`: answers are JSON bodies, never event streams;
- `--stateless`: the handshake era without sessions;
- `--token T`: every request needs `Authorization: Bearer T`; a request
  without it is refused with 401 and a body that quotes the header it got
  (a server that echoes credentials, which ferrule must never repeat).

The tool `seen_headers` gives the headers of the request that called it
(`authorization` left out), as JSON.
"""

import json
import os
import socket
import sys
import threading

import uvicorn
from mcp.server.mcpserver import Context

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stdio_server import server  # noqa: E402

TOKEN = sys.argv[sys.argv.index("--token") + 1] if "--token" in sys.argv else None
SEEN = {}


@server.tool()
def seen_headers(ctx: Context) -> str:
    """Gives the headers of the request that called it, as JSON."""
    return json.dumps(SEEN)


class Guard:
    """Checks the bearer token and remembers each request's headers."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        got = headers.pop("authorization", "")
        if TOKEN is not None and got != f"Bearer {TOKEN}":
            body = json.dumps({"error": f"unauthorized: you sent {got!r}"}).encode()
            await send({"type": "http.response.start", "status": 401,
                        "headers": [(b"content-type", b"application/json")]})
            return await send({"type": "http.response.body", "body": body})
        if scope.get("method") == "POST":
            SEEN.clear()
            SEEN.update(headers)
        return await self.app(scope, receive, send)


def main():
    app = server.streamable_http_app(json_response="--json" in sys.argv, stateless_http="--stateless" in sys.argv)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    print(listener.getsockname()[1], flush=True)

    def until_stdin_ends():
        sys.stdin.read()
        os._exit(0)

    threading.Thread(target=until_stdin_ends, daemon=True).start()
    config = uvicorn.Config(Guard(app), log_level="warning")
    uvicorn.Server(config).run(sockets=[listener])


if __name__ == "__main__":
    main()
