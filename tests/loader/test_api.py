"""The Python API: load_tree from text and path, tools and providers, running, approvals, schema."""

import os
import sys
import threading
import time
from pathlib import Path

import jsonschema
import pytest
import yaml
from py_trees.common import Status

from jianmu_bt import BaseToolProvider, Tool, tool
from jianmu_bt.guard import GuardEnforcer
from jianmu_bt.llm import ScriptedProvider
from jianmu_bt.loader import (
    Diagnostic,
    TreeInputError,
    TreeLoadError,
    format_json_schema,
    load_tree,
    node_info,
    node_kinds,
    validate_source,
)

QUICK = """
version: 1
name: quick
description: Sum, then check.
state:
  numbers: {type: string, default: "2 + 3 * 4"}
  total: {type: string}
tools: [calculator]
root:
  sequence:
    name: Main
    children:
      - tool: {name: Sum, tool: calculator, arguments: "{numbers}", output: total}
      - condition: {name: HasTotal, check: "total == '14'"}
"""


@tool
def shout(text: str) -> str:
    """Upper-case the text."""
    return text.upper()


def test_load_tree_from_text_and_from_a_path(write):
    path = write("quick.yaml", QUICK)
    for source in (QUICK, str(path), path):
        tree = load_tree(source)
        try:
            result = tree.run()
            assert result.ok and result.state["total"] == "14"
            assert tree.name == "quick" and tree.description == "Sum, then check."
            assert tree.path == (None if source is QUICK else path)
            assert tree.model.name == "quick"
        finally:
            tree.close()


def test_a_file_without_name_is_named_after_the_file(write):
    path = write("nameless.yaml", "root: {condition: {check: 'True'}}\n")
    with load_tree(path) as tree:
        assert tree.name == "nameless"
    with load_tree("root: {condition: {check: 'True'}}") as tree:
        assert tree.name == "tree"


def test_text_sources_are_named_string_in_messages():
    (diagnostic,) = validate_source("root: {sequence: {}}")
    assert isinstance(diagnostic, Diagnostic)
    assert (
        str(diagnostic) == "<string>:1:8: error: missing required key 'children' in 'root.sequence'"
    )


def test_python_tools_are_available_by_name_and_beat_builtins():
    @tool(name="calculator")
    def fake_calculator(expression: str) -> str:
        """Always 'fake'."""
        return "fake"

    text = QUICK.replace("total == '14'", "total == 'fake'").replace(
        "      - condition", "      - tool: {tool: shout, arguments: {text: hi}}\n      - condition"
    )
    with load_tree(text, tools=[fake_calculator, shout]) as tree:
        result = tree.run()
        assert result.ok, result.reason
        assert tree.toolset.get("calculator") is fake_calculator
        assert tree.toolset.get("shout") is shout


def test_module_attr_tools_are_imported_next_to_the_tree_file(write):
    write(
        "helpers_for_tree.py",
        "from jianmu_bt import tool\n\n@tool\ndef twice(n: int) -> int:\n"
        '    """Double."""\n    return 2 * n\n',
    )
    path = write(
        "uses_module.yaml",
        "state: {out: integer}\ntools: ['helpers_for_tree:twice']\n"
        "root: {tool: {tool: twice, arguments: {n: 21}, output: out}}\n",
    )
    try:
        with load_tree(path) as tree:
            assert tree.run().state["out"] == 42
    finally:
        sys.modules.pop("helpers_for_tree", None)


def test_validate_source_never_raises_for_bad_input(tmp_path):
    cases = [
        tmp_path / "missing.yaml",
        str(tmp_path / "missing.yml"),
        tmp_path,
        "- just\n- a list\n",
        "::: not yaml :::\n  - [",
        "",
        "root: !!python/object:os.system {}",
    ]
    for source in cases:
        found = validate_source(source)
        assert found and all(d.is_error for d in found), source
    (binary := tmp_path / "binary.yaml").write_bytes(b"\xff\xfe\x00root")
    assert "not UTF-8" in validate_source(binary)[0].message


def test_inputs_are_written_and_required_ones_are_asked_for():
    text = """
state:
  question: {type: string, input: true}
  answer: {type: string}
root:
  set: {values: {answer: "you asked: {question}"}}
"""
    with load_tree(text) as tree:
        assert tree.inputs == ["question"]
        with pytest.raises(TreeInputError, match="--set question="):
            tree.run()
        result = tree.run({"question": "why?"})
        assert result.state["answer"] == "you asked: why?"


