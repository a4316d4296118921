"""The --watch view on a real run: plain snapshots off a terminal, in-place redraws on one."""

import io

import py_trees
from py_trees.common import Status

from jianmu_bt import tool
from jianmu_bt.cli.watch import WatchView, is_live_terminal
from jianmu_bt.guard import GuardEnforcer
from jianmu_bt.nodes import ToolNode
from jianmu_bt.runtime import AgentState, StateManager, TreeRunner


class Numbers(AgentState):
    total: int | None = None


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def wipe(path: str) -> str:
    """Delete a path."""
    return "wiped " + path


def watched_run(live: bool):
    root = py_trees.composites.Sequence(
        "Main",
        memory=True,
        children=[
            ToolNode(add, name="Add", arguments={"a": 2, "b": 3}, output_key="total"),
            py_trees.composites.Selector(
                "Careful",
                memory=True,
                children=[
                    ToolNode(wipe, name="Wipe", arguments={"path": "/"}),
                    py_trees.behaviours.Success("Skip"),
                ],
            ),
        ],
    )
    guard = GuardEnforcer.from_config({"deny": ["wipe"]})
    runner = TreeRunner(root, StateManager(Numbers), services={"guard": guard})
    stream = io.StringIO()
    view = WatchView(root, stream, live=live, interval=0.0)
    runner.events.subscribe(view)
    result = runner.run(timeout=10)
    view.finish(result.node_statuses)
    return result, view, stream.getvalue()


def test_plain_mode_prints_snapshots_and_activity_without_escape_codes():
    result, view, text = watched_run(live=False)
    assert result.status == Status.SUCCESS
    assert "\x1b" not in text
    assert view.draws >= 2  # at least one snapshot while running, and the final one
    assert "-- Main: running, tick 1" in text
    final = text[text.rindex("-- Main: finished") :].splitlines()
    assert final[1:3] == ["[+] Main (sequence)", "  [+] Add (tool: add)"]
    assert final[4].startswith("    [x] Wipe (tool: wipe) -- Error: the call to 'wipe' was refused")
    assert final[5] == "    [+] Skip (behaviour: Success)"
    assert text.count("-- Main: finished") == 1
    # The ending tick is drawn once, as the final view, not also as a "running" snapshot.
    running = [part for part in text.split("-- Main: ")[1:] if part.startswith("running")]
    assert running and all("[*] Main (sequence)" in part for part in running)
    assert "  > Add: add -> 5" in text
    assert "  > Wipe: guard says deny to wipe" in text


def test_terminal_mode_redraws_in_place():
    _, view, text = watched_run(live=True)
    redraws = text.count("\x1b[J")
    assert redraws == view.draws - 1  # every drawing but the first moves back over the last
    last = text.split("\x1b[J")[-1]
    assert last.startswith("-- Main: finished")
    assert "> Add: add -> 5" in last  # the latest activity sits under the tree


def test_only_real_terminals_get_the_live_view(monkeypatch):
    class Tty(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setenv("TERM", "xterm")
    assert is_live_terminal(Tty()) and not is_live_terminal(io.StringIO())
    monkeypatch.setenv("TERM", "dumb")
    assert not is_live_terminal(Tty())


@tool
def crunch() -> str:
    """Report progress a thousand times."""
    from jianmu_bt.tools import report_progress

    for done in range(1, 1001):
        report_progress(done, 1000, "crunching")
    return "crunched"


def test_plain_mode_prints_progress_only_when_it_moved_by_a_tenth():
    root = py_trees.composites.Sequence(
        "Main", memory=True, children=[ToolNode(crunch, name="Crunch")]
    )
    runner = TreeRunner(root, StateManager(Numbers))
    stream = io.StringIO()
    view = WatchView(root, stream, live=False, interval=0.0)
    runner.events.subscribe(view)
    result = runner.run(timeout=60)
    view.finish(result.node_statuses)
    reports = [line for line in stream.getvalue().splitlines() if "crunching" in line]
    # The first, one per tenth, and the last (the events carry all 1000).
    assert 2 <= len(reports) <= 12
    assert "1000/1000" in reports[-1]
