"""Pause on a held call and resume in a new process, for every shape of tree; decisions on held
and in-doubt calls; a run that cannot be resumed says why in one line. Both run stores."""

from __future__ import annotations

import json

from durable_helpers import APPROVALS, TREES, cli_env, jianmu, ledger_names, show, show_cli

APPROVAL_ORDER = ["selector", "parallel", "step", "agent"]


def _held(document):
    return [call for call in document["calls"] if call["status"] == "held"]


def test_each_held_call_pauses_the_run_and_resume_never_repeats_a_finished_step(
    tmp_path, store_location
):
    ledger = tmp_path / "ledger"
    env = cli_env(ledger)
    result = jianmu(
        "run",
        APPROVALS,
        "--store",
        store_location,
        "--run-id",
        "R1",
        "--approve",
        "later",
        "--json",
        env=env,
        cwd=tmp_path,
    )
    assert result.returncode == 3, result.stderr
    report = json.loads(result.stdout)
    assert report["run_id"] == "R1" and report["status"] == "paused"
    assert [c["tool"] for c in report["waiting"]] == ["deploy"]
    seen = []
    for target in APPROVAL_ORDER:  # Selector, Parallel, ToolNode, the agent's executor batch
        document = show(store_location, "R1", env, tmp_path)
        assert document["status"] == "paused"
        (held,) = _held(document)
        assert held["arguments"] == {"target": target}
        seen.append(target)
        result = jianmu(
            "resume",
            "R1",
            "--store",
            store_location,
            "--approve",
            held["call_id"],
            "--json",
            env=env,
            cwd=tmp_path,
        )
        assert result.returncode in (0, 3), result.stderr
        assert json.loads(result.stdout)["status"] == (
            "succeeded" if target == "agent" else "paused"
        )
        counts = ledger_names(ledger)
        assert all(n == 1 for n in counts.values()), counts  # nothing ran twice
    document = show_cli(store_location, "R1", env, tmp_path)
    assert document["status"] == "succeeded" and document["state"]["answer"] == "deployed"
    assert ledger.read_text().split("\n")[:2] == ["first", "second"]
    assert sum(ledger_names(ledger).values()) == 8
    statuses = {
        c["arguments"].get("target") or c["arguments"].get("name"): c["status"]
        for c in document["calls"]
    }
    assert set(statuses.values()) == {"done"}


def test_a_denied_held_call_fails_its_node_and_the_tree_decides(tmp_path, store_location):
    ledger = tmp_path / "ledger"
    env = cli_env(ledger)
    args = ("--store", store_location)
    assert (
        jianmu(
            "run", APPROVALS, *args, "--run-id", "R", "--approve", "later", env=env, cwd=tmp_path
        ).returncode
        == 3
    )
    (held,) = _held(show(store_location, "R", env, tmp_path))
    result = jianmu("resume", "R", *args, "--deny", held["call_id"], env=env, cwd=tmp_path)
    # The selector's deploy is denied: the selector has no other child, the run fails.
    assert result.returncode == 1, result.stdout
    document = show(store_location, "R", env, tmp_path)
    assert document["status"] == "failed"
    denied = [c for c in document["calls"] if c["status"] == "denied"]
    assert denied and "denied" in denied[0]["result"]["error"]
    assert not any(name.startswith("deploy") for name in ledger_names(ledger))


def test_a_call_in_flight_at_a_crash_is_in_doubt_and_waits_for_a_decision(tmp_path, store_location):
    ledger = tmp_path / "ledger"
    env = cli_env(ledger)
    args = ("--store", store_location)
    crash = TREES / "crash.yaml"
    died = jianmu("run", crash, *args, "--run-id", "R", env=env, cwd=tmp_path)
    assert died.returncode == 137
    resumed = jianmu("resume", "R", *args, "--json", env=env, cwd=tmp_path)
    assert resumed.returncode == 3, resumed.stderr
    report = json.loads(resumed.stdout)
    assert [(c["tool"], c["status"]) for c in report["waiting"]] == [("crash_once", "in_doubt")]
    assert ledger_names(ledger) == {"before": 1, "risky": 1}  # "before" did not run again
    call_id = report["waiting"][0]["call_id"]
    skipped = jianmu("resume", "R", *args, "--deny", call_id, env=env, cwd=tmp_path)
    assert skipped.returncode == 1  # the node sees a failed result; the Sequence fails
    document = show(store_location, "R", env, tmp_path)
    risky = next(c for c in document["calls"] if c["tool"] == "crash_once")
    assert risky["status"] == "skipped" and "skipped" in risky["result"]["error"]
    assert ledger_names(ledger) == {"before": 1, "risky": 1}


def test_approving_a_call_in_doubt_runs_it_again(tmp_path, store_location):
    ledger = tmp_path / "ledger"
    env = cli_env(ledger)
    args = ("--store", store_location)
    assert (
        jianmu(
            "run", TREES / "crash.yaml", *args, "--run-id", "R", env=env, cwd=tmp_path
        ).returncode
        == 137
    )
    waiting = json.loads(jianmu("resume", "R", *args, "--json", env=env, cwd=tmp_path).stdout)[
        "waiting"
    ]
    result = jianmu(
        "resume", "R", *args, "--approve", waiting[0]["call_id"], "--json", env=env, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["state"]["out"] == "wrote risky"
    assert ledger_names(ledger) == {"before": 1, "risky": 2, "after": 1}
