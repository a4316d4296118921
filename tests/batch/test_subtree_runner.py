"""`runner:` on a subtree node: every tool call of the nodes inside goes to that runner (checked
with a LocalSandbox, which needs no Ray), the calls outside stay in this process; a wrong runner
is reported by `validate` at its key, without building the tree."""

from __future__ import annotations

import os

import pytest

from jianmu_bt.loader import TreeLoadError, load_tree, validate_source
from jianmu_bt.sandbox import LocalSandbox

TREE = """
version: 1
name: split
state:
  inner: {type: string}
  outer: {type: string}
tools: [calculator]
trees:
  heavy:
    tool: {name: Inside, tool: calculator, arguments: {expression: "6 * 7"}, output: inner}
root:
  sequence:
    name: Main
    children:
      - subtree: {name: Remote, tree: heavy, runner: RUNNER}
      - tool: {name: Outside, tool: calculator, arguments: {expression: "2 + 2"}, output: outer}
"""


@pytest.fixture
def sandboxed(monkeypatch) -> list[tuple[str, str]]:
    """The calls LocalSandbox ran, as (tool, workspace)."""
    sent: list[tuple[str, str]] = []
    real_run = LocalSandbox.run

    async def counted(self, tool, args):
        sent.append((tool.name, self.workspace))
        return await real_run(self, tool, args)

    monkeypatch.setattr(LocalSandbox, "run", counted)
    return sent


def write(tmp_path, runner: str):
    path = tmp_path / "split.yaml"
    path.write_text(TREE.replace("RUNNER", runner), encoding="utf-8")
    return path


def test_the_calls_inside_a_subtree_go_to_its_runner_and_only_those(tmp_path, sandboxed):
    with load_tree(write(tmp_path, "{kind: local, warm: false}")) as tree:
        result = tree.run()
        assert result.ok, result.reason
        assert (result.state["inner"], result.state["outer"]) == ("42", "4")
        assert [name for name, _ in sandboxed] == ["calculator"]  # Inside only, not Outside
        # The tree closed the runner after the run (its workspace is gone); the next run
        # builds it again.
        assert not os.path.exists(sandboxed[0][1])
        assert tree.run().ok
        assert len(sandboxed) == 2 and sandboxed[1][1] != sandboxed[0][1]


def test_a_subtree_runner_of_inprocess_changes_nothing(tmp_path, sandboxed):
    with load_tree(write(tmp_path, "inprocess")) as tree:
        assert tree.run().ok
    assert sandboxed == []


@pytest.mark.parametrize(
    ("runner", "message"),
    [
        ("podman", "unknown runner 'podman'"),
        ("{kind: ray, gpus: 1}", "runner ray: unknown option(s) gpus"),
        ("{kind: local, cpus: 2}", "runner local:"),
    ],
)
def test_a_wrong_subtree_runner_is_reported_at_its_node(tmp_path, runner, message):
    path = write(tmp_path, runner)
    found = [d for d in validate_source(path) if d.severity == "error"]
    assert len(found) == 1 and message in found[0].message, found
    assert (found[0].line, found[0].code) == (15, "tool-runner")  # the subtree line
    with pytest.raises(TreeLoadError):
        load_tree(path)
