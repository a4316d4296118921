"""payout.yaml tested with a reviewer's decisions: its guard holds every write_file call.

Run with `pytest examples/testing/test_held_calls.py` (the jianmu pytest plugin gives the
`jianmu_run` fixture once jianmu-bt is installed). The overlay stubs write_file: no test writes.
"""

from pathlib import Path

HERE = Path(__file__).parent
TREE = HERE / "payout.yaml"
NO_DISK = {"tools": {"write_file": {"result": "written"}}}


def test_an_approved_payout_is_recorded(jianmu_run):
    run = jianmu_run(TREE, overlay=NO_DISK, decisions={"write_file": "approve"})

    assert run.succeeded, run.reason
    assert run.calls("write_file")[0].arguments == {"path": "payout.txt", "content": "360"}


def test_a_denied_payout_fails_with_the_reviewers_reason(jianmu_run):
    run = jianmu_run(TREE, overlay=NO_DISK, decisions={"write_file": ("deny", "over the limit")})

    assert not run.succeeded
    assert "over the limit" in run.reason
    assert run.calls("write_file") == []


def test_a_held_payout_stops_the_run_there(jianmu_run):
    run = jianmu_run(TREE, overlay=NO_DISK, decisions={"write_file": "hold"})

    assert run.result.run_status == "paused"
    assert [(call.tool, call.arguments["content"]) for call in run.held] == [("write_file", "360")]
