"""`jianmu mcp serve --tree FILE` as a real process, with the official SDK client: the run tool
(run events as progress notifications), resources (tree files, traces, durable runs and their
checkpoints; nothing outside what was served) and prompts (the agents' and llm steps' prompts)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp_test_support import PYTHON, ROOT, SERVER_ENV

from jianmu_bt.store import open_store

pytestmark = pytest.mark.anyio

TREE = """
version: 1
name: served
description: A sum and a scripted agent.
state:
  numbers: {type: string, default: "2 + 3", description: The sum to compute.}
  question: {type: string, description: What the agent is asked., input: true}
  total: {type: string}
  answer: {type: string}
tools: [calculator, "mcp_sample_tools:fetch"]
llm:
  provider: scripted
  replies: [answer 5, answer 5, answer 5, answer 5, answer 5, answer 5]
guard: {budgets: {http: 1}}
root:
  sequence:
    name: Main
    children:
      - subtree: {file: sum.yaml}
      - agent:
          name: Solver
          goal: "Answer: {question} (the total is {total})"
          system_prompt: "You are careful with {numbers}."
          tools: [calculator]
          max_iterations: 2
          output: answer
"""

SUBTREE = """
version: 1
name: sum
root:
  tool: {name: Sum, tool: calculator, arguments: {expression: "{numbers}"}, output: total}
"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("served")
    (base / "tree.yaml").write_text(TREE)
    (base / "sum.yaml").write_text(SUBTREE)
    (base / "outside.txt").write_text("secret")
    (base / "traces").mkdir()
    (base / "traces" / "escape.jsonl").symlink_to(base / "outside.txt")
    return base


def serve_args(folder: Path, *extra: str) -> list[str]:
    return [
        "-m",
        "jianmu_bt.cli",
        "mcp",
        "serve",
        "--tree",
        str(folder / "tree.yaml"),
        *extra,
    ]


@pytest.fixture(scope="module")
async def client(folder: Path) -> AsyncIterator[Client]:
    args = serve_args(
        folder,
        "--run-tool",
        "--store",
        str(folder / "runs.db"),
        "--traces",
        str(folder / "traces"),
    )
    params = StdioServerParameters(command=PYTHON, args=args, env=SERVER_ENV, cwd=str(ROOT))
    async with Client(params, read_timeout_seconds=60) as connected:
        yield connected


class Progress:
    def __init__(self) -> None:
        self.messages: list[str] = []
        self.values: list[float] = []

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.values.append(progress)
        self.messages.append(message or "")


async def run_tree(client: Client, **state: Any) -> tuple[dict[str, Any], Progress]:
    progress = Progress()
    result = await client.call_tool("run_served", state, progress_callback=progress)
    assert not result.is_error, result.content[0].text
    return result.structured_content, progress


# -- the run tool ----------------------------------------------------------------------------


async def test_the_run_tool_is_listed_with_the_trees_inputs(client: Client) -> None:
    listed = {t.name: t for t in (await client.list_tools()).tools}
    run = listed["run_served"]
    assert set(listed) == {"calculator", "fetch", "run_served"}
    assert run.input_schema["required"] == ["question"]
    assert {"numbers", "question"} <= set(run.input_schema["properties"])
    assert run.output_schema["properties"]["status"]["enum"] == ["succeeded", "failed", "paused"]


async def test_a_run_reports_its_events_as_progress(client: Client) -> None:
    outcome, progress = await run_tree(client, question="what?", numbers="6 * 7")
    assert outcome["status"] == "succeeded"
    assert outcome["state"]["total"] == "42" and outcome["state"]["answer"] == "answer 5"
    assert progress.values == sorted(set(progress.values)) and progress.values
    assert "Sum: INVALID -> RUNNING" in progress.messages
    assert "tool.call.completed calculator" in progress.messages
    assert progress.messages.index("Sum: RUNNING -> SUCCESS") < progress.messages.index(
        "Solver: RUNNING -> SUCCESS"
    )


async def test_bad_run_input_is_an_error_result_naming_the_field(client: Client) -> None:
    result = await client.call_tool("run_served", {"numbers": "1"})
    assert result.is_error and "question" in result.content[0].text


async def test_the_run_tool_does_not_touch_the_served_calls_budget(client: Client) -> None:
    await run_tree(client, question="a")
    first = await client.call_tool("fetch", {"url": "https://a.example"})
    await run_tree(client, question="b")  # a run must not reset the served calls' counters
    second = await client.call_tool("fetch", {"url": "https://b.example"})
    assert not first.is_error
    assert second.is_error and "'http' effects is used up" in second.content[0].text


# -- resources -------------------------------------------------------------------------------


