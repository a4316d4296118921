"""`jianmu dot FILE`: draw a tree as a Graphviz graph (DOT text, SVG or PNG)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from jianmu_bt.cli.errors import CLIError
from jianmu_bt.cli.loading import existing_file, load_tree_file
from jianmu_bt.cli.subcommand import add_command

HELP = "draw a tree as DOT text, SVG or PNG"
EPILOG = """\
examples:
  jianmu dot trees/quickstart.yaml                     # DOT text on stdout
  jianmu dot trees/quickstart.yaml -o quickstart.svg   # rendered by Graphviz
  jianmu run trees/quickstart.yaml --trace run.jsonl
  jianmu dot trees/quickstart.yaml --status-from run.jsonl -o run.png

The output type follows the -o suffix: .dot/.gv write DOT text (no Graphviz needed); .svg, .png
and .pdf need Graphviz's `dot` program (apt-get install graphviz). With --status-from, each node
is filled with the last status it had in the trace: green SUCCESS, red FAILURE, yellow RUNNING,
grey not run.
"""


def add_parser(commands: Any) -> None:
    """Register `dot` on the top-level subparsers."""
    parser = add_command(commands, "dot", help=HELP, epilog=EPILOG, handler=handle)
    parser.add_argument("file", metavar="FILE", help="the YAML tree to draw")
    parser.add_argument(
        "-o", "--output", metavar="OUT", help="write to OUT (.dot, .gv, .svg, .png, .pdf)"
    )
    parser.add_argument(
        "--status-from", metavar="TRACE.jsonl", help="colour nodes by a run's trace"
    )
    parser.add_argument(
        "--rankdir", choices=["TB", "LR", "BT", "RL"], default="TB", help="layout direction"
    )
    parser.add_argument(
        "--no-legend",
        dest="legend",
        action="store_false",
        help="leave out the key of node shapes and status colours",
    )
    parser.add_argument(
        "--render-timeout",
        type=float,
        default=30.0,
        metavar="S",
        help="seconds Graphviz may take (default %(default)s)",
    )


def _statuses(tree: Any, trace_path: str) -> dict[str, Any]:
    from jianmu_bt.viz import TraceFormatError, last_statuses, load_trace, statuses_for_tree

    path = existing_file(trace_path, "trace file")
    try:
        events = load_trace(path)
    except (TraceFormatError, UnicodeDecodeError) as exc:
        raise CLIError(f"--status-from: {exc}") from None
    statuses = statuses_for_tree(tree.root, events)
    if last_statuses(events) and not statuses:
        print(
            f"jianmu: warning: no node of '{tree.name}' matches the trace {path}; "
            "was it written by another tree?",
            file=sys.stderr,
        )
    return statuses


def handle(args: argparse.Namespace) -> int:
    """Write the graph; 1 (with a clear message) when Graphviz is needed but missing."""
    from jianmu_bt.viz import RenderError, tree_to_dot, write_graph

    tree = load_tree_file(args.file)
    try:
        statuses = _statuses(tree, args.status_from) if args.status_from else None
        text = tree_to_dot(
            tree.root, statuses, title=tree.name, rankdir=args.rankdir, legend=args.legend
        )
    finally:
        tree.close()
    if not args.output:
        sys.stdout.write(text)
        return 0
    try:
        written = write_graph(text, args.output, timeout=args.render_timeout)
    except RenderError as exc:
        raise CLIError(str(exc)) from None
    except OSError as exc:
        raise CLIError(f"{args.output}: cannot write ({exc.strerror})") from None
    print(f"wrote {written}", file=sys.stderr)
    return 0
