"""The OpenAI Agents SDK (openai-agents, pinned in bench/mcp/requirements.txt)
on the workloads of bench/agents.rs, with a scripted model of its own: an
agent called as a tool (`Agent.as_tool`) beside a plain function tool.

    python bench/agents/peer.py a1    # one run of 50 rounds, per round
    python bench/agents/peer.py a2    # 1,000 concurrent callers: wall, peak RSS

Tracing is off, as ferrule records none. Each workload runs in a process of
its own, so the peak resident memory is that workload's.
"""

import asyncio
import resource
import statistics
import sys
import time

from agents import Agent, ModelSettings, Runner, function_tool, set_tracing_disabled
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

ROUNDS = 50
CALLERS = 1000
REPEATS = 7


class Scripted(Model):
    """Calls `tool` until it has `rounds` results, then answers; each response
    takes `delay` seconds. Stateless: the results so far are in its input."""

    def __init__(self, tool=None, rounds=0, delay=0.0):
        self.tool, self.rounds, self.delay = tool, rounds, delay

    async def get_response(self, system_instructions, input, model_settings, tools, output_schema, handoffs,
                           tracing, *, previous_response_id=None, conversation_id=None, prompt=None):
        if self.delay:
            await asyncio.sleep(self.delay)
        items = input if isinstance(input, list) else []
        done = sum(1 for item in items if _type(item) == "function_call_output")
        if self.tool and done < self.rounds:
            output = [ResponseFunctionToolCall(id=f"fc{done}", call_id=f"c{done}", name=self.tool,
                                               arguments='{"input": "go"}', type="function_call", status="completed")]
        else:
            text = ResponseOutputText(text="done", type="output_text", annotations=[])
            output = [ResponseOutputMessage(id="m", content=[text], role="assistant", status="completed",
                                            type="message")]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args, **kwargs):
        raise NotImplementedError("the workloads do not stream")


def _type(item):
    return item.get("type") if isinstance(item, dict) else getattr(item, "type", None)


@function_tool
def noop(input: str) -> str:
    """Does nothing."""
    return "ok"


def helper(delay=0.0):
    answering = Agent(name="helper", model=Scripted(delay=delay), model_settings=ModelSettings())
    return answering.as_tool(tool_name="helper", tool_description="Helps.")


async def a1():
    print(f"A1 nested calls, OpenAI Agents SDK: one run of {ROUNDS} rounds, one call per round (medians of {REPEATS})")
    for label, tool in (("function tool", noop), ("agent as the tool", helper())):
        caller = Agent(name="caller", model=Scripted(tool.name, ROUNDS), tools=[tool])
        await Runner.run(caller, "go", max_turns=ROUNDS + 1)
        times = []
        for _ in range(REPEATS):
            start = time.perf_counter()
            await Runner.run(caller, "go", max_turns=ROUNDS + 1)
            times.append(time.perf_counter() - start)
        run = statistics.median(times)
        print(f"  {label:18}: run {run * 1e3:8.2f} ms  {run * 1e6 / ROUNDS:7.2f} us/round", flush=True)


async def a2():
    caller = Agent(name="caller", model=Scripted("helper", 1, delay=0.01), tools=[helper(delay=0.01)])
    start, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(Runner.run(caller, "go") for _ in range(CALLERS)))
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(f"A2 OpenAI Agents SDK, {CALLERS} concurrent callers, each calling an agent once "
          f"(3 model responses of 10 ms = 30 ms): wall {wall * 1e3:.1f} ms, CPU {cpu * 1e3:.1f} ms, "
          f"peak RSS {peak} MiB", flush=True)


if __name__ == "__main__":
    set_tracing_disabled(True)
    asyncio.run({"a1": a1, "a2": a2}[sys.argv[1]]())
