"""`jianmu run FILE`: load a tree, run it to its end, and say how it went."""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from jianmu_bt.cli.activity import ActivityLog
from jianmu_bt.cli.approvals import MODES, ApprovalDesk, default_mode
from jianmu_bt.cli.errors import CLIError
from jianmu_bt.cli.loading import apply_inputs, load_tree_file, parse_assignments
from jianmu_bt.cli.subcommand import add_command
from jianmu_bt.cli.summary import changed_keys, state_snapshot, summary_lines
from jianmu_bt.cli.watch import WatchView

HELP = "run a tree to its end and print a summary"
EPILOG = """\
examples:
  jianmu run trees/quickstart.yaml
  jianmu run trees/quickstart.yaml --watch
  jianmu run trees/quickstart.yaml --set numbers='6 * 7' --trace run.jsonl
  jianmu run trees/file_audit.yaml --timeout 60 --json
  jianmu run deploy.yaml --approve ask        # answer the guard's held calls at the terminal

--set values are read as YAML (3 is a number, true a boolean, 'text' a string) and checked
against the tree's state schema before the first tick. The exit status is 0 when the tree
succeeded and 1 when it failed, timed out or could not start.
"""


def add_parser(commands: Any) -> None:
    """Register `run` on the top-level subparsers."""
    parser = add_command(commands, "run", help=HELP, epilog=EPILOG, handler=handle)
    parser.add_argument("file", metavar="FILE", help="the YAML tree to run")
    parser.add_argument(
        "--set",
        dest="assignments",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set a state field before the run (repeatable)",
    )
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
    parser.add_argument(
        "--approve",
        choices=MODES,
        help="answer tool calls the guard holds for approval: ask at the terminal, approve all, "
        "or reject them (none); default: ask on a terminal, none otherwise",
    )


def _open_trace(path: str, tree: Any, stack: ExitStack) -> None:
    from jianmu_bt.runtime import TraceWriter
    from jianmu_bt.viz import TREE_NODES_EVENT, tree_nodes_data

    target = Path(path)
    if not target.parent.is_dir():
        raise CLIError(f"--trace {path}: the directory '{target.parent}' does not exist")
    try:
        writer = stack.enter_context(TraceWriter(target))
    except OSError as exc:
        raise CLIError(f"--trace {path}: cannot write ({exc.strerror})") from None
    stack.callback(tree.events.subscribe(writer))
    # The node layout lets `jianmu dot --status-from` colour a freshly loaded copy of the tree.
    tree.events.emit(TREE_NODES_EVENT, nodes=tree_nodes_data(tree.root))


def _print_findings(tree: Any) -> None:
    for finding in getattr(tree, "findings", None) or ():
        print(str(finding), file=sys.stderr)


def handle(args: argparse.Namespace) -> int:
    """Run the tree; 0 when it ended in SUCCESS, 1 otherwise."""
    inputs = parse_assignments(args.assignments)
    if args.timeout is not None and args.timeout <= 0:
        raise CLIError(f"--timeout {args.timeout:g}: give a positive number of seconds")
    with ExitStack() as stack:
        tree = load_tree_file(args.file)
        stack.callback(tree.close)
        _print_findings(tree)
        apply_inputs(tree.state, inputs)
        before = state_snapshot(tree.state)
        written: dict[str, None] = {}
        stack.callback(tree.state.subscribe(lambda keys: written.update(dict.fromkeys(keys))))
        activity = ActivityLog()
        stack.callback(tree.events.subscribe(activity))
        desk = ApprovalDesk(tree, args.approve or default_mode())
        stack.callback(tree.events.subscribe(desk))
        if args.trace:
            _open_trace(args.trace, tree, stack)
        view = None
        if args.watch:
            # With --json, stdout carries only the JSON document.
            view = WatchView(tree.root, sys.stderr if args.json else sys.stdout)
            stack.callback(tree.events.subscribe(view))
        result = _run(tree, args.timeout)
        if view is not None:
            view.finish(result.node_statuses)
        after = state_snapshot(tree.state)
        changes = {key: after[key] for key in changed_keys(before, after, written)}
        if args.json:
            print(json.dumps(_as_json(tree, result, changes), indent=2, default=str))
        else:
            lines = summary_lines(
                tree.name, result, activity, changes, show_activity=view is None or view.live
            )
            print("\n".join(lines))
    return 0 if result.ok else 1


def _run(tree: Any, timeout: float | None) -> Any:
    from jianmu_bt.loader import ProviderStartError, TreeInputError

    try:
        return tree.run(timeout=timeout)
    except TreeInputError as exc:
        raise CLIError(str(exc)) from None
    except ProviderStartError as exc:
        raise CLIError(f"the tree's tools could not start: {exc}") from None


def _as_json(tree: Any, result: Any, changes: dict[str, Any]) -> dict[str, Any]:
    return {
        "tree": tree.name,
        "status": result.status.value,
        "reason": result.reason,
        "ticks": result.ticks,
        "duration": result.duration,
        "run_id": result.run_id,
        "changed": changes,
        "state": state_snapshot(tree.state),
    }
