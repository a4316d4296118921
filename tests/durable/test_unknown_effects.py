"""Unknown effects are effects: kill -9 during a call, then resume.

A call in flight at the crash runs again only when its tool is declared read-only (`read_only=True`,
MCP `readOnlyHint: true`) or idempotent; a tool that declares nothing (a plain `@tool`, an MCP
tool its server does not annotate) is held in doubt, its effect not repeated.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from pathlib import Path

import pytest
from durable_helpers import TREES, cli_env, jianmu, ledger_names, show, start, wait_for

PYTHON_TREE = """
version: 1
name: python_effects
tools: ["effect_tools:charge", "effect_tools:peek"]
root:
  tool: {name: Step, tool: @TOOL@, arguments: {name: one}}
"""

MCP_TREE = """
version: 1
name: mcp_effects
tools:
  - mcp:
      command: "@PYTHON@"
      args: ["@SERVER@"]
      env: {JIANMU_LEDGER: "@LEDGER@", JIANMU_STEP_GATE: "@GATE@", JIANMU_SERVER_PIDS: "@PIDS@"}
      prefix: shop
      timeout: 60
root:
  tool: {name: Step, tool: @TOOL@, arguments: @ARGUMENTS@}
"""


def _fill(text: str, **values: str) -> str:
    for key, value in values.items():
        text = text.replace(f"@{key}@", value)
    return text


def _kill_during_the_call(tmp_path: Path, tree: Path, env: dict[str, str], line: str) -> None:
    """Start the run, kill -9 it once the call's effect is in the ledger (the call still runs)."""
    ledger = Path(env["JIANMU_LEDGER"])
    run = start(
        "run", tree, "--store", tmp_path / "runs.db", "--run-id", "R", env=env, cwd=tmp_path
    )
    try:
        assert wait_for(lambda: ledger_names(ledger)[line] == 1, timeout=60), run.stderr
    finally:
        run.send_signal(signal.SIGKILL)
        run.wait(timeout=30)
    assert run.returncode == -signal.SIGKILL


def _resume(tmp_path: Path, env: dict[str, str], gate: Path):
    """Open the gate (a repeated call runs through) and resume the run."""
    gate.touch()
    return jianmu("resume", "R", "--store", tmp_path / "runs.db", env=env, cwd=tmp_path)


def _call_status(tmp_path: Path, env: dict[str, str]) -> str:
    (call,) = show(tmp_path / "runs.db", "R", env, tmp_path)["calls"]
    return call["status"]


def _env(tmp_path: Path, gate: Path) -> dict[str, str]:
    """The environment of the test's `jianmu` processes. The long heartbeat keeps a resume on a
    loaded machine from losing its lease while the server starts (a killed holder is seen dead at
    once on the same host, so taking its run over does not wait for it)."""
    return {**cli_env(tmp_path / "ledger"), "JIANMU_STEP_GATE": str(gate), "JIANMU_HEARTBEAT": "10"}


def _python_env(tmp_path: Path) -> tuple[dict[str, str], Path]:
    gate = tmp_path / "gate"
    env = _env(tmp_path, gate)
    env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], str(TREES)])
    return env, gate


def test_a_plain_tool_in_flight_at_kill_9_is_in_doubt_not_run_again(tmp_path: Path) -> None:
    env, gate = _python_env(tmp_path)
    tree = tmp_path / "tree.yaml"
    tree.write_text(_fill(PYTHON_TREE, TOOL="charge"))
    _kill_during_the_call(tmp_path, tree, env, "charge")

    resumed = _resume(tmp_path, env, gate)
    assert resumed.returncode == 3, resumed.stdout + resumed.stderr  # paused for a decision
    assert "it was running when the run stopped" in resumed.stdout
    assert ledger_names(tmp_path / "ledger")["charge"] == 1
    assert _call_status(tmp_path, env) == "in_doubt"
    # A person decides: it did not happen, run it again.
    (call,) = show(tmp_path / "runs.db", "R", env, tmp_path)["calls"]
    store = tmp_path / "runs.db"
    approved = jianmu(
        "resume", "R", "--store", store, "--approve", call["call_id"], env=env, cwd=tmp_path
    )
    assert approved.returncode == 0, approved.stdout + approved.stderr
    assert ledger_names(tmp_path / "ledger")["charge"] == 2


def test_a_read_only_tool_in_flight_at_kill_9_runs_again(tmp_path: Path) -> None:
    env, gate = _python_env(tmp_path)
    tree = tmp_path / "tree.yaml"
    tree.write_text(_fill(PYTHON_TREE, TOOL="peek"))
    _kill_during_the_call(tmp_path, tree, env, "peek")

    resumed = _resume(tmp_path, env, gate)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert ledger_names(tmp_path / "ledger")["peek"] == 2  # it ran again, as declared safe
    assert _call_status(tmp_path, env) == "done"


@pytest.fixture
def mcp_run(tmp_path: Path):
    """(env, gate, write_tree) for a tree calling the effects server; servers left behind by a
    killed client are ended afterwards."""
    ledger, gate, pids = tmp_path / "ledger", tmp_path / "gate", tmp_path / "server.pids"
    env = _env(tmp_path, gate)

    def write_tree(tool: str, arguments: str) -> Path:
        tree = tmp_path / "tree.yaml"
        tree.write_text(
            _fill(
                MCP_TREE,
                PYTHON=sys.executable,
                SERVER=str(TREES / "effects_server.py"),
                LEDGER=str(ledger),
                GATE=str(gate),
                PIDS=str(pids),
                TOOL=tool,
                ARGUMENTS=arguments,
            )
        )
        return tree

    yield env, gate, write_tree
    gate.touch()
    for pid in pids.read_text().split() if pids.exists() else ():
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pid), signal.SIGKILL)


def test_an_unannotated_mcp_tool_in_flight_at_kill_9_is_in_doubt(tmp_path: Path, mcp_run) -> None:
    env, gate, write_tree = mcp_run
    _kill_during_the_call(tmp_path, write_tree("shop_pay", "{amount: 5}"), env, "pay")

    resumed = _resume(tmp_path, env, gate)
    assert resumed.returncode == 3, resumed.stdout + resumed.stderr
    assert ledger_names(tmp_path / "ledger")["pay"] == 1, "the payment was made a second time"
    assert _call_status(tmp_path, env) == "in_doubt"


def test_a_read_only_mcp_tool_in_flight_at_kill_9_runs_again(tmp_path: Path, mcp_run) -> None:
    env, gate, write_tree = mcp_run
    _kill_during_the_call(tmp_path, write_tree("shop_quote", "{symbol: ACME}"), env, "quote")

    resumed = _resume(tmp_path, env, gate)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert ledger_names(tmp_path / "ledger")["quote"] == 2
    assert _call_status(tmp_path, env) == "done"


def test_an_idempotent_mcp_tool_in_flight_at_kill_9_runs_again(tmp_path: Path, mcp_run) -> None:
    env, gate, write_tree = mcp_run
    _kill_during_the_call(tmp_path, write_tree("shop_refund", "{amount: 5}"), env, "refund")

    resumed = _resume(tmp_path, env, gate)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert ledger_names(tmp_path / "ledger")["refund"] == 2
    assert _call_status(tmp_path, env) == "done"
