"""`jianmu schema`: the JSON Schema of the YAML tree format, for editors."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from jianmu_bt.cli.errors import CLIError
from jianmu_bt.cli.subcommand import add_command

HELP = "print the JSON Schema of the tree format (for editor completion)"
EPILOG = """\
examples:
  jianmu schema > jianmu-tree.schema.json
  jianmu schema -o .vscode/jianmu-tree.schema.json

Point your editor's YAML support at the file, for example with a first line in a tree file:
  # yaml-language-server: $schema=./jianmu-tree.schema.json
"""


def add_parser(commands: Any) -> None:
    """Register `schema` on the top-level subparsers."""
    parser = add_command(commands, "schema", help=HELP, epilog=EPILOG, handler=handle)
    parser.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")


def handle(args: argparse.Namespace) -> int:
    """Print or write the schema."""
    from jianmu_bt.loader import format_json_schema

    text = json.dumps(format_json_schema(), indent=2) + "\n"
    if not args.output:
        print(text, end="")
        return 0
    target = Path(args.output)
    try:
        target.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise CLIError(f"{target}: cannot write ({exc.strerror})") from None
    return 0
