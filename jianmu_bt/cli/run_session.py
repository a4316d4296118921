"""What `jianmu run` and `jianmu resume` share: watching a run, answering holds, reporting it.

Exit status: 0 the run succeeded, 1 it failed (or could not start), 3 it paused: a call waits
for a decision (`jianmu resume RUN --approve CALL_ID` or `--deny CALL_ID` continues it), a
question for its answer (`--answer QUESTION_ID=VALUE`) or an external call for its result
(`--result CALL_ID=JSON`; `jianmu_bt.cli.waiting_steps` lists them), 75 its
run store failed and the run stopped at once (`jianmu resume RUN` once the store is back).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from jianmu_bt.cli.activity import ActivityLog
from jianmu_bt.cli.approvals import ApprovalDesk
from jianmu_bt.cli.errors import CLIError
from jianmu_bt.cli.summary import builtin_fields, changed_keys, state_snapshot, summary_lines
from jianmu_bt.cli.waiting_steps import continue_line, paused_heading, step_line, waiting_step
from jianmu_bt.cli.watch import WatchView

EXIT_PAUSED = 3
EXIT_CODES = {"succeeded": 0, "failed": 1, "paused": EXIT_PAUSED}


def add_output_options(parser: argparse.ArgumentParser) -> None:
    """--trace, --watch, --timeout and --json, as `run` and `resume` take them."""
    parser.add_argument("--trace", metavar="OUT.jsonl", help="write every run event as JSON lines")
    parser.add_argument(
        "--watch",
        action="store_true",
        help="show the tree's node statuses live while it runs (plain text when not a terminal)",
    )
    parser.add_argument(
        "--timeout", type=float, metavar="S", help="stop the run after S seconds (a failure)"
    )
    parser.add_argument(
        "--json", action="store_true", help="print the result as JSON instead of a summary"
    )


def _open_trace(path: str, tree: Any, stack: ExitStack) -> None:
    from jianmu_bt.runtime import TraceWriter
    from jianmu_bt.viz.trace_status import (
        TRACE_FORMAT,
        TREE_NODES_EVENT,
        record_state_writes,
        tree_nodes_data,
    )

    target = Path(path)
    if not target.parent.is_dir():
        raise CLIError(f"--trace {path}: the directory '{target.parent}' does not exist")
    try:
        writer = stack.enter_context(TraceWriter(target))
    except OSError as exc:
        raise CLIError(f"--trace {path}: cannot write ({exc.strerror})") from None
    stack.callback(tree.events.subscribe(writer))
    # The node layout lets `jianmu dot --status-from` colour a freshly loaded copy of the tree.
    tree.events.emit(TREE_NODES_EVENT, nodes=tree_nodes_data(tree.root), format=TRACE_FORMAT)
    # State writes too, so a replay (`jianmu view --trace`) shows the state at every event.
    stack.callback(record_state_writes(tree))


def run_and_report(
    tree: Any,
    args: argparse.Namespace,
    mode: str,
    start: Callable[[], Any],
    waiting: Callable[[], list[Any]] = list,
    *,
    recorded: bool = True,
    model: str | None = None,
    before: Mapping[str, Any] | None = None,
) -> int:
    """Run `start()` with the tree watched and its holds answered (`mode`: ask, all, none or
    later), print the summary or JSON, and return the exit status. `waiting()` lists the steps
    a paused run waits on (journal rows: `waiting_steps`).

    `recorded`: the run is in a run store (else no id is shown: none could be looked up);
    `model`: what answered as the LLM, when not the tree's own (default: said for a tree whose
    LLM is scripted in its file); `before`: the state the changes are counted from (a resume's:
    the state its run paused with; default: the tree's state now)."""
    if args.timeout is not None and args.timeout <= 0:
        raise CLIError(f"--timeout {args.timeout:g}: give a positive number of seconds")
    with ExitStack() as stack:
        before = state_snapshot(tree.state) if before is None else before
        written: dict[str, None] = {}
        stack.callback(tree.state.subscribe(lambda keys: written.update(dict.fromkeys(keys))))
        activity = ActivityLog()
        stack.callback(tree.events.subscribe(activity))
        if mode != "later":
            stack.callback(tree.events.subscribe(ApprovalDesk(tree, mode)))
        elif not getattr(args, "view", False):  # (with --view, questions wait for the page)
            # A server's question cannot wait for a later process: declined at once.
            # Imported here: cli.questions loads the runtime layer, which the parser must not.
            from jianmu_bt.cli.questions import QuestionDesk

            stack.callback(tree.events.subscribe(QuestionDesk(tree, "none")))
        # The desk attends the run's questions (unattended, they would be declined unasked).
        stack.enter_context(tree.attend_questions())
        if args.trace:
            _open_trace(args.trace, tree, stack)
        view = None
        if args.watch:
            # With --json, stdout carries only the JSON document.
            view = WatchView(tree.root, sys.stderr if args.json else sys.stdout)
            stack.callback(tree.events.subscribe(view))
        result = start()
        if view is not None:
            view.finish(result.node_statuses)
        after = state_snapshot(tree.state)
        keys = changed_keys(before, after, written, hidden=builtin_fields(tree))
        changes = {key: after[key] for key in keys}
        held = [waiting_step(entry) for entry in waiting()] if result.paused else []
        if args.json:
            report = _as_json(tree, result, changes, held, recorded)
            print(json.dumps(report, indent=2, default=str))
        else:
            lines = summary_lines(
                tree.name,
                result,
                activity,
                changes,
                show_activity=view is None or view.live,
                model=model or _scripted_note(tree),
                recorded=recorded,
            )
            print("\n".join(lines + _paused_lines(result, held)))
    return EXIT_CODES[result.run_status]


SCRIPTED_IN_TREE = "scripted (replies written in the tree file, not a real model)"


def _scripted_note(tree: Any) -> str | None:
    """The summary's model line for a tree whose LLM is a scripted one (fixed replies from
    the file), else None."""
    from jianmu_bt.llm.scripted import ScriptedProvider

    return SCRIPTED_IN_TREE if isinstance(tree.runner.context.llm, ScriptedProvider) else None


def overlay_model_note(overlay: Any, path: str) -> str | None:
    """The summary's model line for a run whose LLM replies an overlay file gives (all of
    them, or those of the nodes it names); None when the overlay gives none."""
    name = Path(path).name
    if overlay.llm is not None:
        return f"replayed (replies from the overlay file {name}, not a real model)"
    if any(rule.llm is not None for rule in overlay.nodes.values()):
        return f"replayed for the nodes the overlay file {name} names (the others: the tree's)"
    return None


def _paused_lines(result: Any, steps: list[dict[str, Any]]) -> list[str]:
    """What waits in a paused run, each step whole and escaped (a reviewer may decide from this
    list), and the `jianmu resume` options that go on."""
    if not result.paused:
        return []
    lines = [paused_heading(result.run_id, steps)]
    lines.extend(step_line(step) for step in steps)
    lines.append(continue_line(result.run_id, steps))
    return lines


def _as_json(
    tree: Any,
    result: Any,
    changes: dict[str, Any],
    held: list[dict[str, Any]],
    recorded: bool,
) -> dict[str, Any]:
    """The `--json` report: `run_id` is null and `recorded` false for a run no store has."""
    report = {
        "run_id": result.run_id if recorded else None,
        "recorded": recorded,
        "tree": tree.name,
        "status": result.run_status,
        "reason": result.reason,
        "ticks": result.ticks,
        "duration": result.duration,
        "changed": changes,
        "state": state_snapshot(tree.state),
    }
    if result.paused:
        report["waiting"] = held
    return report
