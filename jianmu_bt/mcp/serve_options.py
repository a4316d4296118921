"""The options of `serve` (`jianmu mcp serve`, `python -m jianmu_bt.mcp serve`) and their defaults.

Kept apart from the server and its command line so that building the `jianmu` parser does not
import the tool layer or the MCP SDK.
"""

from __future__ import annotations

import argparse

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
DEFAULT_PATH = "/mcp"
DEFAULT_NAME = "jianmu_bt"


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the `serve` options to `parser` (used by `jianmu mcp serve` too)."""
    parser.add_argument(
        "--tools",
        action="append",
        default=[],
        metavar="SPEC[,SPEC...]",
        help="built-in tool names and/or module:attr specs, comma-separated (repeatable)",
    )
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument(
        "--host",
        default=DEFAULT_HOST,
        help="HTTP host (default %(default)s, loopback; another address needs a token)",
    )
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help="HTTP port, 0 for any (default %(default)s)"
    )
    parser.add_argument("--path", default=DEFAULT_PATH, help="HTTP path (default %(default)s)")
    parser.add_argument("--name", default=DEFAULT_NAME, help="server name sent to clients")
    parser.add_argument("--timeout", type=float, default=None, help="seconds per tool call")
    parser.add_argument(
        "--token-file",
        metavar="PATH",
        help="HTTP: the bearer token clients must send, read from this file (mode 0600); "
        "default: $JIANMU_MCP_TOKEN, else a token generated and printed at start",
    )
    parser.add_argument(
        "--no-auth",
        action="store_true",
        help="HTTP: serve without a token (on a loopback host only)",
    )
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="HTTP: another Host name clients use to reach the server (repeatable; foreign "
        "Host and Origin headers are refused)",
    )


def add_tree_serve_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of `jianmu mcp serve --tree` (besides `--tree` itself)."""
    parser.add_argument(
        "--run-tool",
        action="store_true",
        help="also serve a tool run_<tree name> that runs the whole tree (run events are sent "
        "as progress notifications)",
    )
    parser.add_argument(
        "--store",
        metavar="PATH|URL",
        help="run store (SQLite file or PostgreSQL URL): its runs and checkpoints are served "
        "as resources, and --run-tool runs are durable there",
    )
    parser.add_argument(
        "--traces",
        metavar="DIR",
        help="folder of run traces (RUN_ID.jsonl) served as resources; --run-tool runs write "
        "their traces there",
    )
