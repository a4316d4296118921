"""The `jianmu` command line: run, validate, dot, tools, schema and mcp serve.

`main(argv=None) -> int` is the console script's entry point; `python -m jianmu_bt.cli` works
too. See docs/cli.md.
"""

from jianmu_bt.cli.app import build_parser, main
from jianmu_bt.cli.errors import CLIError

__all__ = ["CLIError", "build_parser", "main"]
