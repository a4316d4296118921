"""Framework overhead per agent turn against a real HTTP server: ours, pydantic-ai and LangGraph.

All contenders talk to the same stand-in OpenAI-compatible server on 127.0.0.1
(`benchmarks/llm_server.py`, a process of its own, keep-alive, replies of the real API's shape
sent at once): each LLM turn asks for one call of the same trivial tool, `lookup(x: int) -> str`,
and the last one answers with text. An N-turn run is N requests (N - 1 tool calls, then the
answer); a sample is one whole run, reported as its time / N. The rows with targets subtract
nothing: every contender pays the same server. The floor row shows what the server and HTTP
alone cost (a bare `httpx.AsyncClient` posting the same growing conversation and reading each
reply), and the rows "above the floor" the time each framework adds to it.

- ours, YAML: a tree with `llm: {provider: openai, base_url, model}` and an `agent` node using
  the tool, loaded once with `load_tree`, run with `await tree.arun(inputs)` each time; no store
  (durability off).
- ours, Python: `react_agent` with an `OpenAICompatibleProvider` opened with `async with`, a new
  `TreeRunner` per run (built outside the timing), `await runner.arun()`.
- pydantic-ai: `Agent(OpenAIChatModel(..., provider=OpenAIProvider(base_url=...)), tools=[...])`,
  `await agent.run(prompt)` (its defaults: a request limit of 50, which a 50-turn run meets).
- LangGraph: `langgraph.prebuilt.create_react_agent(ChatOpenAI(base_url=...), [lookup])`,
  `await graph.ainvoke(...)` with `recursion_limit` raised to 2N + 1 (its default, 25, stops a
  run after 12 tool turns); no checkpointer.

A tree from YAML opens the LLM provider it made at the start of each run, so the turns of a run
share pooled connections on the default path, as the Python path's `async with` does.

Runs of 10 and 50 turns, every contender once per round in rotated order, each of its runs next
to a floor run of the same length (which goes first alternates), so the time above the floor
compares runs that met the machine at the same moment; a full garbage collection before each run
(untimed, the collector stays on), so none pays for the garbage of the one before it.
Target: ours at most 0.5x each anchor's time per turn. Missing anchors
(`pip install -e '.[bench]'`) are reported n/a.

Run: python benchmarks/bench_agent_turn.py [--quick]
"""

from __future__ import annotations

import gc
import itertools
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import Row, Samples, Section, Settings, ainterleave, limit, optional, within
from benchmarks.llm_server import ANSWER, LLMServer
from benchmarks.suite import installed, main
from jianmu_bt import tool
from jianmu_bt.llm import OpenAICompatibleProvider
from jianmu_bt.loader import load_tree
from jianmu_bt.nodes import react_agent
from jianmu_bt.runtime import AgentState, StateManager, TreeRunner

TURNS = (10, 50)
TARGET = 0.5
MODEL = "bench-model"

TREE = """
version: 1
name: agent_turns
state:
  question: {{type: string, input: true}}
llm: {{provider: openai, base_url: "{base_url}", model: {model}}}
root:
  agent: {{name: Agent, goal: "{{question}}", tools: [lookup], max_iterations: {most}}}
"""

Sampler = Callable[[], Awaitable[float]]


def lookup(x: int) -> str:
    """Look x up (a plain sync function)."""
    return f"item {x}"


LOOKUP = tool(lookup)
LOOKUP_SCHEMA = {
    "type": "function",
    "function": {
        "name": "lookup",
        "description": "Look x up.",
        "parameters": {
            "type": "object",
            "properties": {"x": {"type": "integer"}},
            "required": ["x"],
        },
    },
}


def prompt(turns: int) -> str:
    """The user's message; the server reads the run's length from it."""
    return f"Look up the items one by one, then say done. turns={turns}"


Run = Callable[[], Awaitable[None]]
Prepare = Callable[[], Run]
"""Builds what one run needs (untimed) and returns the run."""


def paired(prepare: Prepare, floor: Run, turns: int, kept: dict[str, list[float]]) -> Sampler:
    """A sampler: wall seconds per turn of one whole run, next to a floor run of the same length
    (which goes first alternates), so both meet the machine at the same moment. The run's CPU
    seconds per turn (this process's: the server is another) and the floor run's wall and CPU
    seconds go to `kept` ("cpu", "floor", "floor:cpu"). A full garbage collection (untimed)
    before each run: no contender pays for the garbage of the one before it."""
    order = itertools.count()

    async def sample() -> float:
        jobs = [(prepare(), ""), (floor, "floor")]
        own = 0.0
        for run, which in jobs if next(order) % 2 else jobs[::-1]:
            gc.collect()
            start, used = time.perf_counter(), time.process_time()
            await run()
            wall, cpu = time.perf_counter() - start, time.process_time() - used
            kept[f"{which}:cpu".lstrip(":")].append(cpu / turns)
            if which:
                kept["floor"].append(wall / turns)
            else:
                own = wall / turns
        return own

    return sample


