"""`jianmu mcp serve`: serve built-in or Python tools as an MCP server (see jianmu_bt.mcp)."""

from __future__ import annotations

import argparse
import functools
from typing import TYPE_CHECKING, Any

from jianmu_bt.cli.errors import CLIError
from jianmu_bt.cli.loading import load_tree_file
from jianmu_bt.cli.subcommand import add_command

if TYPE_CHECKING:
    from jianmu_bt.loader import Tree

HELP = "serve tools over the Model Context Protocol"
EPILOG = """\
examples:
  jianmu mcp serve --tools calculator,read_file
  jianmu mcp serve --tools my_package.tools:search --transport http --port 8000
  jianmu mcp serve --tools calculator --transport http --token-file ~/.jianmu-token
  jianmu mcp serve --tree trees/quickstart.yaml      # a YAML file's tools, under its guard

With --tree, the file's tools (its mcp: servers' tools too) are served under its whole guard:
budgets and rate limits count served calls; calls needing approval are refused.

A tool spec is a built-in name or alias, or module:attr of a Tool, a Tool class, a function, a
ToolSet or a list of them. Over stdio, stdout carries the protocol and messages go to stderr.
Over HTTP (127.0.0.1 unless --host), clients send 'Authorization: Bearer TOKEN': a token
printed at start, or read from --token-file (mode 0600) or $JIANMU_MCP_TOKEN.
Needs the MCP SDK: pip install 'jianmu-bt[mcp]'.
"""


def add_parser(commands: Any) -> None:
    """Register `mcp serve` on the top-level subparsers."""
    from jianmu_bt.mcp.serve_options import add_serve_arguments, add_tree_serve_arguments

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
        help="serve the tools of this YAML tree file under its guard (instead of --tools)",
    )
    add_tree_serve_arguments(serve)  # --run-tool, --store, --traces (see jianmu_bt.cli.mcp_tree)


def handle(args: argparse.Namespace) -> int:
    """Serve until the client disconnects (stdio), or until SIGTERM/SIGINT (then clean up)."""
    import anyio

    from jianmu_bt.mcp import MCPUnavailableError
    from jianmu_bt.mcp.cli import ToolSpecError, exit_status, serve_from_args, until_signalled
    from jianmu_bt.mcp.serve_access import ServeAccessError, access_from_args
    from jianmu_bt.tools.registry import ToolUnavailableError

    if not args.tree:
        alone = [
            flag
            for flag, given in (
                ("--run-tool", getattr(args, "run_tool", False)),
                ("--store", getattr(args, "store", None)),
                ("--traces", getattr(args, "traces", None)),
            )
            if given
        ]
        if alone:
            raise CLIError(f"{', '.join(alone)}: only with --tree FILE (they serve a tree)")
    try:
        access_from_args(args)  # token options checked before a tree's servers start
        if args.tree:
            tree = load_tree_file(args.tree)  # a broken file is reported with its locations
            try:
                # On SIGTERM/SIGINT the tree's providers are closed first, whatever serving
                # is blocked on.
                stop = tree.providers.close
                signum = anyio.run(
                    functools.partial(until_signalled, on_stop=stop), serve_tree, args, tree
                )
            finally:
                tree.close()
        else:
            signum = anyio.run(until_signalled, serve_from_args, args)
    except (ToolSpecError, ToolUnavailableError, MCPUnavailableError, ServeAccessError) as exc:
        raise CLIError(str(exc)) from None
    except OSError as exc:
        raise CLIError(f"cannot serve: {exc}") from None
    return exit_status(signum)


async def serve_tree(args: argparse.Namespace, tree: Tree) -> None:
    """Serve exactly the tree's tools under its whole guard.

    The tree's tool providers (its `mcp:` servers, ...) are started first, in this event loop,
    and closed when serving ends; their tools are served with the others. Every served call is
    checked by the tree's guard and counted by it (budgets and rate limits); a call the guard
    would hold for a reviewer or the user's confirmation is refused, saying so.
    """
    from jianmu_bt.cli.mcp_tree import ServedTree
    from jianmu_bt.mcp.cli import serve_from_args

    session = tree.providers
    try:
        if session.needed:
            try:
                await session.open()
            except Exception as exc:  # ProviderStartError: which provider, and why
                raise CLIError(f"{args.tree}: cannot start the tree's tools: {exc}") from None
        served = ServedTree(args, tree)  # its tools (and run tool), guard, resources, prompts
        try:
            await serve_from_args(args, served.served, served.guard, served.extras)
        finally:
            await served.aclose()
    finally:
        await session.close()