async def test_the_tree_files_are_resources(client: Client, folder: Path) -> None:
    listed = {r.uri: r for r in (await client.list_resources()).resources}
    main = await client.read_resource("jianmu://tree/tree.yaml")
    sub = await client.read_resource("jianmu://tree/sum.yaml")
    assert {"jianmu://tree/tree.yaml", "jianmu://tree/sum.yaml"} <= set(listed)
    assert main.contents[0].text == TREE and sub.contents[0].text == SUBTREE


async def test_runs_traces_and_checkpoints_are_resources(client: Client, folder: Path) -> None:
    outcome, _ = await run_tree(client, question="resources?")
    run_id = outcome["run_id"]
    templates = [
        t.uri_template for t in (await client.list_resource_templates()).resource_templates
    ]
    listed = {r.uri for r in (await client.list_resources()).resources}
    record = await client.read_resource(f"jianmu://runs/{run_id}")
    trace = await client.read_resource(f"jianmu://traces/{run_id}")
    import json

    document = json.loads(record.contents[0].text)
    checkpoint = await client.read_resource(
        f"jianmu://runs/{run_id}/checkpoints/{document['checkpoints'][-1]}"
    )
    assert "jianmu://runs/{run_id}/checkpoints/{seq}" in templates
    assert f"jianmu://runs/{run_id}" in listed and f"jianmu://traces/{run_id}" in listed
    assert document["status"] == "succeeded" and document["tree"] == "served"
    assert json.loads(checkpoint.contents[0].text)["state"]["question"] == "resources?"
    events = [json.loads(line)["type"] for line in trace.contents[0].text.splitlines()]
    assert "node.status" in events and events[-1] == "tree.finished"
    with open_store(folder / "runs.db") as store:
        assert store.get_run(run_id).status == "succeeded"


@pytest.mark.parametrize(
    "uri",
    [
        "jianmu://traces/escape",  # a symlink out of the traces folder
        "jianmu://traces/..",
        "jianmu://traces/../outside",
        "jianmu://traces/%2e%2e%2foutside",
        "jianmu://tree/outside.txt",  # next to the tree, but not one of its files
        "jianmu://tree/../outside.txt",
        "jianmu://runs/nope",
        "jianmu://runs/../../x/checkpoints/1",
        "file:///etc/passwd",
    ],
)
async def test_nothing_outside_what_was_served_can_be_read(client: Client, uri: str) -> None:
    with pytest.raises(MCPError) as caught:
        await client.read_resource(uri)
    assert caught.value.error.code == -32002
    assert "secret" not in caught.value.error.message


# -- prompts ---------------------------------------------------------------------------------


async def test_the_agents_prompt_is_a_prompt_with_its_arguments(client: Client) -> None:
    prompts = {p.name: p for p in (await client.list_prompts()).prompts}
    solver = prompts["Solver"]
    arguments = {a.name: a for a in solver.arguments}
    assert set(arguments) == {"numbers", "question", "total"}
    assert arguments["numbers"].description == "The sum to compute."
    assert arguments["numbers"].required is False  # it has a default
    assert arguments["question"].required is True
    got = await client.get_prompt("Solver", {"question": "why?", "total": "5"})
    assert [(m.role, m.content.text) for m in got.messages] == [
        ("user", "You are careful with 2 + 3."),
        ("user", "Answer: why? (the total is 5)"),
    ]


async def test_a_missing_prompt_argument_or_prompt_is_a_clear_error(client: Client) -> None:
    with pytest.raises(MCPError, match="needs argument\\(s\\): question"):
        await client.get_prompt("Solver", {"total": "5"})
    with pytest.raises(MCPError, match="Unknown prompt: nope; available: Solver"):
        await client.get_prompt("nope", {})


# -- without the options ---------------------------------------------------------------------


async def test_without_options_only_the_tree_files_and_prompts_are_added(folder: Path) -> None:
    params = StdioServerParameters(
        command=PYTHON, args=serve_args(folder), env=SERVER_ENV, cwd=str(ROOT)
    )
    async with Client(params, read_timeout_seconds=60) as plain:
        tools = [t.name for t in (await plain.list_tools()).tools]
        resources = [r.uri for r in (await plain.list_resources()).resources]
        templates = (await plain.list_resource_templates()).resource_templates
        prompts = [p.name for p in (await plain.list_prompts()).prompts]
    assert tools == ["calculator", "fetch"]
    assert sorted(resources) == ["jianmu://tree/sum.yaml", "jianmu://tree/tree.yaml"]
    assert templates == [] and prompts == ["Solver"]


async def test_a_bad_store_is_a_one_line_error(folder: Path) -> None:
    done = await anyio.run_process(
        [PYTHON, *serve_args(folder, "--store", str(folder / "outside.txt"))],
        env={**os.environ, **SERVER_ENV},
        check=False,
        input=b"",
    )
    stderr = done.stderr.decode()
    assert done.returncode != 0 and "error: --store" in stderr and "outside.txt" in stderr
    assert "Traceback" not in stderr
