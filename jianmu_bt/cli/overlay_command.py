"""`jianmu overlay record | check`: turn a run's trace into a replay overlay; check an overlay.

`record` reads a trace (`jianmu run --trace run.jsonl`) and writes an overlay file that answers
every LLM turn and tool call of that run as it was answered, so the run can be repeated offline
(`jianmu run TREE --overlay FILE`, or the pytest fixtures). `check` reports every problem of an
overlay file and every rule that names a tool or node its tree does not have.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from jianmu_bt.cli.errors import CLIError
from jianmu_bt.cli.loading import existing_file, load_tree_file
from jianmu_bt.cli.subcommand import add_command

HELP = "record a run's trace as a replay overlay, or check an overlay against a tree"
EPILOG = """\
examples:
  jianmu run research.yaml --trace run.jsonl          # a real run, traced
  jianmu overlay record run.jsonl -o research.replay.yaml
  jianmu run research.yaml --overlay research.replay.yaml   # the same run, offline
  jianmu overlay check research.yaml research.replay.yaml

See docs/testing-trees.md for the overlay format and the pytest fixtures.
"""


def add_parser(commands: Any) -> None:
    """Register `overlay record` and `overlay check` on the top-level subparsers."""
    parser = commands.add_parser("overlay", help=HELP, description=HELP)
    actions = parser.add_subparsers(dest="overlay_command", metavar="ACTION", required=True)
    record = add_command(
        actions,
        "record",
        help="write an overlay that replays every LLM reply and tool result of a trace",
        epilog=EPILOG,
        handler=handle_record,
    )
    record.add_argument("trace", metavar="TRACE.jsonl", help="a trace from `jianmu run --trace`")
    record.add_argument(
        "-o", "--output", metavar="OUT.yaml", help="the overlay file to write (default: stdout)"
    )
    check = add_command(
        actions,
        "check",
        help="report every problem of an overlay file against its tree",
        epilog=EPILOG,
        handler=handle_check,
    )
    check.add_argument("file", metavar="TREE", help="the YAML tree")
    check.add_argument("overlay", metavar="OVERLAY.yaml", help="the overlay file")


def _read_trace(path: Path) -> list[dict[str, Any]]:
    """The trace's events (the one trace reader: a bad line is named with its place)."""
    from jianmu_bt.viz.trace_status import TraceFormatError, load_trace

    try:
        return load_trace(path)
    except TraceFormatError as exc:
        raise CLIError(str(exc)) from None


def handle_record(args: argparse.Namespace) -> int:
    """Write the replay overlay of a trace; 0 on success."""
    from jianmu_bt.testing.recording import dump_overlay, record_overlay

    path = existing_file(args.trace, "trace file")
    data = record_overlay(_read_trace(path))
    if "llm" not in data and "tools" not in data:
        raise CLIError(f"{path}: the trace has no LLM replies and no tool calls to record")
    text = dump_overlay(data, source=path.name)
    if args.output is None:
        sys.stdout.write(text)
        return 0
    target = Path(args.output)
    if not target.parent.is_dir():
        raise CLIError(f"-o {args.output}: the directory '{target.parent}' does not exist")
    try:
        target.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise CLIError(f"-o {args.output}: cannot write ({exc.strerror})") from None
    replies = len(data.get("llm", {}).get("replies", []))
    calls = sum(len(t["calls"]) for t in data.get("tools", {}).values())
    print(f"wrote {target}: {replies} LLM reply(ies), {calls} tool call(s)", file=sys.stderr)
    return 0


def handle_check(args: argparse.Namespace) -> int:
    """0 when the overlay file is sound and fits the tree (errors are raised and reported)."""
    from jianmu_bt.testing import OverlayError, load_overlay

    tree = load_tree_file(args.file)
    try:
        overlay = load_overlay(existing_file(args.overlay, "overlay file"))
        problems = overlay.check(tree)
    except OverlayError as exc:
        problems = exc.diagnostics
    finally:
        tree.close()
    if problems:
        for diagnostic in problems:
            print(diagnostic.describe(), file=sys.stderr)
        raise CLIError(f"{args.overlay}: {len(problems)} error(s)")
    print(f"{args.overlay}: fits {args.file}")
    return 0
