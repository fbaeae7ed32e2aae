"""The OpenAI Agents SDK's MCP client (openai-agents, pinned in
bench/mcp/requirements.txt) against the servers bench/mcp.rs measures
ferrule's client with: one call of the echo tool after another, and 64 at
once, per call: wall time and this process's CPU (medians of 5 repeats).

    python bench/mcp/peer.py STDIO_SERVER_COMMAND SERVER_PYTHON HTTP_SERVER_SCRIPT

The HTTP server (tests/mcp/http_server.py, answering JSON as in bench/mcp.rs)
is started here, on 127.0.0.1, and stopped at the end.
"""

import asyncio
import statistics
import subprocess
import sys
import time

from agents.mcp import MCPServerStdio, MCPServerStreamableHttp

CALLS = 2000
FAN_OUT = 64
FAN_ROUNDS = 30
REPEATS = 5


async def measure(server, label):
    async with server:
        echo = lambda: server.call_tool("echo", {"text": "x"})  # noqa: E731
        for _ in range(100):
            await echo()
        sequential, fanned = [], []
        for _ in range(REPEATS):
            wall, cpu = time.perf_counter(), time.process_time()
            for _ in range(CALLS):
                await echo()
            sequential.append(((time.perf_counter() - wall) / CALLS, (time.process_time() - cpu) / CALLS))
            calls = FAN_OUT * FAN_ROUNDS
            wall, cpu = time.perf_counter(), time.process_time()
            for _ in range(FAN_ROUNDS):
                await asyncio.gather(*(echo() for _ in range(FAN_OUT)))
            fanned.append(((time.perf_counter() - wall) / calls, (time.process_time() - cpu) / calls))
    for what, samples in ((f"{label} client, one at a time", sequential), (f"{label} client, {FAN_OUT} at once", fanned)):
        wall = statistics.median(s[0] for s in samples) * 1e6
        cpu = statistics.median(s[1] for s in samples) * 1e6
        print(f"  {what:<36} {wall:8.1f} µs wall {cpu:8.1f} µs CPU", flush=True)


async def main():
    command, server_python, http_script = sys.argv[1:4]
    print(f"MCP, the OpenAI Agents SDK's client; per call (medians of {REPEATS})")
    stdio = MCPServerStdio(params={"command": command, "args": []}, client_session_timeout_seconds=60)
    await measure(stdio, "stdio")
    server = subprocess.Popen([server_python, http_script, "--json"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        url = f"http://127.0.0.1:{server.stdout.readline().strip()}/mcp"
        http = MCPServerStreamableHttp(params={"url": url}, client_session_timeout_seconds=60)
        await measure(http, "http")
    finally:
        server.kill()
        server.wait()


if __name__ == "__main__":
    asyncio.run(main())
