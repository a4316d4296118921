"""`jianmu resume RUN --edit CALL_ID=JSON`: a held call approved with other arguments from the
command line runs as edited, once; a bad edit is refused in one line and changes nothing."""

from __future__ import annotations

import json
from pathlib import Path

from bill_tree import bill_setup, ledger
from cli_helpers import assert_clean_failure, jianmu

from jianmu_bt.store import SQLiteStore


def _paused(tmp_path: Path) -> tuple[list[str], dict[str, str], str]:
    store, env = bill_setup(tmp_path)
    paused = jianmu("run", tmp_path / "bill.yaml", *store, "--run-id", "R", "--approve", "later",
                    env=env)  # fmt: skip
    assert paused.returncode == 3, paused.stdout + paused.stderr
    with SQLiteStore(tmp_path / "runs.db", create=False) as runs:
        (held,) = [e for e in runs.journal("R") if e.status == "held"]
    return store, env, held.call_id


def test_an_edit_from_the_command_line_runs_the_edited_call(tmp_path):
    store, env, call_id = _paused(tmp_path)
    edit = tmp_path / "edit.json"
    edit.write_text(json.dumps({"amount": 50}))
    done = jianmu("resume", "R", *store, "--edit", f"{call_id}=@{edit}", "--json", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert ledger(tmp_path) == ["50"]
    with SQLiteStore(tmp_path / "runs.db", create=False) as runs:
        approved = next(e for e in runs.journal_log("R") if e.status == "approved")
    assert approved.result == {"by": "cli", "arguments": {"amount": 50}}
    again = jianmu("resume", "R", *store, env=env)  # finished: nothing runs twice
    assert_clean_failure(again, "has already succeeded")
    assert ledger(tmp_path) == ["50"]


def test_a_bad_edit_is_refused_in_one_line_and_changes_nothing(tmp_path):
    store, env, call_id = _paused(tmp_path)
    cases = {
        f"{call_id}={{amount: 5": "not JSON at line 1 column 2",
        f"{call_id}=[50]": "must be a JSON object",
        f"{call_id}=" + '{"amount": "lots"}': "do not fit pay's schema: arguments.amount",
        f"{call_id}=" + '{"amount": 5, "to": "me"}': "arguments.to: unexpected argument",
        'call_nope={"amount": 5}': "has no call 'call_nope' waiting",
        f"{call_id}=@{tmp_path / 'missing.json'}": "cannot read",
    }
    for value, message in cases.items():
        assert_clean_failure(jianmu("resume", "R", *store, "--edit", value, env=env), message)
    with SQLiteStore(tmp_path / "runs.db", create=False) as runs:
        assert [e.status for e in runs.journal_log("R")] == ["held"]
        assert runs.get_run("R").status == "paused"
    assert ledger(tmp_path) == []


def test_a_call_answered_from_the_command_line_does_not_run(tmp_path):
    store, env, call_id = _paused(tmp_path)
    refused = jianmu("resume", "R", *store, "--respond", f"{call_id}=  ", env=env)
    assert_clean_failure(refused, "expected CALL_ID=TEXT")
    done = jianmu("resume", "R", *store, "--respond", f"{call_id}=Paid by card = done.", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert ledger(tmp_path) == []
    with SQLiteStore(tmp_path / "runs.db", create=False) as runs:
        (denied,) = [e for e in runs.journal_log("R") if e.status == "denied"]
        state = runs.latest_checkpoint("R").data["state"]
    assert denied.result["ok"] and denied.result["by"] == "cli"
    assert state["receipt"].endswith("\nPaid by card = done.")
