"""`jianmu run FILE`: load a tree, run it to its end (or a pause), and say how it went.

Runs are recorded durably in a run store (`.jianmu/runs.db` by default, `--store` for another
file, `--no-store` for none), so a run that pauses or whose process dies continues with
`jianmu resume RUN_ID`.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from jianmu_bt.cli.approvals import MODES, default_mode
from jianmu_bt.cli.errors import CLIError
from jianmu_bt.cli.loading import apply_inputs, existing_file, load_tree_file, parse_assignments
from jianmu_bt.cli.run_session import add_output_options, overlay_model_note, run_and_report
from jianmu_bt.cli.stores import STORE_HELP, open_run_store, store_errors, waiting_calls
from jianmu_bt.cli.subcommand import add_command
from jianmu_bt.cli.view_command import add_view_options, run_viewer

HELP = "run a tree to its end and print a summary"
EPILOG = """\
examples:
  jianmu run trees/quickstart.yaml
  jianmu run trees/quickstart.yaml --watch
  jianmu run trees/quickstart.yaml --set numbers='6 * 7' --trace run.jsonl
  jianmu run trees/file_audit.yaml --timeout 60 --json
  jianmu run deploy.yaml --approve ask        # answer the guard's held calls at the terminal
  jianmu run deploy.yaml --approve later      # pause on a held call; jianmu resume continues
  jianmu run research.yaml --overlay offline.yaml   # stub/replay its tools and LLM

--set values are read as YAML (3 is a number, true a boolean, 'text' a string) and checked
against the tree's state schema before the first tick. Every run is recorded in a run store
(.jianmu/runs.db under the current directory unless --store or --no-store says otherwise),
except a run with --overlay: it is never stored. A run not recorded (--no-store, --overlay)
is reported without a run id ("(not recorded)"; --json: "run_id": null, "recorded": false).
Exit status: 0 the run succeeded, 1 it failed, timed out or could not start, 3 it paused
waiting for a decision (continue it with `jianmu resume RUN_ID`).
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
    add_output_options(parser)
    parser.add_argument(
        "--approve",
        choices=(*MODES, "later"),
        help="answer tool calls the guard holds for approval: ask at the terminal, approve all, "
        "reject them (none), or pause the run until `jianmu resume` decides (later); default: "
        "ask on a terminal, none otherwise",
    )
    parser.add_argument("--store", metavar="PATH", help=STORE_HELP)
    parser.add_argument("--run-id", metavar="ID", help="the new run's id (default: a fresh one)")
    parser.add_argument(
        "--no-store", action="store_true", help="do not record the run (it cannot be resumed)"
    )
    parser.add_argument(
        "--overlay",
        metavar="OVERLAY.yaml",
        help="substitute the tree's tools and LLM as this overlay file says (a test or an "
        "offline replay; see docs/testing-trees.md); a replay that diverges fails the run; "
        "the run is not recorded in a run store (no resume)",
    )
    add_view_options(parser)


def _print_findings(tree: Any) -> None:
    for finding in getattr(tree, "findings", None) or ():
        print(finding.describe(), file=sys.stderr)


def handle(args: argparse.Namespace) -> int:
    """Run the tree; 0 succeeded, 1 failed, 3 paused."""
    inputs = parse_assignments(args.assignments)
    if args.no_store and (args.store or args.run_id):
        raise CLIError("--no-store cannot be combined with --store or --run-id")
    if args.no_store and args.approve == "later":
        raise CLIError("--approve later pauses the run in a store: drop --no-store")
    if args.run_id is not None and not args.run_id.strip():
        raise CLIError("--run-id: give a non-empty id")
    if args.overlay is not None and (args.store or args.run_id or args.approve == "later"):
        raise CLIError(
            "--overlay runs are not recorded in a run store (resuming one would call the real "
            "tools and LLM): drop --store, --run-id and --approve later"
        )
    # With --view and no --approve, the page decides: no terminal desk ("later"), the run waits.
    mode = args.approve or ("later" if args.view else default_mode())
    tree = load_tree_file(args.file)
    store = None
    try:
        overlay = _apply_overlay(tree, args.overlay)
        _print_findings(tree)
        apply_inputs(tree.state, inputs)
        # An overlay's run is a test: never stored, so `jianmu resume` cannot replay it for real.
        recorded = not args.no_store and args.overlay is None
        store = open_run_store(args.store, create=True) if recorded else None
        hold = "pause" if args.approve == "later" else "wait"

        def start() -> Any:
            with store_errors():
                return _run(tree, args.timeout, store, args.run_id, hold)

        def waiting() -> list[Any]:
            return waiting_calls(store, tree.runner.context.run_id) if store else []

        model = overlay_model_note(overlay, args.overlay) if overlay is not None else None
        with run_viewer(tree, args):
            code = run_and_report(
                tree, args, mode, start, waiting, recorded=store is not None, model=model
            )
        return _overlay_verdict(overlay, code)
    finally:
        tree.close()
        if store is not None:
            store.close()


def _apply_overlay(tree: Any, path: str | None) -> Any:
    """Apply the `--overlay` file to the loaded tree (its errors are reported like a tree's)."""
    if path is None:
        return None
    from jianmu_bt.testing import OverlayError, load_overlay

    try:
        overlay = load_overlay(existing_file(path, "overlay file"))
        overlay.apply(tree)
    except OverlayError as exc:
        for diagnostic in exc.diagnostics:
            print(diagnostic.describe(), file=sys.stderr)
        raise CLIError(
            f"--overlay {path}: {len(exc.errors)} error(s); the tree was not run"
        ) from None
    return overlay


def _overlay_verdict(overlay: Any, code: int) -> int:
    """The exit status: 1 when the run made calls the overlay's recording did not have."""
    if overlay is None or not overlay.divergences:
        return code
    for message in overlay.divergences:
        print(f"jianmu: overlay: {message}", file=sys.stderr)
    return 1


def _run(tree: Any, timeout: float | None, store: Any, run_id: str | None, hold: str) -> Any:
    from jianmu_bt.loader import ProviderStartError, TreeInputError

    try:
        return tree.run(timeout=timeout, store=store, run_id=run_id, hold=hold)
    except TreeInputError as exc:
        raise CLIError(str(exc)) from None
    except ProviderStartError as exc:
        raise CLIError(f"the tree's tools could not start: {exc}") from None
