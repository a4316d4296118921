"""`jianmu view`: the tree viewer in the browser, and `jianmu run FILE --view`.

`jianmu view FILE` draws a tree; `--trace TRACE.jsonl` replays a run's trace (on FILE's drawing
when FILE is given too); `--run ID` replays a durable run from the run store. `jianmu run FILE
--view` shows the run it starts, live, and takes the decisions on held calls from the page.
The server binds 127.0.0.1 and prints its URL with an access token; see docs/viewer.md.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from jianmu_bt.cli.errors import CLIError
from jianmu_bt.cli.loading import existing_file, load_tree_file
from jianmu_bt.cli.stores import STORE_HELP, open_run_store, store_errors
from jianmu_bt.cli.subcommand import add_command

HELP = "open the tree viewer in the browser: a tree, a trace replay or a recorded run"
EPILOG = """\
examples:
  jianmu view trees/quickstart.yaml
  jianmu view --trace run.jsonl                      # replay a trace (jianmu run --trace)
  jianmu view --trace run.jsonl trees/quickstart.yaml
  jianmu view --run run_3f2a9c0d1e2b --store .jianmu/runs.db
  jianmu run trees/quickstart.yaml --view            # watch a run live, decide held calls

The server listens on 127.0.0.1 only (--port 0, the default, takes any free port) and prints its
URL with an access token (#token=...): reading the run and approving or denying a held call both
need the token. Stop it with Ctrl-C. Without Graphviz's `dot` the page lays the tree out itself.
"""


def add_parser(commands: Any) -> None:
    """Register `view` on the top-level subparsers."""
    parser = add_command(commands, "view", help=HELP, epilog=EPILOG, handler=handle)
    parser.add_argument("file", metavar="FILE", nargs="?", help="the YAML tree to draw")
    parser.add_argument("--trace", metavar="TRACE.jsonl", help="replay this trace file")
    parser.add_argument("--run", metavar="ID", help="replay this run from the run store")
    parser.add_argument("--store", metavar="PATH", help=STORE_HELP)
    _add_port(parser, "--port")
    parser.add_argument(
        "--no-graphviz", action="store_true", help="lay the tree out in the browser, not with dot"
    )


def add_view_options(parser: argparse.ArgumentParser) -> None:
    """`--view` and `--view-port` for `jianmu run`."""
    parser.add_argument(
        "--view",
        action="store_true",
        help="show the run live in the browser viewer (held calls are decided on the page "
        "unless --approve says otherwise); the viewer stays open after the run until Ctrl-C",
    )
    _add_port(parser, "--view-port")


def _add_port(parser: argparse.ArgumentParser, flag: str) -> None:
    parser.add_argument(
        flag, type=int, default=0, metavar="P", help="the viewer's port (default 0: any free port)"
    )


@contextlib.contextmanager
def _serving(source: Any, port: int, out: TextIO) -> Iterator[Any]:
    from jianmu_bt.viewer import ViewerError, ViewerServer, ViewerUnavailableError

    try:
        server = ViewerServer(source, port=port).start()
    except (ViewerError, ViewerUnavailableError) as exc:
        source.close()
        raise CLIError(str(exc)) from None
    try:
        # The URL carries the token in its fragment (never sent, read by the page's script).
        print(f"jianmu viewer: {server.url}#token={server.token}  (Ctrl-C to stop)", file=out)
        print(
            f"access token: {server.token}  (the page and every request to the viewer need it)",
            file=out,
            flush=True,
        )
        yield server
    finally:
        server.stop()
        source.close()


def _wait(server: Any, said: str = "") -> None:
    """Serve until Ctrl-C; `said` is printed first, inside: a Ctrl-C sent once it is read ends
    the wait, not the command."""
    with contextlib.suppress(KeyboardInterrupt):
        if said:
            print(said, file=sys.stderr)
            sys.stderr.flush()
        server.wait()


@contextlib.contextmanager
def run_viewer(tree: Any, args: argparse.Namespace) -> Iterator[None]:
    """With `--view`: serve `tree`'s run live while the block runs, then until Ctrl-C."""
    if not getattr(args, "view", False):
        yield
        return
    from jianmu_bt.viewer import live_source

    source = live_source(tree)
    with _serving(source, args.view_port, sys.stderr) as server:
        yield
        _wait(server, f"the run ended; the viewer stays open at {server.url} until Ctrl-C")


def _tree_for(path: str | None) -> Any:
    return load_tree_file(path) if path else None


def _source(args: argparse.Namespace) -> Any:
    from jianmu_bt.loader import TreeLoadError
    from jianmu_bt.store import default_store
    from jianmu_bt.viewer import history_source, static_source, trace_source
    from jianmu_bt.viewer.forking import forker

    graphviz = not args.no_graphviz
    if args.trace:
        tree = _tree_for(args.file)
        return trace_source(args.trace, tree, use_graphviz=graphviz), tree
    if args.run:
        store = open_run_store(args.store, create=False)
        try:
            with store_errors():
                record = store.get_run(args.run)
                path = args.file or record.tree_path
                tree, why = None, ""
                if path and Path(path).is_file():
                    try:
                        tree = load_tree_file(path)
                    except TreeLoadError as exc:  # changed since: the history alone is shown
                        why = f"{path} does not load now: {str(exc).splitlines()[0]}"
                # "fork from here" opens the store again by what the command line named.
                location = args.store or str(default_store())
                fork = forker(location, args.run)
                source = history_source(store, args.run, tree, use_graphviz=graphviz, fork=fork)
                if why:
                    source.problems.insert(0, why)
                return source, tree
        finally:
            store.close()
    tree = load_tree_file(existing_file(args.file))
    return static_source(tree, use_graphviz=graphviz), tree


def handle(args: argparse.Namespace) -> int:
    """Serve the viewer until Ctrl-C; 1 when what it shows could not be read."""
    if args.trace and args.run:
        raise CLIError("give --trace or --run, not both")
    if not (args.file or args.trace or args.run):
        raise CLIError("give a tree FILE, --trace TRACE.jsonl or --run ID to view")
    if args.store and not args.run:
        raise CLIError("--store goes with --run ID")
    source, tree = _source(args)
    try:
        for problem in source.problems:
            print(f"jianmu view: {problem}", file=sys.stderr)
        fatal = bool(source.problems) and len(source.hub) == 0 and source.mode == "replay"
        with _serving(source, args.port, sys.stdout) as server:
            _wait(server)
        return 1 if fatal else 0
    finally:
        if tree is not None:
            tree.close()
