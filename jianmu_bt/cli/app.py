"""The `jianmu` command: argument parsing, dispatch, and turning mistakes into messages.

Exit status: 0 success; 1 a user mistake (missing file, broken YAML, bad --set, ...), a tree
that failed, or a validation error; 2 a malformed command line (argparse's convention); 130
interrupted. Mistakes print one clear message (or a tree file's diagnostics) and never a
traceback; `--debug` shows the traceback of an unexpected internal error.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from jianmu_bt._version import __version__
from jianmu_bt.cli.errors import CLIError

DESCRIPTION = "Run, check and draw jianmu_bt behaviour trees written in YAML."
EPILOG = """\
examples:
  jianmu run trees/quickstart.yaml --watch
  jianmu runs
  jianmu resume RUN_ID --approve CALL_ID
  jianmu validate trees/*.yaml
  jianmu dot trees/quickstart.yaml -o quickstart.svg
  jianmu tools
  jianmu schema > jianmu-tree.schema.json
  jianmu mcp serve --tools calculator

`jianmu COMMAND --help` describes each command.
"""


COMMANDS: dict[str, str] = {
    "run": "run_command",
    "resume": "resume_command",
    "runs": "runs_command",
    "validate": "validate_command",
    "dot": "dot_command",
    "tools": "tools_command",
    "schema": "schema_command",
    "mcp": "mcp_command",
    "batch": "batch_command",
    "overlay": "overlay_command",
    "view": "view_command",
}
"""Each subcommand -> its module in `jianmu_bt.cli` (which has `add_parser(subparsers)`)."""


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser with every subcommand, or with `command` alone when it is one of them.

    A command line names its command, so `main` imports only that command's module: the
    others' imports are not paid by every `jianmu validate`. `--help` and a mistyped command
    get the full parser (every command listed).
    """
    parser = argparse.ArgumentParser(
        prog="jianmu",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"jianmu {__version__}")
    parser.add_argument(
        "--debug", action="store_true", help="show tracebacks of unexpected internal errors"
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    names = [command] if command in COMMANDS else list(COMMANDS)
    for name in names:
        importlib.import_module(f"jianmu_bt.cli.{COMMANDS[name]}").add_parser(commands)
    return parser


def _command_of(argv: Sequence[str]) -> str | None:
    """The subcommand a command line names: its first word that is not an option (the
    top-level options take no value)."""
    return next((word for word in argv if not word.startswith("-")), None)


def _report_load_error(exc: Exception) -> None:
    diagnostics = getattr(exc, "diagnostics", None) or []
    for diagnostic in diagnostics:
        describe = getattr(diagnostic, "describe", None)
        print(describe() if callable(describe) else diagnostic, file=sys.stderr)
    errors = sum(1 for d in diagnostics if getattr(d, "severity", "error") == "error")
    files = sorted({str(getattr(d, "file", "?")) for d in diagnostics}) or ["the tree"]
    print(
        f"jianmu: error: {', '.join(files)}: {errors} error(s); the tree was not loaded",
        file=sys.stderr,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the `jianmu` command line; returns the exit status."""
    words = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(_command_of(words)).parse_args(words)
    from jianmu_bt.loader import TreeLoadError  # after parsing: --help needs no loader

    try:
        return int(args.handler(args))
    except CLIError as exc:
        print(f"jianmu: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except TreeLoadError as exc:
        _report_load_error(exc)
        return 1
    except KeyboardInterrupt:
        print("jianmu: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`jianmu tools | head`): not an error worth a message.
        sys.stderr.close()
        return 1
    except Exception as exc:
        if args.debug:
            raise
        print(
            f"jianmu: internal error: {type(exc).__name__}: {exc} "
            "(run `jianmu --debug ...` for the traceback)",
            file=sys.stderr,
        )
        return 1
