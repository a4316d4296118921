"""`python -m jianmu_bt.mcp serve`: serve built-in or Python tools as an MCP server.

```
python -m jianmu_bt.mcp serve --tools calculator,my.module:my_tool --transport stdio
python -m jianmu_bt.mcp serve --tools my.module:tools --transport http --host 127.0.0.1 --port 8000
```

Over HTTP clients need a bearer token (printed at start, or `--token-file`, or
`$JIANMU_MCP_TOKEN`; see `jianmu_bt.mcp.serve_access`).

A tool spec is a built-in name or alias (`calculator`, `web_search`) or `module:attr`, where the
attribute is a Tool, a Tool subclass, a plain function (wrapped with `@tool`), a ToolSet or a list
of these. `add_serve_arguments` and `serve_from_args` let another command line (`jianmu mcp serve`)
offer the same options.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

import anyio

from jianmu_bt.mcp.errors import MCPUnavailableError
from jianmu_bt.mcp.serve_access import ServeAccessError, ServedAccess, access_from_args
from jianmu_bt.mcp.serve_options import add_serve_arguments
from jianmu_bt.mcp.server import (
    AnyGuard,
    ServedTools,
    ServerPart,
    announce,
    serve as serve_toolset,
)
from jianmu_bt.tools.base import Tool
from jianmu_bt.tools.function_tool import FunctionTool
from jianmu_bt.tools.references import ReferenceProblem, resolve_reference
from jianmu_bt.tools.registry import (
    BuiltinToolProvider,
    ToolUnavailableError,
    UnknownToolError,
)
from jianmu_bt.tools.toolset import ToolSet


class ToolSpecError(ValueError):
    """A `--tools` entry that cannot be loaded; the message names the entry."""


def split_tool_specs(values: Iterable[str]) -> list[str]:
    """Comma-separated `--tools` values (the option may repeat) as one list of specs."""
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


def _tools_from_object(spec: str, value: Any) -> list[Tool]:
    if isinstance(value, Tool):
        return [value]
    if isinstance(value, ToolSet):
        return value.tools
    if isinstance(value, type) and issubclass(value, Tool):
        try:
            return [value()]
        except TypeError as exc:
            raise ToolSpecError(f"'{spec}': cannot build {value.__name__}() ({exc})") from exc
    if callable(value):
        return [FunctionTool(value)]
    if isinstance(value, Iterable) and not isinstance(value, (str, bytes)):
        return [tool for item in value for tool in _tools_from_object(spec, item)]
    raise ToolSpecError(
        f"'{spec}' is a {type(value).__name__}, not a Tool, Tool class, function, ToolSet or list"
    )


def load_python_tools(spec: str) -> list[Tool]:
    """The tools named by a `module:attr` spec (the attribute may be dotted)."""
    try:
        value = resolve_reference(spec)
    except ReferenceProblem as problem:
        raise ToolSpecError(str(problem)) from None
    return _tools_from_object(spec, value)


def load_toolset(specs: Sequence[str]) -> ToolSet:
    """A ToolSet from built-in names and `module:attr` specs, in order; errors name the spec."""
    builtin_names = [s for s in specs if ":" not in s]
    custom: list[Tool] = []
    for spec in specs:
        if ":" in spec:
            custom.extend(load_python_tools(spec))
    try:
        builtins = ToolSet.resolve(builtin_names) if builtin_names else ToolSet()
    except UnknownToolError as exc:
        raise ToolSpecError(str(exc)) from exc
    missing = [
        n for n in builtin_names if builtins.get(BuiltinToolProvider.canonical_name(n)) is None
    ]
    if missing:
        raise ToolSpecError(
            f"built-in tool {', '.join(map(repr, missing))} is not available here "
            "(see the log above for why)"
        )
    return builtins.merge(custom)


async def serve_from_args(
    args: argparse.Namespace,
    toolset: ToolSet | ServedTools | None = None,
    guard: AnyGuard | None = None,
    extras: Sequence[ServerPart] = (),
) -> None:
    """Serve what the parsed `serve` options describe, or `toolset` when one is given (for
    example the tools of a YAML tree; `--tools` is then ignored), refusing what `guard` refuses;
    `extras` add resources and prompts (see `build_mcp_server`).

    Prints where it listens to stderr once ready (stdout carries MCP over stdio), over HTTP
    with the token to send (see `jianmu_bt.mcp.serve_access`).
    """
    access = access_from_args(args)  # bad token options are refused before anything starts
    if toolset is None:
        specs = split_tool_specs(args.tools)
        if not specs:
            raise ToolSpecError("no tools to serve: pass --tools NAME[,module:attr...]")
        toolset = load_toolset(specs)
    first = toolset.toolset if isinstance(toolset, ServedTools) else toolset
    if len(first) == 0:
        raise ToolSpecError("no tools to serve: the tool set is empty")
    await serve_toolset(
        toolset,
        transport=args.transport,
        host=args.host,
        port=args.port,
        path=args.path,
        name=args.name,
        timeout=args.timeout,
        guard=guard,
        on_ready=_announce(first, access),
        extras=extras,
        access=access,
    )


def _announce(toolset: ToolSet, access: ServedAccess | None) -> Callable[[str], None]:
    """Print where the server listens and, over HTTP, how to connect (once, on stderr)."""
    where = announce(toolset)

    def on_ready(url: str) -> None:
        where(url)
        if access is not None:
            print(access.notice(url), file=sys.stderr, flush=True)

    return on_ready


#: Signals that stop a server gracefully (its clean-up, such as closing providers, runs).
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
#: Seconds a stopped server has to wind down before the process leaves without waiting.
STOP_WAIT = 2.0


async def until_signalled(
    serving: Callable[..., Awaitable[None]],
    *args: Any,
    on_stop: Callable[[], Awaitable[None]] | None = None,
) -> int | None:
    """Run `serving(*args)` until it returns, or until SIGTERM/SIGINT stops it.

    On a signal, `on_stop()` runs first (shielded: for example closing the MCP servers the
    served tools started, with their process groups), then `serving` is cancelled so its
    `finally` blocks run. The SDK's stdio server reads stdin in a worker thread that cannot be
    cancelled, so when serving has not ended `STOP_WAIT` seconds later the process exits at once
    (status 128 + the signal), its clean-up done. Returns the signal number that stopped it, or
    None. Needs the main thread (Python delivers signals there only).
    """
    stopped: list[int] = []
    try:
        async with anyio.create_task_group() as tg:
            serving_scope = anyio.CancelScope()

            async def watch() -> None:
                with anyio.open_signal_receiver(*STOP_SIGNALS) as signals:
                    async for signum in signals:
                        stopped.append(int(signum))
                        if on_stop is not None:
                            with anyio.CancelScope(shield=True):
                                await on_stop()
                        serving_scope.cancel()
                        await anyio.sleep(STOP_WAIT)
                        _leave(128 + int(signum))

            tg.start_soon(watch)
            with serving_scope:
                await serving(*args)
            tg.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        raise _single(group) from None
    return stopped[0] if stopped else None


def _leave(status: int) -> None:
    """Exit now, without waiting for worker threads blocked on stdin."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(status)


def exit_status(signum: int | None) -> int:
    """0 for a server that ended by itself, 128 + the signal number for one that was stopped."""
    return 0 if signum is None else 128 + signum


def _single(group: BaseExceptionGroup) -> BaseException:
    """The one exception inside (nested) one-member groups, else the group itself."""
    exc: BaseException = group
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def build_parser() -> argparse.ArgumentParser:
    """`python -m jianmu_bt.mcp` with its one subcommand, `serve`."""
    parser = argparse.ArgumentParser(
        prog="python -m jianmu_bt.mcp", description=__doc__.split("\n")[0]
    )
    commands = parser.add_subparsers(dest="command", required=True)
    add_serve_arguments(commands.add_parser("serve", help="serve tools as an MCP server"))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status (2 for bad options or tools, 1 for other failures)."""
    args = build_parser().parse_args(argv)
    try:
        signum = anyio.run(until_signalled, serve_from_args, args)
    except (ToolSpecError, ToolUnavailableError, MCPUnavailableError, ServeAccessError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return exit_status(signum)
