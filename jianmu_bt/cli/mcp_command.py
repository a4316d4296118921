"""`jianmu mcp serve`: serve built-in or Python tools as an MCP server (see jianmu_bt.mcp)."""

from __future__ import annotations

import argparse
from typing import Any

from jianmu_bt.cli.errors import CLIError
from jianmu_bt.cli.loading import load_tree_file
from jianmu_bt.cli.subcommand import add_command

HELP = "serve tools over the Model Context Protocol"
EPILOG = """\
examples:
  jianmu mcp serve --tools calculator,read_file
  jianmu mcp serve --tools my_package.tools:search --transport http --port 8000
  jianmu mcp serve --tree trees/quickstart.yaml      # a YAML file's tools, under its guard

A tool spec is a built-in name or alias, or module:attr of a Tool, a Tool class, a function, a
ToolSet or a list of them. Over stdio, stdout carries the protocol and messages go to stderr.
Needs the MCP SDK: pip install 'jianmu-bt[mcp]'.
"""


def add_parser(commands: Any) -> None:
    """Register `mcp serve` on the top-level subparsers."""
    from jianmu_bt.mcp.cli import add_serve_arguments

    parser = commands.add_parser("mcp", help=HELP, description=HELP)
    actions = parser.add_subparsers(dest="mcp_command", metavar="ACTION", required=True)
    serve = add_command(
        actions,
        "serve",
        help="serve tools as an MCP server (stdio or streamable HTTP)",
        description="Serve tools as an MCP server (stdio or streamable HTTP).",
        epilog=EPILOG,
        handler=handle,
    )
    add_serve_arguments(serve)
    serve.add_argument(
        "--tree",
        metavar="FILE",
        help="serve the tools of this YAML tree file, with its guard applied (instead of --tools)",
    )


def handle(args: argparse.Namespace) -> int:
    """Serve until the client disconnects (stdio) or the process is interrupted (HTTP)."""
    import anyio

    from jianmu_bt.mcp import MCPUnavailableError
    from jianmu_bt.mcp.cli import ToolSpecError, serve_from_args
    from jianmu_bt.tools.registry import ToolUnavailableError

    toolset = guard = None
    if args.tree:
        tree = load_tree_file(args.tree)  # a broken file is reported with its locations
        toolset, guard = tree.toolset, guard_hook(tree.guard)
    try:
        anyio.run(serve_from_args, args, toolset, guard)
    except (ToolSpecError, ToolUnavailableError, MCPUnavailableError) as exc:
        raise CLIError(str(exc)) from None
    except OSError as exc:
        raise CLIError(f"cannot serve: {exc}") from None
    return 0


def guard_hook(enforcer: Any) -> Any:
    """The MCP server's guard callable for a tree's GuardEnforcer (None when it has none).

    A served call cannot wait for a reviewer, so a call the guard would hold (PENDING) or wants
    confirmed is refused with the guard's explanation, like a denied one.
    """
    if enforcer is None:
        return None

    def check(call: Any, tool: Any) -> str | None:
        verdict = enforcer.check(call.with_id(), tool)
        if verdict.allowed:
            return None
        reason = f"policy {verdict.policy}: {verdict.reason}"
        if verdict.decision.value in ("pending", "confirm"):
            reason += " (it needs a person's approval, which a served call cannot wait for)"
        return reason

    return check
