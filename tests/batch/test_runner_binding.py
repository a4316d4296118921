"""`runner:` on a tool entry of a tree file: the tool's calls go to that runner (checked here with
a LocalSandbox, which needs no Ray); a wrong runner is a load error with its position."""

from __future__ import annotations

import os
import uuid

import anyio
import pytest

from jianmu_bt.loader import TreeLoadError, load_tree
from jianmu_bt.sandbox import LocalSandbox
from jianmu_bt.sandbox.bound import RunnerBoundTool

TOOLS = (
    "import os\nfrom jianmu_bt.tools import tool\n\n"
    "@tool\ndef pid_of(x: int) -> int:\n    '''The pid.'''\n    return os.getpid()\n"
)
TREE = """
version: 1
name: bound
state:
  pid: {type: integer}
tools:
  - {python: "MODULE:pid_of", runner: RUNNER}
root:
  sequence:
    name: Main
    children:
      - tool: {name: Where, tool: pid_of, arguments: {x: 1}, output: pid}
"""


CALC = """
version: 1
name: calc
state:
  total: {type: string}
tools:
  - {builtin: calculator, runner: {kind: local, warm: false}}
root:
  sequence:
    name: Main
    children:
      - tool: {name: Sum, tool: calculator, arguments: {expression: "6 * 7"}, output: total}
"""


def _tree(tmp_path, runner: str):
    module = f"bindtools_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{module}.py").write_text(TOOLS)
    path = tmp_path / "tree.yaml"
    path.write_text(TREE.replace("MODULE", module).replace("RUNNER", runner))
    return path


def test_runner_local_sends_the_tools_calls_to_a_sandbox_process(tmp_path, monkeypatch):
    sent: list[str] = []
    real_run = LocalSandbox.run

    async def counted(self, tool, args):
        sent.append(tool.name)
        return await real_run(self, tool, args)

    monkeypatch.setattr(LocalSandbox, "run", counted)
    path = tmp_path / "calc.yaml"
    path.write_text(CALC)
    with load_tree(path) as tree:
        calculator = tree.toolset.get("calculator")
        assert isinstance(calculator, RunnerBoundTool) and calculator.kind == "local"
        result = tree.run()
    assert result.ok, result.reason
    assert result.state["total"] == "42"
    assert sent == ["calculator"]  # the call went to the sandbox, not this process


def test_runner_inprocess_keeps_the_tool_as_it_is(tmp_path):
    with load_tree(_tree(tmp_path, "inprocess")) as tree:
        assert not isinstance(tree.toolset.get("pid_of"), RunnerBoundTool)
        assert tree.run().state["pid"] == os.getpid()


@pytest.mark.parametrize(
    ("runner", "message"),
    [
        ("podman", "unknown runner 'podman': use one of inprocess, local, docker, ray"),
        ("{kind: ray, gpus: 1}", "runner ray: unknown option(s) gpus"),
        ("[ray]", "runner"),
        # bad values: found when the tree loads (the runner is built then), not at the first call
        ("{kind: ray, timeout: -1}", "runner ray: timeout must be > 0 seconds, got -1"),
        ("{kind: ray, memory: lots}", "runner ray:"),
        ("{kind: local, isolate_calls: sometimes}", "runner local: LocalSandbox(isolate_calls="),
        ("{kind: local, cpus: 2}", "runner local:"),
    ],
)
def test_a_wrong_runner_is_a_load_error_at_its_entry(tmp_path, runner, message):
    with pytest.raises(TreeLoadError) as caught:
        load_tree(_tree(tmp_path, runner))
    first = caught.value.diagnostics[0]
    assert message in first.message
    assert first.line == 7


def test_the_tree_closes_a_bound_runner_at_the_end_of_each_run_and_at_close(tmp_path):
    path = tmp_path / "calc.yaml"
    path.write_text(CALC)
    tree = load_tree(path)
    calculator = tree.toolset.get("calculator")
    assert isinstance(calculator, RunnerBoundTool)
    first = calculator.runner  # built when the tree loaded
    assert isinstance(first, LocalSandbox) and os.path.isdir(first.workspace)
    assert tree.run().state["total"] == "42"
    assert not os.path.exists(first.workspace)  # closed at the run's end: workspace gone
    assert tree.run().state["total"] == "42"  # the next run builds another one
    third = calculator.runner  # built outside a run
    assert third is not first and os.path.isdir(third.workspace)
    anyio.run(tree.aclose)
    assert not os.path.exists(third.workspace)