def floor_run(client: httpx.AsyncClient, url: str, turns: int) -> Run:
    """The same conversation posted with bare httpx: the server's and HTTP's own cost."""

    async def run() -> None:
        messages: list[dict[str, Any]] = [{"role": "user", "content": prompt(turns)}]
        for _ in range(turns):
            body = {"model": MODEL, "messages": messages, "tools": [LOOKUP_SCHEMA]}
            reply = (await client.post(f"{url}/chat/completions", json=body)).json()
            message = reply["choices"][0]["message"]
            messages = [*messages, message]
            for call in message.get("tool_calls") or []:
                answer = {"role": "tool", "tool_call_id": call["id"], "content": "item"}
                messages.append(answer)
        assert message["content"] == ANSWER and len(messages) == 2 * turns, messages

    return run


def ours_yaml(tree: Any, turns: int) -> Prepare:
    """The loaded tree, run once (a fresh run each time, no store)."""

    async def run() -> None:
        result = await tree.arun({"question": prompt(turns)})
        assert result.ok and result.state["final_answer"] == ANSWER, result.reason
        assert len(result.state["messages"]) == 2 * turns, len(result.state["messages"])

    return lambda: run


def ours_python(provider: OpenAICompatibleProvider, turns: int) -> Prepare:
    """`react_agent` with the opened provider; a new runner for each run, built untimed."""

    def prepare() -> Run:
        root = react_agent(
            "Agent", tools=[LOOKUP], provider=provider, goal=prompt(turns), max_iterations=turns
        )
        runner = TreeRunner(root, StateManager(AgentState))

        async def run() -> None:
            result = await runner.arun()
            assert result.ok and result.state["final_answer"] == ANSWER, result.reason
            assert len(result.state["messages"]) == 2 * turns

        return run

    return prepare


def pydantic_ai_agent(url: str) -> Any:
    """pydantic-ai's Agent on the server, with the tool."""
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    model = OpenAIChatModel(MODEL, provider=OpenAIProvider(base_url=url, api_key="unused"))
    return Agent(model, tools=[lookup])


def pydantic_ai_run(agent: Any, turns: int) -> Prepare:
    """One `agent.run(prompt)`."""

    async def run() -> None:
        result = await agent.run(prompt(turns))
        assert result.output == ANSWER and len(result.all_messages()) == 2 * turns

    return lambda: run


def langgraph_agent(url: str) -> Any:
    """LangGraph's prebuilt ReAct agent with ChatOpenAI on the server, with the tool."""
    from langchain_openai import ChatOpenAI
    from langgraph.prebuilt import create_react_agent
    from pydantic import SecretStr

    model = ChatOpenAI(model=MODEL, base_url=url, api_key=SecretStr("unused"))
    return create_react_agent(model, [lookup])


def langgraph_run(graph: Any, turns: int) -> Prepare:
    """One `graph.ainvoke(...)`, with room for the run's steps (2 per tool turn, and one)."""

    async def run() -> None:
        data = {"messages": [{"role": "user", "content": prompt(turns)}]}
        out = await graph.ainvoke(data, {"recursion_limit": 2 * turns + 1})
        assert out["messages"][-1].content == ANSWER and len(out["messages"]) == 2 * turns

    return lambda: run


