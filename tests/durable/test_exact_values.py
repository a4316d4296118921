"""Values JSON cannot hold exactly (Decimal, dates, sets, bytes, tuples, enums, dataclasses,
pydantic models) and a `number` field's integer default pass between side-effecting tools; a run
paused or killed later resumes without "the tree changed" and runs no finished call again.
Both run stores."""

from __future__ import annotations

import signal
from decimal import Decimal
from pathlib import Path

import pytest
from durable_helpers import TREES, cli_env, jianmu, ledger_names, start, wait_for

from jianmu_bt.loader import load_tree
from jianmu_bt.store import open_store

TYPED = TREES / "typed.yaml"


@pytest.fixture(autouse=True)
def _typed_tools_importable(monkeypatch):
    """This process reads the run's records too: it finds their classes as a resume would."""
    monkeypatch.syspath_prepend(str(TREES))


def _lines(ledger: Path) -> list[str]:
    return [line.split()[0] for line in ledger.read_text().splitlines()]


def _check_records(location: str, run_id: str) -> str:
    """The journal holds the typed values exactly; returns the held deploy's call id."""
    from typed_tools import quote_value

    with open_store(location, create=False) as store:
        run = store.get_run(run_id)
        assert run.inputs["times"] == 3.0 and type(run.inputs["times"]) is float
        assert store.checkpoint(run_id, 1).data["state"]["times"] == 3.0
        rows = {e.tool: e for e in store.journal(run_id)}
        assert rows["quote"].result["output"] == quote_value()
        settled = rows["settle"]
        assert settled.arguments == {"quote": quote_value(), "times": 3.0}
        assert type(settled.arguments["times"]) is float
        assert settled.result["output"]["paid"] == Decimal("30.300")
        assert rows["deploy"].status == "held"
        return rows["deploy"].call_id


def test_typed_values_pause_and_resume_through_the_python_api(
    tmp_path, store_location, monkeypatch
):
    ledger = tmp_path / "ledger"
    monkeypatch.setenv("JIANMU_LEDGER", str(ledger))
    with load_tree(TYPED) as tree:
        paused = tree.run(store=store_location, run_id="R", hold="pause")
    assert paused.paused, paused.reason
    assert _lines(ledger) == ["quote", "settle", "held"]
    held = _check_records(store_location, "R")
    with load_tree(TYPED) as again:  # as a new process would: a new tree, the same store
        done = again.resume("R", store=store_location, approve=[held])
    assert done.ok and done.run_status == "succeeded", done.reason
    assert _lines(ledger) == ["quote", "settle", "held", "deploy"]  # nothing ran twice
    from typed_tools import quote_value

    assert done.state["quote"] == quote_value() and done.state["times"] == 3.0
    assert done.state["settled"]["receipt"] == quote_value()["receipt"]


def test_typed_values_survive_kill_9_and_resume_in_new_processes(tmp_path, store_location):
    ledger, gate = tmp_path / "ledger", tmp_path / "gate"
    env = {**cli_env(ledger), "JIANMU_STEP_GATE": str(gate)}
    args = ("--store", store_location)
    first = start("run", TYPED, *args, "--run-id", "R", "--approve", "later", env=env, cwd=tmp_path)
    waiting = Path(f"{ledger}.waiting")
    assert wait_for(lambda: waiting.exists() or first.poll() is not None, timeout=60)
    assert first.poll() is None, first.stderr.read() if first.stderr else ""
    first.send_signal(signal.SIGKILL)  # inside Hold, after Quote and Settle have happened
    first.wait(timeout=30)
    gate.touch()
    resumed = jianmu("resume", "R", *args, env=env, cwd=tmp_path)
    # Quote and Settle come from the journal (their digests match); Hold is idempotent, so
    # it runs again; Deploy waits for its approval.
    assert resumed.returncode == 3, resumed.stdout + resumed.stderr
    assert "changed" not in resumed.stdout + resumed.stderr
    held = _check_records(store_location, "R")
    done = jianmu("resume", "R", *args, "--approve", held, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    counts = ledger_names(ledger)
    assert counts == {"quote": 1, "settle": 1, "held": 1, "deploy": 1}, counts


AGENT_TREE = """
version: 1
name: typed_agent
state:
  answer: {type: string}
tools: ["typed_tools:settle", "typed_tools:deploy"]
guard: {approve: [deploy]}
root:
  agent:
    name: Agent
    goal: "Settle the quote, then deploy"
    tools: [settle, deploy]
    max_iterations: 4
    output: answer
"""


def _agent_replies():
    """An LLM whose tool calls carry typed arguments (as a provider built in Python may give)."""
    from typed_tools import quote_value

    from jianmu_bt.llm.scripted import ScriptedProvider

    return ScriptedProvider(
        [
            {
                "tool_calls": [
                    {"name": "settle", "arguments": {"quote": quote_value(), "times": 2.0}}
                ]
            },
            {"tool_calls": [{"name": "deploy", "arguments": {"target": "agent"}}]},
            "settled and deployed",
        ]
    )


def test_an_llm_turn_with_typed_values_replays_exactly(tmp_path, store_location, monkeypatch):
    ledger = tmp_path / "ledger"
    monkeypatch.setenv("JIANMU_LEDGER", str(ledger))
    with load_tree(AGENT_TREE, base_dir=TREES, llm=_agent_replies()) as tree:
        paused = tree.run(store=store_location, run_id="A", hold="pause")
    assert paused.paused, paused.reason
    with open_store(store_location, create=False) as store:
        (held,) = [e for e in store.journal("A") if e.status == "held"]
    with load_tree(AGENT_TREE, base_dir=TREES, llm=_agent_replies()) as again:
        done = again.resume("A", store=store_location, approve=[held.call_id])
    assert done.ok, done.reason
    assert _lines(ledger) == ["settle", "deploy"] and done.state["answer"] == "settled and deployed"


def test_an_llm_reply_that_cannot_be_recorded_fails_its_turn_as_a_replay_would(
    tmp_path, store_location
):
    from jianmu_bt.llm.scripted import ScriptedProvider

    replies = [{"tool_calls": [{"name": "deploy", "arguments": {"target": object()}}]}]
    with load_tree(AGENT_TREE, base_dir=TREES, llm=ScriptedProvider(replies)) as tree:
        failed = tree.run(store=store_location, run_id="B", hold="pause")
    assert failed.run_status == "failed"
    with open_store(store_location, create=False) as store:
        (turn,) = [e for e in store.journal("B") if e.kind == "llm"]
    assert turn.status == "failed"
    error = turn.result["error"]
    assert "reply['tool_calls'][0]" in error and "['target'] is of type object" in error
