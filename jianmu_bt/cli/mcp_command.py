"""`jianmu mcp serve`: serve built-in or Python tools as an MCP server (see jianmu_bt.mcp)."""

from __future__ import annotations

import argparse
from typing import Any

from jianmu_bt.cli.errors import CLIError

HELP = "serve tools over the Model Context Protocol"
EPILOG = """\
examples:
  jianmu mcp serve --tools calculator,read_file
  jianmu mcp serve --tools my_package.tools:search --transport http --port 8000

A tool spec is a built-in name or alias, or module:attr of a Tool, a Tool class, a function, a
ToolSet or a list of them. Over stdio, stdout carries the protocol and messages go to stderr.
Needs the MCP SDK: pip install 'jianmu-bt[mcp]'.
"""


def add_parser(commands: Any) -> None:
    """Register `mcp serve` on the top-level subparsers."""
    from jianmu_bt.mcp.cli import add_serve_arguments

    parser = commands.add_parser("mcp", help=HELP, description=HELP)
    actions = parser.add_subparsers(dest="mcp_command", metavar="ACTION", required=True)
    serve = actions.add_parser(
        "serve",
        help="serve tools as an MCP server (stdio or streamable HTTP)",
        description="Serve tools as an MCP server (stdio or streamable HTTP).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_serve_arguments(serve)
    serve.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    """Serve until the client disconnects (stdio) or the process is interrupted (HTTP)."""
    import anyio

    from jianmu_bt.mcp import MCPUnavailableError
    from jianmu_bt.mcp.cli import ToolSpecError, serve_from_args
    from jianmu_bt.tools.registry import ToolUnavailableError

    try:
        anyio.run(serve_from_args, args)
    except (ToolSpecError, ToolUnavailableError, MCPUnavailableError) as exc:
        raise CLIError(str(exc)) from None
    except OSError as exc:
        raise CLIError(f"cannot serve: {exc}") from None
    return 0
