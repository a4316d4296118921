"""Run by test_guard_flow: phase `pause` runs until a call waits for approval and writes a
snapshot; phase `resume` (a new process) restores it, approves, and finishes the run."""

import json
import sys
from pathlib import Path

import anyio

from jianmu_bt import ToolCall, ToolSet, tool
from jianmu_bt.guard import GuardEnforcer
from jianmu_bt.nodes import ToolExecutor
from jianmu_bt.runtime import AgentState, StateManager, TreeRunner

LOG = Path(sys.argv[2])


@tool(effect_tags=["net"])
def lookup(term: str) -> str:
    """Look something up."""
    with LOG.open("a") as log:
        log.write(f"lookup {term}\n")
    return f"found {term}"


@tool(parallel_safe=False, effect_tags=["payment"])
def pay(amount: int) -> str:
    """Pay money (needs approval)."""
    with LOG.open("a") as log:
        log.write(f"pay {amount}\n")
    return f"paid {amount}"


def build(state):
    guard = GuardEnforcer.from_config({"approve": ["pay"]})
    executor = ToolExecutor(ToolSet.from_tools([lookup, pay]))
    return TreeRunner(executor, state, services={"guard": guard}), guard


async def pause(snapshot: Path) -> None:
    state = StateManager(AgentState)
    state.set(
        "actions", [ToolCall("lookup", {"term": "x"}, "c1"), ToolCall("pay", {"amount": 5}, "c2")]
    )
    runner, guard = build(state)

    async with anyio.create_task_group() as tg:

        async def watch():
            while not guard.approvals.pending():
                await anyio.sleep(0.01)
            snapshot.write_text(state.to_json())
            tg.cancel_scope.cancel()  # the process "ends" while the run is paused

        tg.start_soon(watch)
        await runner.arun()


def resume(snapshot: Path) -> None:
    state = StateManager.from_snapshot(AgentState, json.loads(snapshot.read_text()))
    runner, guard = build(state)
    saved = json.loads(snapshot.read_text())["guard"]
    pending = saved["approvals"]["records"]
    assert [r["call_id"] for r in pending] == ["c2"], pending
    # The guard's counters and approvals come back from the snapshot; the reviewer's decision
    # arrives through the public API, then the run continues.
    guard.restore(saved)
    guard.approvals.approve("c2", note="ok by reviewer")
    result = runner.run()
    print(json.dumps({"status": result.status.value, "messages": result.state["messages"]}))


if __name__ == "__main__":
    phase, snapshot = sys.argv[1], Path(sys.argv[3])
    if phase == "pause":
        anyio.run(pause, snapshot)
    else:
        resume(snapshot)
