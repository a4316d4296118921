"""Pausing on PENDING, saving the guard state as JSON, and resuming in a fresh enforcer/process."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from jianmu_bt.guard import Decision, GuardContext, GuardEnforcer, GuardSnapshotError
from jianmu_bt.tools import ToolCall

CONFIG = {
    "approve": ["http_request"],
    "budgets": {"http": 2},
    "rate_limits": {"calculator": "1/60s"},
}
BATCH = [
    ToolCall("http_request", {"url": "http://a"}, "c1"),
    ToolCall("http_request", {"url": "http://b"}, "c2"),
]


def paused(toolset, clock):
    """A run that already made one http call and is now held on a batch of two."""
    enforcer = GuardEnforcer.from_config(CONFIG, context=GuardContext(clock=clock))
    enforcer.approvals.grant("http_request", {"url": "http://first"})
    first = ToolCall("http_request", {"url": "http://first"}, "c0")
    assert enforcer.check(first, toolset.get("http_request")).allowed
    enforcer.record(first, toolset.get("http_request"), result_ok=True)
    enforcer.record(ToolCall("calculator", {}, "c_calc"), toolset.get("calculator"), True)
    verdicts = enforcer.preflight(BATCH, toolset)
    assert [v.decision for v in verdicts] == [Decision.PENDING, Decision.PENDING]
    return enforcer


def test_context_round_trips_through_json(clock):
    ctx = GuardContext(effect_counts={"HTTP": 2}, clock=clock, state={"user": "ann"})
    ctx.add_call_time("bash")
    restored = GuardContext.from_dict(json.loads(json.dumps(ctx.to_dict())), clock=clock)
    assert restored.to_dict() == ctx.to_dict()
    assert restored.effect_count("http") == 2 and restored.call_times("bash") == [clock.now]
    assert dict(restored.state) == {}  # the state view belongs to the run's StateManager


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ({"effect_counts": {"http": -1}}, "effect_counts.http"),
        ({"call_times": {"bash": ["noon"]}}, "call_times.bash.0"),
        ({"counters": {}}, "counters"),
    ],
)
def test_a_bad_context_snapshot_names_the_entry(data, match):
    with pytest.raises(GuardSnapshotError, match=match):
        GuardContext.from_dict(data)


def test_a_paused_run_resumes_in_a_fresh_enforcer(toolset, clock):
    saved = json.dumps(paused(toolset, clock).snapshot())

    resumed = GuardEnforcer.from_config(CONFIG, context=GuardContext(clock=clock))
    resumed.restore(json.loads(saved))
    assert [r.call_id for r in resumed.approvals.pending()] == ["c1", "c2"]
    resumed.approvals.approve("c1")
    resumed.approvals.approve("c2")
    verdicts = resumed.preflight(BATCH, toolset)
    # the budget of 2 http effects remembers the call made before the pause
    assert [v.decision for v in verdicts] == [Decision.ALLOW, Decision.DENY]
    assert "budget of 2 'http' effects" in verdicts[1].reason
    calc = resumed.check(ToolCall("calculator", {}, "c9"), toolset.get("calculator"))
    assert calc.decision is Decision.DENY and calc.policy == "rate_limit"


def test_a_bad_snapshot_changes_nothing(toolset, clock):
    enforcer = paused(toolset, clock)
    before = enforcer.snapshot()
    broken = {**before, "context": {"effect_counts": {"http": "many"}}}
    with pytest.raises(GuardSnapshotError, match=r"effect_counts\.http"):
        enforcer.restore(broken)
    with pytest.raises(GuardSnapshotError, match="approvals"):
        enforcer.restore({"context": before["context"]})
    assert enforcer.snapshot() == before


RESUME = textwrap.dedent(
    """
    import json, sys
    from jianmu_bt.guard import GuardEnforcer
    from jianmu_bt.tools import ToolCall, ToolSet, tool

    @tool(name="http_request", effect_tags=("http",))
    def http_request(url: str) -> str:
        return url

    config, snapshot = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
    enforcer = GuardEnforcer.from_config(config)
    enforcer.restore(snapshot)
    waiting = [r.call_id for r in enforcer.approvals.pending()]
    enforcer.approvals.approve("c2")
    enforcer.approvals.reject("c1", "not that host")
    batch = [ToolCall.from_dict(c) for c in json.load(open(sys.argv[3]))]
    verdicts = enforcer.preflight(batch, ToolSet.from_tools([http_request]))
    print(json.dumps({"waiting": waiting, "verdicts": [v.to_dict() for v in verdicts]}))
    """
)


def test_a_paused_run_resumes_in_a_new_process(toolset, clock, tmp_path):
    enforcer = paused(toolset, clock)
    files = {
        "config.json": CONFIG,
        "snapshot.json": enforcer.snapshot(),
        "batch.json": [c.to_dict() for c in BATCH],
    }
    for name, data in files.items():
        (tmp_path / name).write_text(json.dumps(data))
    (tmp_path / "resume.py").write_text(RESUME)
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, str(tmp_path / "resume.py"), *(str(tmp_path / n) for n in files)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["waiting"] == ["c1", "c2"]
    c1, c2 = out["verdicts"]
    assert (c1["decision"], c1["policy"]) == ("deny", "approval")
    assert "not that host" in c1["reason"]
    assert c2["decision"] == "allow"  # c1 is refused, so c2 fits the budget (1 used of 2)
