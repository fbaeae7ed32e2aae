"""An MCP server over stdio for ferrule's client tests, on the mcp 2.x SDK.

Its tools force the client's behaviours: an echo, a failing tool, one that
reports progress, one that sleeps (for timeouts and cancellation), one that
floods stderr before answering, one that starts a grandchild ignoring SIGTERM,
one that lists its environment, one that kills the server mid-call, one that
gives its process id, one that adds a tool and says the list changed, and one
with structured output.
"""

import asyncio
import os
import subprocess
import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("ferrule-test-server")

# A line on stderr as it starts, when asked (for the host's logger).
if os.environ.get("FERRULE_TEST_GREETING"):
    sys.stderr.write(os.environ["FERRULE_TEST_GREETING"] + "\n")
    sys.stderr.flush()


@server.tool()
def echo(text: str) -> str:
    """Returns its text."""
    return text


@server.tool()
def fail(reason: str) -> str:
    """Fails with the reason."""
    raise ToolError(reason)


@server.tool()
async def count(to: int, ctx: Context) -> str:
    """Reports progress up to `to`, then answers."""
    for step in range(1, to + 1):
        await ctx.report_progress(step, to, f"step {step}")
    return f"counted to {to}"


@server.tool()
async def sleep(seconds: float) -> str:
    """Sleeps, then answers."""
    await asyncio.sleep(seconds)
    return "slept"


@server.tool()
def shout(megabytes: int) -> str:
    """Writes that much to stderr in lines of 2047 bytes, then answers."""
    line = "x" * 2047 + "\n"
    for _ in range(megabytes * 512):
        sys.stderr.write(line)
    sys.stderr.flush()
    return "shouted"


@server.tool()
def spawn_stubborn() -> int:
    """Starts a grandchild that ignores SIGTERM and stdin's end; gives its pid."""
    code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"
    child = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.DEVNULL)
    return child.pid


@server.tool()
def environment() -> str:
    """Gives the names of its environment variables, one per line."""
    return "\n".join(sorted(os.environ))


@server.tool()
def die() -> str:
    """Kills the server mid-call."""
    sys.stderr.write("dying now\n")
    sys.stderr.flush()
    os._exit(3)


@server.tool()
def pid() -> int:
    """Gives the server's process id."""
    return os.getpid()


@server.tool()
async def grow(name: str, ctx: Context) -> str:
    """Adds a tool called `name` that answers with its name, and says the list changed."""
    server.add_tool(lambda: name, name=name, description=f"Answers {name}.")
    # Both eras: subscribers of the stateless one, the session of the handshake.
    await ctx.notify_tools_changed()
    try:
        await ctx.session.send_tool_list_changed()
    except Exception:
        pass
    return f"grew {name}"


@server.tool(structured_output=True)
def add(a: int, b: int) -> dict[str, int]:
    """Adds two numbers, with a structured result."""
    return {"sum": a + b}


if __name__ == "__main__":
    server.run("stdio")