def anchors(url: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The anchors that are installed, and why the others are not measured."""
    built, missing = {}, {}
    for name, modules, build in (
        ("pydantic-ai", ("pydantic_ai", "openai"), pydantic_ai_agent),
        ("LangGraph", ("langgraph.prebuilt", "langchain_openai"), langgraph_agent),
    ):
        reasons = [reason for module in modules if (reason := optional(module)[1])]
        if reasons:
            missing[name] = reasons[0]
        else:
            built[name] = build(url)
    return built, missing


async def measure(settings: Settings, url: str) -> tuple[Samples, dict[str, str]]:
    """Every contender's seconds per turn, interleaved, at each run length; each run next to a
    floor run (`<name>@<turns>:floor`)."""
    tree = load_tree(TREE.format(base_url=url, model=MODEL, most=max(TURNS)), tools=[LOOKUP])
    built, missing = anchors(url)
    contenders: dict[str, Prepare] = {}
    async with AsyncExitStack() as stack:
        client = await stack.enter_async_context(httpx.AsyncClient())
        provider = OpenAICompatibleProvider(model=MODEL, base_url=url)
        await stack.enter_async_context(provider)
        for turns in TURNS:
            contenders[f"yaml@{turns}"] = ours_yaml(tree, turns)
            contenders[f"python@{turns}"] = ours_python(provider, turns)
            if "pydantic-ai" in built:
                contenders[f"pydantic-ai@{turns}"] = pydantic_ai_run(built["pydantic-ai"], turns)
            if "LangGraph" in built:
                contenders[f"LangGraph@{turns}"] = langgraph_run(built["LangGraph"], turns)
        keys = ("cpu", "floor", "floor:cpu")
        kept: dict[str, dict[str, list[float]]] = {n: {k: [] for k in keys} for n in contenders}
        samplers = {}
        for name, prepare in contenders.items():
            turns = int(name.rsplit("@", 1)[1])
            samplers[name] = paired(prepare, floor_run(client, url, turns), turns, kept[name])
        rounds, warmup = settings.pick(11, 3), settings.pick(2, 1)
        samples = await ainterleave(samplers, rounds, warmup)
    for name, lists in kept.items():
        samples |= {f"{name}:{key}": values[-rounds:] for key, values in lists.items()}
    await tree.aclose()
    gc.collect()  # the openai SDK closes dropped clients from __del__ with a task: let them run
    await anyio.sleep(0.1)
    return samples, missing


def above(samples: Samples, name: str) -> list[float]:
    """`name`'s client CPU seconds per turn minus those of the floor runs paired with its runs."""
    mine, floor = samples[f"{name}:cpu"], samples[f"{name}:floor:cpu"]
    return [a - b for a, b in zip(mine, floor, strict=True)]


ANCHOR_NAMES = {
    "pydantic-ai": "pydantic-ai Agent.run",
    "LangGraph": "LangGraph create_react_agent",
}
NOTES = {
    "yaml": "load_tree once (llm: provider openai, an agent node); await tree.arun(inputs) per "
    "run; no store (durability off); the tree opens its provider for the run (pooled "
    "connections, the default path)",
    "python": "react_agent with OpenAICompatibleProvider opened by `async with` (pooled "
    "connections); a new TreeRunner per run, built before the timing; no store",
    "floor": "a bare httpx.AsyncClient (keep-alive) posting the same growing conversation and "
    "reading each reply: the server's own cost, which every row above pays (the floor runs "
    "paired with the react_agent runs)",
    "above": "the client process's CPU time per turn minus that of the floor run paired with "
    "each run (right before or after it): the framework's own work; CPU time, unlike wall time, "
    "does not grow while other jobs hold the cores",
    "LangGraph": "LangGraph needs recursion_limit >= 2N + 1 for an N-turn run (default 25)",
}


OURS = {"yaml": "YAML tree", "python": "react_agent (Python)"}


def rows(samples: Samples, missing: dict[str, str]) -> list[Row]:
    """Per run length: ours (YAML, Python) next to each anchor, the floor, the overheads."""
    out: list[Row] = []
    for turns in TURNS:
        base = samples[f"python@{turns}:floor"]
        for ours, label in OURS.items():
            for anchor, name in ANCHOR_NAMES.items():
                theirs = samples.get(f"{anchor}@{turns}")
                note = missing.get(anchor) or NOTES["LangGraph" if anchor == "LangGraph" else ours]
                what = f"{turns} turns, per turn: {label} vs {anchor}"
                out.append(within(what, samples[f"{ours}@{turns}"], theirs, name, TARGET, note))
        what = f"  {turns} turns: the floor (bare httpx, same requests)"
        out.append(limit(what, base, None, note=NOTES["floor"]))
        out.append(
            limit(f"    {turns} turns: its client CPU", samples[f"python@{turns}:floor:cpu"], None)
        )
        for ours, label in OURS.items():
            for anchor, name in ANCHOR_NAMES.items():
                key = f"{anchor}@{turns}"
                what = f"  {turns} turns, CPU above floor: {label.split(' ')[0]} vs {anchor}"
                theirs = above(samples, key) if key in samples else None
                mine = above(samples, f"{ours}@{turns}")
                out.append(within(what, mine, theirs, name, None, NOTES["above"]))
    return out


def agent_turn(settings: Settings) -> Section:
    """ms per agent turn: ours (YAML and Python) next to pydantic-ai and LangGraph."""
    with LLMServer() as server:
        samples, missing = anyio.run(measure, settings, server.base_url)
    packages = ("pydantic-ai-slim", "langgraph", "langchain-openai", "openai", "httpx")
    versions = {package: installed(package) for package in packages}
    medians = {name: statistics.median(values) for name, values in samples.items()}
    return Section(
        "Agent turns against a local OpenAI-compatible server (ratio ours / anchor)",
        rows(samples, missing),
        data={"versions": versions, "median_seconds_per_turn": medians},
    )


AREAS = {"agent_turn": agent_turn}

if __name__ == "__main__":
    sys.exit(main(AREAS))