@pytest.mark.anyio
async def test_arun_in_a_running_event_loop():
    tree = load_tree(QUICK)
    async with tree:
        result = await tree.arun(timeout=5)
        assert result.ok


def test_tick_by_tick_with_events():
    events = []
    with load_tree(QUICK) as tree:
        tree.events.subscribe(lambda event: events.append(event.type))
        status = tree.tick()
        for _ in range(100):
            if status != Status.RUNNING:
                break
            time.sleep(0.01)
            status = tree.tick()
        assert status == Status.SUCCESS
        assert "tool.call.completed" in events and "node.status" in events


def test_every_behaviour_carries_its_node_info_with_stable_ids():
    with load_tree(QUICK) as first, load_tree(QUICK) as second:
        assert list(first.nodes) == ["root", "root/0", "root/1"] == list(second.nodes)
        info = node_info(first.nodes["root/0"])
        assert (info.kind, info.category, info.name, info.detail) == (
            "tool",
            "action",
            "Sum",
            "calculator",
        )
        assert (info.line, info.col) == (13, 9)
        assert info.location == "<string>:13:9"


def test_approvals_from_the_tree():
    text = QUICK.replace(
        "tools: [calculator]", "tools: [calculator]\nguard: {approve: [calculator]}"
    )
    with load_tree(text) as tree:
        status = tree.tick()
        for _ in range(100):
            if tree.pending_approvals():
                break
            time.sleep(0.01)
            status = tree.tick()
        (pending,) = tree.pending_approvals()
        assert status == Status.RUNNING
        tree.approve(pending.call_id, "fine")
        for _ in range(200):
            status = tree.tick()
            if status != Status.RUNNING:
                break
            time.sleep(0.01)
        assert status == Status.SUCCESS and tree.state.get("total") == "14"


def test_a_rejected_call_fails_the_step_with_the_reason():
    guard = GuardEnforcer.from_config({"approve": ["calculator"]})

    def reviewer():
        for _ in range(500):
            if guard.approvals.pending():
                guard.approvals.reject(guard.approvals.pending()[0].call_id, "not today")
                return
            time.sleep(0.01)

    thread = threading.Thread(target=reviewer)
    thread.start()
    with load_tree(QUICK, guard=guard) as tree:
        result = tree.run(timeout=10)
    thread.join()
    assert result.status == Status.FAILURE and "not today" in result.reason


def test_the_llm_argument_replaces_the_files_llm():
    text = "llm: {provider: scripted, replies: [from file]}\nroot: {agent: {goal: hi}}\n"
    with load_tree(text, llm=ScriptedProvider(["from argument"])) as tree:
        assert tree.run().state["final_answer"] == "from argument"
    with load_tree(text) as tree:
        assert tree.run().state["final_answer"] == "from file"


class CountingProvider(BaseToolProvider):
    """A provider whose tools exist only after initialize()."""

    def __init__(self, fail=False):
        self.fail = fail
        self.started = self.closed = 0
        self.tools: list[Tool] = []

    async def initialize(self):
        if self.fail:
            raise ConnectionError("no server here")
        self.started += 1
        self.tools = [shout]

    def get_tools(self, **kwargs):
        return list(self.tools)

    async def close(self):
        self.closed += 1
        self.tools = []


PROVIDED = """
state: {out: string}
root:
  sequence:
    children:
      - tool: {tool: shout, arguments: {text: hi}, output: out}
      - agent: {goal: go, tools: [shout], llm: {provider: scripted, replies: [done, again]}}
"""


def test_providers_start_before_the_run_and_close_after_it():
    provider = CountingProvider()
    findings = validate_source(PROVIDED, providers=[provider])
    assert [d.code for d in findings] == ["provider-tool", "provider-tool"]
    with load_tree(PROVIDED, providers=[provider]) as tree:
        result = tree.run()
        assert result.ok, result.reason
        assert result.state["out"] == "HI"
        assert (provider.started, provider.closed) == (1, 1)
        assert tree.run().ok and (provider.started, provider.closed) == (2, 2)


