"""`jianmu validate FILE...`: check tree files without running them (for editors and CI)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from jianmu_bt.cli.subcommand import add_command

HELP = "check tree files and print every problem as file:line:col"
EPILOG = """\
examples:
  jianmu validate trees/quickstart.yaml
  jianmu validate trees/*.yaml --strict
  jianmu validate my_tree.yaml --json

Each problem prints as `file:line:col: severity: message`. The exit status is 1 when any file
has an error (or, with --strict, a warning), else 0, so the command can gate a CI job.
"""


def add_parser(commands: Any) -> None:
    """Register `validate` on the top-level subparsers."""
    parser = add_command(commands, "validate", help=HELP, epilog=EPILOG, handler=handle)
    parser.add_argument("files", nargs="+", metavar="FILE", help="YAML tree files to check")
    parser.add_argument("--strict", action="store_true", help="treat warnings as errors")
    parser.add_argument("--json", action="store_true", help="print the diagnostics as JSON")


def _check(path: str) -> list[Any]:
    from jianmu_bt.loader import Diagnostic, validate_source

    file = Path(path)
    problem = None
    if not file.exists():
        problem = "no such file"
    elif file.is_dir():
        problem = "is a directory, not a tree file"
    if problem is not None:
        return [Diagnostic(str(file), 1, 1, "error", problem, "file")]
    return list(validate_source(file))


def handle(args: argparse.Namespace) -> int:
    """Print the diagnostics of every file; 1 when any is an error (or a warning if strict)."""
    results = {path: _check(path) for path in args.files}
    everything = [d for found in results.values() for d in found]
    errors = sum(1 for d in everything if d.severity == "error")
    warnings = len(everything) - errors
    failed = errors > 0 or (args.strict and warnings > 0)
    if args.json:
        report = {
            "ok": not failed,
            "files": {path: [d.to_dict() for d in found] for path, found in results.items()},
            "errors": errors,
            "warnings": warnings,
        }
        print(json.dumps(report, indent=2))
    else:
        for diagnostic in everything:
            print(diagnostic.describe())
        for path, found in results.items():
            if not found:
                print(f"{path}: ok")
        print(
            f"checked {len(results)} file(s): {errors} error(s), {warnings} warning(s)"
            + (" (warnings count as errors: --strict)" if args.strict and warnings else "")
        )
    return 1 if failed else 0
