"""Overlay on a loaded tree (Python API): by tool name, by node, the LLM; the guard still rules;
names the tree does not have are reported all at once with suggestions."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from jianmu_bt.llm import ScriptedProvider
from jianmu_bt.loader import load_tree
from jianmu_bt.testing import Overlay, OverlayError, Recorded, Stub, open_tree, run_tree

ASK_CALCULATOR = {"tool_calls": [{"name": "calculator", "arguments": {"expression": "10 / 2"}}]}


def test_tools_by_name_are_substituted_in_steps_and_agents(tree_file: Path):
    calls = []

    def calculator(expression: str) -> str:
        calls.append(expression)
        return f"<{expression}>"

    overlay = Overlay(
        tools={"calculator": calculator, "read_file": Stub(result="a note")},
        llm=[ASK_CALCULATOR, "done"],
    )
    tree = open_tree(tree_file, overlay)
    try:
        run = run_tree(tree)
    finally:
        tree.close()
    assert run.succeeded, run.reason
    assert calls == ["2 + 3", "10 / 2"]
    assert run.state["total"] == "<2 + 3>" and run.state["note"] == "a note"
    assert run.state["answer"] == "done"
    assert [(c.node, c.tool) for c in run.calls()] == [
        ("Sum", "calculator"),
        ("ReadNote", "read_file"),
        ("Helper.tools", "calculator"),
    ]


def test_the_model_is_offered_the_same_tools(tree_file: Path):
    model = ScriptedProvider(["done"])
    plain = load_tree(tree_file, llm=ScriptedProvider(["done"]))
    result = plain.run()
    assert result.ok, result.reason
    expected = plain.runner.context.llm.calls[0].tools
    plain.close()
    tree = open_tree(tree_file, Overlay(tools={"calculator": Stub(result="1")}, llm=model))
    try:
        run_tree(tree)
    finally:
        tree.close()
    assert model.calls[0].tools == expected
    assert [t["name"] for t in expected] == ["calculator", "read_file"]


def test_the_guard_still_refuses_and_counts_substituted_tools(tmp_path: Path):
    path = tmp_path / "guarded.yaml"
    path.write_text(
        "version: 1\nstate: {out: {type: string}}\ntools: [read_file, write_file]\n"
        "guard: {deny: [write_file], budgets: {file_read: 1}}\n"
        "root:\n  sequence:\n    children:\n"
        "      - tool: {name: Write, tool: write_file, arguments: {path: a, content: b}}\n",
        encoding="utf-8",
    )
    written = Recorded([{"result": "written"}])
    tree = open_tree(path, Overlay(tools={"write_file": written}))
    try:
        run = run_tree(tree)
    finally:
        tree.close()
    assert not run.succeeded and "deny" in run.reason
    assert run.calls() == []  # refused before it started: the substitute never ran
    assert written.unused("write_file") == ["recorded call 1 of 'write_file' was never made"]
    assert [e["decision"] for e in run.trace.refused()] == ["deny"]

    path.write_text(
        path.read_text().replace(
            "write_file, arguments: {path: a, content: b}",
            "read_file, arguments: {path: a}}\n"
            "      - tool: {name: Again, tool: read_file, arguments: {path: a}",
        ),
        encoding="utf-8",
    )
    tree = open_tree(path, Overlay(tools={"read_file": Stub(result="x")}))
    try:
        run = run_tree(tree)
    finally:
        tree.close()
    # The budget of one file read is spent by the first substituted call.
    assert [c.node for c in run.calls()] == ["Write"]
    assert not run.succeeded and "budget" in run.reason


def test_node_rules_beat_tool_rules_and_match_by_id_name_or_pattern(tree_file: Path):
    overlay = Overlay(
        tools={"calculator": Stub(result="tool rule"), "read_file": Stub(result="r")},
        nodes={
            "root/0": Stub(result="by id"),
            "Helper": {"llm": [ASK_CALCULATOR, "helped"], "tools": {"calculator": Stub("own")}},
        },
        llm=["never asked"],
    )
    tree = open_tree(tree_file, overlay)
    try:
        run = run_tree(tree)
    finally:
        tree.close()
    assert run.state["total"] == "by id"
    assert run.state["answer"] == "helped"
    assert run.calls("calculator")[1].output == "own"
    assert overlay.llm is not None and overlay.llm.calls == []  # type: ignore[attr-defined]

    tree = open_tree(tree_file, Overlay(nodes={"Re*": Stub(result="pattern")}, llm=["ok"]))
    try:
        assert run_tree(tree).state["note"] == "pattern"
    finally:
        tree.close()


def test_an_agents_own_model_is_replaced_too(tmp_path: Path):
    path = tmp_path / "own.yaml"
    path.write_text(
        "version: 1\nstate: {answer: {type: string}}\n"
        "root:\n  agent:\n    name: Solo\n    goal: hi\n    output: answer\n"
        "    llm: {provider: openai_compatible, base_url: 'http://127.0.0.1:9/v1', model: m}\n",
        encoding="utf-8",
    )
    tree = open_tree(path, Overlay(llm=["offline answer"]))
    try:
        run = run_tree(tree)
    finally:
        tree.close()
    assert run.succeeded and run.state["answer"] == "offline answer"


def test_a_reply_function_plays_the_model(tree_file: Path):
    def model(messages, tools):
        if messages[-1]["role"] == "tool":
            return f"the tool said {messages[-1]['content']}"
        return ASK_CALCULATOR

    tree = open_tree(tree_file, Overlay(tools={"read_file": Stub(result="n")}, llm=model))
    try:
        run = run_tree(tree)
    finally:
        tree.close()
    assert run.state["answer"] == "the tool said 5.0"


def test_everything_the_tree_lacks_is_reported_at_once(tree_file: Path):
    overlay = Overlay(
        tools={"calculater": Stub(1), "read_file": Stub(2)},
        nodes={"Summ": Stub(3), "Main": Stub(4), "Sum": {"llm": ["x"]}, "Helper": Stub(5)},
    )
    tree = load_tree(tree_file)
    try:
        with pytest.raises(OverlayError) as caught:
            overlay.apply(tree)
    finally:
        tree.close()
    messages = [d.message for d in caught.value.diagnostics]
    assert len(messages) == 5
    text = "\n".join(messages)
    assert "the tree has no tool 'calculater' (did you mean 'calculator'?)" in text
    assert "the tree has no node 'Summ' (did you mean 'Sum'?)" in text
    assert "node 'Main' is a sequence node: only a tool step takes a substitute" in text
    assert "node 'Sum' is a tool node: `llm:` and `tools:` are for agent, llm and executor" in text
    assert "node 'Helper' is an agent node: only a tool step takes a substitute" in text
    assert all(d.file == "<overlay>" for d in caught.value.diagnostics)


def test_python_values_that_are_not_substitutes_are_refused():
    with pytest.raises(TypeError, match=r"write Stub\(result=...\)"):
        Overlay(tools={"calculator": "42"})
    with pytest.raises(TypeError, match="takes 'llm' and 'tools'"):
        Overlay(nodes={"Helper": {"model": ["x"]}})
    with pytest.raises(TypeError, match="an LLMProvider, a list of scripted replies"):
        Overlay(llm="hello")


# One Overlay for many runs: a module-level constant, as a test suite shares it.
SHARED = Overlay(
    tools={"calculator": Recorded([{"arguments": {"expression": "2 + 3"}, "result": "5"}])},
    nodes={"ReadNote": Stub(result="n")},
    llm=[ASK_CALCULATOR, "done"],
)


@pytest.mark.parametrize("round_", [1, 2])
def test_one_overlay_serves_run_after_run(tree_file: Path, round_: int):
    # The Helper's calculator call is not in the recording: one divergence each run, not more.
    tree = open_tree(tree_file, SHARED)
    try:
        run = run_tree(tree, strict=False)
    finally:
        tree.close()
    assert run.state["total"] == "5" and run.state["answer"] == "done", run.reason
    assert len(SHARED.divergences) == 1 and "call 2 of 'calculator'" in SHARED.divergences[0]
    assert SHARED.unused() == []


def test_one_overlay_applied_to_two_trees_keeps_their_calls_apart(tree_file: Path):
    overlay = Overlay(
        tools={"calculator": Recorded([{"result": "first"}, {"result": "second"}])},
        nodes={"ReadNote": Stub(result="n")},
        llm=["done"],
    )
    one, two = open_tree(tree_file, overlay), open_tree(tree_file, overlay)
    try:
        assert run_tree(one).state["total"] == "first"
        assert run_tree(two).state["total"] == "first"  # its own recording, from the start
        for tree in (one, two):
            assert overlay.unused(tree) == ["recorded call 2 of 'calculator' was never made"]
            assert overlay.applied(tree).llm.calls  # type: ignore[union-attr]
        assert overlay.applied(one).llm is not overlay.applied(two).llm
    finally:
        one.close()
        two.close()


def test_a_substitute_answers_here_when_the_run_has_a_tool_runner(tree_file: Path):
    from jianmu_bt.sandbox.local import LocalSandbox

    seen: list[str] = []

    def calculator(expression: str) -> str:
        seen.append(expression)
        return "5"

    tree = open_tree(
        tree_file,
        Overlay(tools={"calculator": calculator, "read_file": Stub(result="n")}, llm=["done"]),
    )
    sandbox = LocalSandbox()
    tree.runner.context.services["runner"] = sandbox  # every call would go to a child process
    try:
        run = run_tree(tree)
    finally:
        tree.close()
        anyio.run(sandbox.aclose)
    assert run.succeeded, run.reason
    assert seen == ["2 + 3"]  # the function ran in this process: the sandbox never saw the call
    assert [c.ok for c in run.calls()] == [True, True]


def test_tool_names_that_differ_only_in_case_are_refused():
    with pytest.raises(OverlayError) as caught:
        Overlay(
            tools={"Calculator": Stub(1), "calculator": Stub(2)},
            nodes={"Helper": {"tools": {"read_file": Stub(3), "READ_FILE": Stub(4)}}},
        )
    messages = [d.message for d in caught.value.diagnostics]
    assert messages == [
        "tools 'Calculator' and 'calculator' differ only in case: tool names are "
        "case-insensitive, so give the substitute once",
        "tools 'read_file' and 'READ_FILE' differ only in case: tool names are "
        "case-insensitive, so give the substitute once",
    ]