def test_tick_mode_starts_providers_once_and_close_closes_them():
    provider = CountingProvider()
    tree = load_tree(PROVIDED, providers=[provider])
    status = tree.tick()
    while status == Status.RUNNING:
        time.sleep(0.01)
        status = tree.tick()
    assert status == Status.SUCCESS and provider.started == 1 and provider.closed == 0
    assert tree.toolset.get("shout") is shout
    tree.close()
    assert provider.closed == 1


def test_a_provider_that_cannot_start_fails_the_run_with_the_reason():
    with load_tree(PROVIDED, providers=[CountingProvider(fail=True)]) as tree:
        result = tree.run()
    assert result.status == Status.FAILURE
    assert "could not start: ConnectionError: no server here" in result.reason


def test_a_tool_no_provider_offers_is_named_when_the_tree_starts():
    text = PROVIDED.replace("tools: [shout]", "tools: [whisper]")
    with load_tree(text, providers=[CountingProvider()]) as tree:
        result = tree.run()
    assert result.status == Status.FAILURE
    assert "node 'Agent': no tool named 'whisper'" in result.reason


def test_an_mcp_server_from_the_file_runs_and_is_gone_after_close(write):
    pytest.importorskip("mcp")
    path = write(
        "mcp.yaml",
        f"""
state: {{total: string}}
tools:
  - mcp:
      command: {sys.executable}
      args: [-m, jianmu_bt.mcp, serve, --tools, calculator]
      prefix: m
root:
  sequence:
    children:
      - tool: {{tool: m_calculator, arguments: {{expression: "6 * 7"}}, output: total}}
      - condition: {{check: "total == '42'"}}
""",
    )
    before = _children()
    with load_tree(path) as tree:
        result = tree.run(timeout=60)
        assert result.ok, result.reason
    assert _children() == before


def _children() -> set[int]:
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == os.getpid():
                found.add(int(entry.name))
    return found


def test_closing_leaves_no_thread_behind():
    before = threading.active_count()
    tree = load_tree(QUICK)
    tree.tick()
    tree.close()
    tree.close()  # idempotent
    assert threading.active_count() == before
    with pytest.raises(RuntimeError, match="closed"):
        tree.tick()


def test_the_json_schema_accepts_a_good_file_and_refuses_bad_keys():
    schema = format_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    good = yaml.safe_load(QUICK)
    good["trees"] = {
        "again": {"retry": {"num_failures": 2, "child": {"set": {"values": {"a": 1}}}}}
    }
    good["llm"] = {"provider": "scripted", "replies": ["x"]}
    good["guard"] = {"deny": ["bash"], "rate_limits": {"calculator": "5/60s"}}
    good["tools"].append({"mcp": {"command": "server", "prefix": "s"}})
    good["root"]["sequence"]["children"].append({"subtree": {"tree": "again", "remap": {"a": "b"}}})
    good["root"]["sequence"]["children"].append(
        {"behaviour": {"class": "py_trees.behaviours:Success"}}
    )
    assert list(validator.iter_errors(good)) == []
    bad = yaml.safe_load(QUICK)
    bad["root"]["sequence"]["children"][0]["tool"]["nmae"] = "x"
    bad["root"]["sequence"]["children"].append({"sequense": {"children": []}})
    assert len(list(validator.iter_errors(bad))) >= 1
    node = schema["$defs"]["SequenceConfig"]["properties"]
    assert {"children", "memory", "name", "id"} <= set(node)
    refs = {
        v["$ref"].rsplit("/", 1)[-1]
        for v in schema["$defs"]["SequenceConfig"]["properties"]["children"]["items"]["oneOf"]
    }
    assert len(refs) == len(node_kinds())


def test_to_dot_draws_the_tree_when_the_display_layer_is_there():
    pytest.importorskip("jianmu_bt.viz")
    with load_tree(QUICK) as tree:
        text = tree.to_dot()
    assert "digraph" in text and "Sum" in text and "HasTotal" in text


def test_load_tree_error_lists_every_problem():
    with pytest.raises(TreeLoadError) as caught:
        load_tree(
            "root: {sequence: {children: [{tool: {tool: nope}}, {condition: {check: '1 +'}}]}}"
        )
    messages = [d.message for d in caught.value.errors]
    assert messages[0].startswith("unknown tool 'nope'")
    assert messages[1] == "bad condition: invalid syntax"
