"""`jianmu batch FILE INPUTS.jsonl`: one run of a tree per input line, on a process pool or Ray.

Each line of INPUTS.jsonl is a JSON object: a run's initial state, checked against the tree's
state schema before anything runs. Results go to `--out` (default: standard output) as they
finish, one JSON object per line tagged with its input line; the progress goes to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path
from typing import Any, TextIO

from jianmu_bt.cli.errors import CLIError
from jianmu_bt.cli.loading import existing_file
from jianmu_bt.cli.stores import STORE_HELP, open_run_store, store_errors, waiting_calls
from jianmu_bt.cli.subcommand import add_command
from jianmu_bt.store.private_files import open_private

HELP = "run a tree once per line of a JSONL inputs file (process pool or Ray)"
EPILOG = """\
examples:
  jianmu batch trees/quickstart.yaml inputs.jsonl --out results.jsonl
  jianmu batch trees/quickstart.yaml inputs.jsonl --workers 8 --timeout 120
  jianmu batch trees/quickstart.yaml inputs.jsonl --ray               # a local Ray
  jianmu batch trees/quickstart.yaml inputs.jsonl --ray ray://head:10001 --store postgresql://...
                                      # a cluster needs a PostgreSQL store (SQLite is refused)
  jianmu batch trees/quickstart.yaml inputs.jsonl --resume            # after an interruption

Every run is recorded in the run store under the id <batch id>-<line>; the batch id defaults to
one derived from the two files' paths. A line that is not JSON or does not fit the state schema
is reported with its number (status "invalid") and the batch goes on; so does a failed run.
Runs held for approval stay paused in the store and are listed at the end (continue each with
`jianmu resume RUN_ID`). --resume skips inputs whose runs ended or paused, and continues the
runs that were in flight. Result lines: {"line", "run_id", "status", "state"|"error", "reason"}.
Exit status: 0 every run succeeded, 1 a run failed or a line was invalid, 3 some runs paused.
"""


def add_parser(commands: Any) -> None:
    """Register `batch` on the top-level subparsers."""
    parser = add_command(commands, "batch", help=HELP, epilog=EPILOG, handler=handle)
    parser.add_argument("file", metavar="FILE", help="the YAML tree to run")
    parser.add_argument("inputs", metavar="INPUTS.jsonl", help="one JSON object (a state) a line")
    parser.add_argument("--out", metavar="RESULTS.jsonl", help="where results go (default: stdout)")
    parser.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="runs at once: worker processes, or a local Ray's CPUs (default: this machine's "
        "CPUs; with --ray, the Ray's CPUs)",
    )
    parser.add_argument(
        "--ray",
        nargs="?",
        const="local",
        metavar="ADDRESS",
        help="run on Ray: a local Ray started for the batch, or the cluster at ADDRESS "
        "(needs the ray extra: pip install 'jianmu-bt[ray]')",
    )
    parser.add_argument("--store", metavar="PATH", help=STORE_HELP)
    parser.add_argument(
        "--resume", action="store_true", help="continue the batch: skip inputs whose runs ended"
    )
    parser.add_argument("--batch-id", metavar="ID", help="the batch's id (default: from the paths)")
    parser.add_argument(
        "--timeout", type=float, metavar="SECONDS", help="stop each run after this many seconds"
    )


def handle(args: argparse.Namespace) -> int:
    """Run the batch; the exit status says how it went (see the epilog)."""
    from jianmu_bt.batch import BatchError, run_batch
    from jianmu_bt.sandbox.ray_runner import RayUnavailableError

    tree = existing_file(args.file)
    inputs = existing_file(args.inputs, "inputs file")
    if args.workers is not None and args.workers < 1:
        raise CLIError(f"--workers must be at least 1, got {args.workers}")
    if args.timeout is not None and args.timeout <= 0:
        raise CLIError(f"--timeout must be more than 0 seconds, got {args.timeout}")
    with _output(args.out) as out, store_errors():
        try:
            summary = run_batch(
                tree,
                inputs,
                out=out,
                progress=sys.stderr,
                workers=args.workers,
                ray=args.ray,
                store=args.store,
                resume=args.resume,
                batch_id=args.batch_id,
                timeout=args.timeout,
            )
        except (BatchError, RayUnavailableError) as exc:
            raise CLIError(str(exc)) from None
    for problem in summary.problems[:20]:
        print(problem, file=sys.stderr)
    if len(summary.problems) > 20:
        print(f"... and {len(summary.problems) - 20} more (see the results)", file=sys.stderr)
    _list_paused(summary, args.store)
    print(f"batch {summary.batch_id}: runs recorded in {summary.store}", file=sys.stderr)
    return summary.exit_code


@contextlib.contextmanager
def _output(path: str | None) -> Any:
    if path is None or path == "-":
        yield sys.stdout
        return
    target = Path(path)
    if target.is_dir() or not target.parent.is_dir():
        raise CLIError(f"--out {target}: not a file in an existing folder")
    output = _LazyFile(target)
    try:
        yield output
    finally:
        output.close()


class _LazyFile:
    """The results file, opened (truncated) at the first result: a batch refused at its start
    leaves an earlier results file as it was."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.file: TextIO | None = None

    def write(self, text: str) -> int:
        if self.file is None:
            try:
                self.file = open_private(self.path, "w")  # results hold runs' states
            except OSError as exc:
                raise CLIError(f"--out {self.path}: cannot write ({exc.strerror})") from None
        return self.file.write(text)

    def flush(self) -> None:
        if self.file is not None:
            self.file.flush()

    def close(self) -> None:
        if self.file is not None:
            self.file.close()


def _list_paused(summary: Any, store_arg: str | None) -> None:
    """The runs that wait for a decision, with their waiting calls and how to continue."""
    if not summary.paused:
        return
    print(f"{len(summary.paused)} run(s) paused, waiting for a decision:", file=sys.stderr)
    store = open_run_store(summary.store, create=False)
    try:
        for result in summary.paused:
            calls = waiting_calls(store, result["run_id"])
            held = ", ".join(f"{c.tool} [{c.call_id}]" for c in calls) or result.get("reason", "")
            print(f"  line {result['line']}: run {result['run_id']}: {held}", file=sys.stderr)
    finally:
        store.close()
    where = f" --store {store_arg}" if store_arg else ""
    print(f"Continue each with: jianmu resume RUN_ID --approve CALL_ID{where}", file=sys.stderr)
