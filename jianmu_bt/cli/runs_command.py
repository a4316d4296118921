"""`jianmu runs`: the runs a run store holds; `jianmu runs show RUN_ID`: one run in detail;
`jianmu runs waiting`: every step the store's paused runs wait on (`jianmu_bt.cli.waiting_steps`),
for a person or an outside system that polls the store."""

from __future__ import annotations

import argparse
import datetime
import json
from typing import TYPE_CHECKING, Any

from jianmu_bt.cli.call_text import call_summary, escape_hidden
from jianmu_bt.cli.errors import CLIError
from jianmu_bt.cli.stores import STORE_HELP, open_run_store, store_errors, waiting_statuses
from jianmu_bt.cli.subcommand import add_command
from jianmu_bt.cli.summary import usage_line

if TYPE_CHECKING:
    from jianmu_bt.store import RunStore

HELP = (
    "list recorded runs, show one (`jianmu runs show RUN_ID`), or what paused runs wait for "
    "(`jianmu runs waiting`)"
)
EPILOG = """\
examples:
  jianmu runs
  jianmu runs --json
  jianmu runs show run_3f2a9c0d1e2b --json
  jianmu runs waiting --json       # questions, external calls, held calls of paused runs
  jianmu runs --store /data/runs.db

Run statuses: running, paused, succeeded, failed. Call statuses: running, done, failed, held,
in_doubt, denied, skipped, waiting (a question or an external call waits for a value).
Waiting steps' kinds: question (--answer), external (--result), held and in_doubt (--approve,
--deny).
"""


def add_parser(commands: Any) -> None:
    """Register `runs` on the top-level subparsers."""
    parser = add_command(commands, "runs", help=HELP, epilog=EPILOG, handler=handle)
    parser.add_argument(
        "words",
        nargs="*",
        metavar="show RUN_ID | waiting",
        help="show one run instead of the list, or list what the paused runs wait for",
    )
    parser.add_argument("--store", metavar="PATH", help=STORE_HELP)
    parser.add_argument("--json", action="store_true", help="print JSON")


def handle(args: argparse.Namespace) -> int:
    """List the runs, or show one."""
    show = args.words[:1] == ["show"] and len(args.words) == 2
    if args.words and not show and args.words != ["waiting"]:
        raise CLIError(
            f"unknown runs command {' '.join(args.words)!r}; use `jianmu runs show RUN_ID` "
            "or `jianmu runs waiting`"
        )
    store = open_run_store(args.store, create=False)
    try:
        with store_errors():
            if args.words == ["waiting"]:
                _waiting(store, args.json)
            elif args.words:
                _show(store, args.words[1], args.json)
            else:
                _list(store, args.json)
    finally:
        store.close()
    return 0


def _waiting(store: RunStore, as_json: bool) -> None:
    """Every step the store's paused runs wait on, oldest run first (`waiting_steps`)."""
    from jianmu_bt.cli.waiting_steps import run_waiting_steps, waiting_row_line

    steps = run_waiting_steps(store)
    if as_json:
        print(json.dumps({"waiting": steps}, indent=2, default=str))
        return
    if not steps:
        print(f"nothing waits in {store.location}")
        return
    for step in steps:
        print(waiting_row_line(step))


def _when(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).isoformat(timespec="seconds")


def _list(store: RunStore, as_json: bool) -> None:
    runs = store.runs()
    rows = [
        {
            "run_id": run.run_id,
            "tree": run.tree,
            "status": run.status,
            "started": _when(run.started),
            "updated": _when(run.updated),
        }
        for run in runs
    ]
    if as_json:
        print(json.dumps({"runs": rows}, indent=2))
        return
    if not rows:
        print(f"no runs in {store.location}")
        return
    for row in rows:
        print(f"{row['run_id']}  {row['status']:<9} {row['tree']:<24} started {row['started']}")


#: The journal's transient statuses as the call statuses users see: an approved call that has
#: not started yet still waits (`held`); a call the tree cancelled (a Timeout, a parent that
#: moved on) ended without a result (`failed`). `journal_status` keeps the journal's word.
CALL_STATUS_SHOWN = {"approved": "held", "cancelled": "failed"}
#: Longest arguments of a finished call shown by `runs show` (the rest is said, and `--json` has
#: all); a call that waits for a decision is always shown whole.
FINISHED_ARGUMENT_CHARS = 120


def run_document(store: RunStore, run_id: str) -> dict[str, Any]:
    """A run as `jianmu runs show --json` prints it."""
    run = store.get_run(run_id)
    history = store.history(run_id)
    # The latest checkpoint that holds the state (those written after a call ended leave it out).
    data = next((c.data for c in reversed(history) if "state" in c.data), {})
    progress = history[-1].data.get("progress") if history else None
    journal = store.journal(run_id)
    calls = [
        {
            "call_id": entry.call_id,
            "key": entry.key,
            "tool": entry.tool,
            "arguments": entry.arguments,
            "status": CALL_STATUS_SHOWN.get(entry.status, entry.status),
            "journal_status": entry.status,
            "result": entry.result,
        }
        for entry in journal
        if entry.kind == "tool"
    ]
    return {
        "run_id": run.run_id,
        "tree": run.tree,
        "tree_path": run.tree_path,
        "status": run.status,
        "reason": run.reason,
        "started": _when(run.started),
        "updated": _when(run.updated),
        "parent_run": run.parent_run,
        "state": data.get("state") or {},
        "calls": calls,
        "llm_turns": sum(1 for entry in journal if entry.kind == "llm"),
        "turns": [_turn(entry) for entry in journal if entry.kind == "llm"],
        "usage": (data.get("state") or {}).get("usage") or {},
        "checkpoints": len(history),
        "progress": progress or {},
    }


def _turn(entry: Any) -> dict[str, Any]:
    """One LLM turn of the journal: which model answered, how it ended, what it cost."""
    reply = entry.result if isinstance(entry.result, dict) else {}
    return {
        "key": entry.key,
        "status": entry.status,
        "model": reply.get("model"),
        "provider": reply.get("provider"),
        "finish_reason": reply.get("finish_reason"),
        "usage": reply.get("usage"),
        "cost": reply.get("cost"),
        "thinking": bool(reply.get("reasoning")),
        "error": reply.get("error"),
    }


def _show(store: RunStore, run_id: str, as_json: bool) -> None:
    document = run_document(store, run_id)
    if as_json:
        print(json.dumps(document, indent=2, default=str))
        return
    print(f"run {document['run_id']} of '{document['tree']}': {document['status']}")
    if document["reason"]:
        print(f"  reason: {document['reason']}")
    print(
        f"  started {document['started']}, updated {document['updated']}, "
        f"{document['checkpoints']} checkpoint(s), {document['llm_turns']} LLM turn(s)"
    )
    if document["usage"].get("requests"):
        print(f"  usage: {usage_line(document['usage'])}")
    print("calls:" if document["calls"] else "calls: none")
    waits = waiting_statuses()
    for call in document["calls"]:
        # A call that waits (a decision, a value) is shown whole; the others cut, saying so.
        limit = None if call["journal_status"] in waits else FINISHED_ARGUMENT_CHARS
        shown = call_summary(call["tool"], call["arguments"], limit)
        print(f"  {call['status']:<8} {escape_hidden(call['call_id'])}  {shown}")
