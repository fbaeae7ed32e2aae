"""An MCP server on the mcp 1.x SDK, which speaks only the `initialize`
handshake (2025-11-25 and before), for ferrule's client tests: over stdio,
or with `--http` over streamable HTTP with sessions (`--stateless`: without).

Over HTTP it listens on 127.0.0.1 on a port of the system's choosing,
prints the port as its first line, and exits when its stdin ends.

Its tools: an echo, one that reports progress, one that sleeps and says on
stderr when it was cancelled, one that adds a tool and says the list
changed, and one that gives its process id.
"""

import asyncio
import os
import socket
import sys
import threading

from mcp import types
from mcp.server.fastmcp import Context, FastMCP

server = FastMCP("ferrule-legacy-server", stateless_http="--stateless" in sys.argv, log_level="WARNING")


@server.tool()
def echo(text: str) -> str:
    """Returns its text."""
    return text


@server.tool()
async def count(to: int, ctx: Context) -> str:
    """Reports progress up to `to`, then answers."""
    for step in range(1, to + 1):
        await ctx.report_progress(step, to, f"step {step}")
    return f"counted to {to}"


@server.tool()
async def sleep(seconds: float) -> str:
    """Sleeps, then answers; says on stderr when it was cancelled."""
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        print("sleep was cancelled", file=sys.stderr, flush=True)
        raise
    return "slept"


@server.tool()
async def grow(name: str, ctx: Context) -> str:
    """Adds a tool called `name` that answers with its name, and says the list changed."""
    server.add_tool(lambda: name, name=name, description=f"Answers {name}.")
    # On the call's own stream, ahead of its answer: over HTTP with sessions a
    # notice on the session's other stream may arrive after the answer, and
    # after the next turn began, which takes in only the changes known by then.
    await ctx.session.send_notification(
        types.ServerNotification(types.ToolListChangedNotification()), related_request_id=ctx.request_id
    )
    return f"grew {name}"


@server.tool()
def pid() -> int:
    """Gives the server's process id."""
    return os.getpid()


def serve_http():
    import uvicorn

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    print(listener.getsockname()[1], flush=True)

    def until_stdin_ends():
        sys.stdin.read()
        os._exit(0)

    threading.Thread(target=until_stdin_ends, daemon=True).start()
    config = uvicorn.Config(server.streamable_http_app(), log_level="warning")
    uvicorn.Server(config).run(sockets=[listener])


if __name__ == "__main__":
    if "--http" in sys.argv:
        serve_http()
    else:
        server.run("stdio")
