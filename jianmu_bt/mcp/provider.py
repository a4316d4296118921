"""MCPToolProvider: an MCP server's tools as jianmu_bt Tools; MCPTool; clash-checked merging.

```python
provider = MCPToolProvider(command="mcp-server-time", args=["--local-timezone", "UTC"],
                           prefix="time")
await provider.initialize()                     # starts the server, lists its tools
tools = ToolSet.from_tools(merge_providers_tools([provider, other]))   # a clash is an error
print(await tools.call("time_get_current_time", {"timezone": "UTC"}))
await provider.close()                          # ends the server process
```
"""

from __future__ import annotations

import contextvars
import logging
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel

from jianmu_bt.mcp.annotations import (
    effect_tags_from_annotations,
    idempotent_from_annotations,
    parallel_safe_from_annotations,
    read_only_from_annotations,
)
from jianmu_bt.mcp.client import MCPClient
from jianmu_bt.mcp.config import MCPServerConfig
from jianmu_bt.mcp.errors import MCPClientError, ToolNameClashError
from jianmu_bt.mcp.notices import Listener, Listeners
from jianmu_bt.mcp.resource_tools import ListResourcesTool, ReadResourceTool
from jianmu_bt.mcp.results import call_result_to_tool_result, wrapped_schema
from jianmu_bt.tools.base import Tool, normalize_parameters
from jianmu_bt.tools.call_context import report_progress
from jianmu_bt.tools.calls import ToolResult
from jianmu_bt.tools.providers import BaseToolProvider, ToolProvider

if TYPE_CHECKING:
    from jianmu_bt.runtime.context import RunContext

logger = logging.getLogger(__name__)

_INVALID_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")


def local_tool_name(remote_name: str, prefix: str | None = None) -> str:
    """The name a server tool gets here: `prefix_name`, with characters that function-calling
    APIs reject (anything but letters, digits, `_` and `-`) replaced by `_`."""
    name = f"{prefix}_{remote_name}" if prefix else remote_name
    return _INVALID_NAME_CHARS.sub("_", name)


class MCPTool(Tool):
    """One tool of an MCP server, called through an MCPClient.

    Name (prefixed when the provider has a prefix), description and input schema come from the
    server's listing; `read_only`, `parallel_safe`, `idempotent` and `effect_tags` from its
    annotations, with the MCP specification's defaults for absent hints: a tool the server does
    not annotate has side effects (see `jianmu_bt.mcp.annotations`). `run` returns a ToolResult:
    the server's `isError` results and every client fault (timeout, lost server, protocol error)
    are failed results, never exceptions.
    """

    blocking = False

    def __init__(
        self,
        client: MCPClient,
        spec: Any,
        *,
        name: str | None = None,
        provider: MCPToolProvider | None = None,
    ) -> None:
        self.client = client
        #: The provider that listed this tool (its tool-list refreshes are awaited by `run`).
        self.provider = provider
        #: The tool's name on the server (what is sent in tools/call).
        self.remote_name: str = spec.name
        self.name = name or spec.name
        self.description = spec.description or f"Tool '{spec.name}' of MCP server '{client.name}'"
        self.input_schema = normalize_parameters(spec.input_schema)
        #: The output schema as the server listed it (None when it listed none).
        self.listed_output_schema = dict(spec.output_schema) if spec.output_schema else None
        if self.listed_output_schema:
            # A wrapped non-object result (`{"result": X}`) is unwrapped by `run`: say X.
            inner = wrapped_schema(self.listed_output_schema)
            self.output_schema = inner if inner is not None else self.listed_output_schema
        #: The server's annotations as it sent them (None when it sent none).
        self.annotations = spec.annotations
        self.read_only = read_only_from_annotations(spec.annotations)
        self.parallel_safe = parallel_safe_from_annotations(spec.annotations)
        self.idempotent = idempotent_from_annotations(spec.annotations)
        self.effect_tags = effect_tags_from_annotations(spec.annotations)

    @property
    def server_name(self) -> str:
        """The name of the server this tool belongs to."""
        return self.client.name

    async def run(self, input: Any) -> ToolResult:
        """Call the tool on the server; always a ToolResult.

        The server's progress notifications go to `report_progress`, in this call's context
        (they arrive in the connection's task, where the caller's progress sink is not set).
        """
        context = contextvars.copy_context()

        def forward(progress: float, total: float | None, message: str | None) -> None:
            context.run(report_progress, progress, total, message)

        try:
            result = await self.client.call_tool(self.remote_name, input, progress=forward)
        except MCPClientError as exc:
            outcome = ToolResult.failure(self.name, f"Error: {exc}")
        else:
            outcome = call_result_to_tool_result(self.name, result, self.listed_output_schema)
        if self.provider is not None:
            # A tool-list change the server announced during the call (before its result, over
            # stdio) is in effect when the caller sees the result. The notice is handled in the
            # connection's task: one checkpoint lets a handler that is ready start its refresh
            # (so `refreshed` sees it) before this task goes on.
            await anyio.lowlevel.checkpoint()
            await self.provider.refreshed()
        return outcome

    def __repr__(self) -> str:
        return f"<MCPTool {self.name!r} of {self.client.name!r}>"


class MCPToolProvider(BaseToolProvider):
    """A ToolProvider backed by one MCP server.

    `initialize` connects (spawning a stdio server) and lists the tools; `get_tools` returns them
    as MCPTools; `close` ends the connection and the server process. Pass an `MCPClient`, or the
    client's keyword options (`command`, `args`, `env`, `cwd`, `url`, `headers`, `timeout`,
    `connect_timeout`). `server_name` (or `name`, as the YAML entry spells it) names the server
    in messages and clash errors; `prefix` renames each tool `prefix_name`; `include` keeps only
    the listed server tools.

    `resources=True` adds two read-only tools for the server's resources (see
    `jianmu_bt.mcp.resource_tools`): `<prefix>_list_resources` and `<prefix>_read_resource`
    (without a prefix, the server's name stands for it); a server that offers no resources is
    then an error at `initialize`.
    """

    def __init__(
        self,
        client: MCPClient | None = None,
        *,
        server_name: str | None = None,
        name: str | None = None,
        prefix: str | None = None,
        include: Sequence[str] | None = None,
        resources: bool = False,
        **client_options: Any,
    ) -> None:
        if server_name is not None and name is not None and server_name != name:
            raise TypeError(f"give server_name or name, not both: {server_name!r}, {name!r}")
        server_name = server_name if server_name is not None else name
        if client is None:
            client = MCPClient(name=server_name, **client_options)
        elif client_options:
            raise TypeError(
                f"pass either an MCPClient or client options, not both: {sorted(client_options)}"
            )
        if prefix is not None and not re.fullmatch(r"[A-Za-z0-9_-]+", prefix):
            raise ValueError(f"MCP tool prefix must be letters, digits, '_' or '-', got {prefix!r}")
        self.client = client
        self.prefix = prefix
        self.include = list(include) if include is not None else None
        #: Whether the server's resources are offered as tools (list, read).
        self.resources = resources
        #: Server tools left out, with the reason (for listings): name -> reason.
        self.skipped: dict[str, str] = {}
        #: How many times the tool list was (re)built; a refresh after a change adds one.
        self.version = 0
        self._server_name = server_name
        self._tools: list[Tool] | None = None
        self._changes = Listeners("rebuilt-tools")
        self._refreshing = False
        self._stale = False
        self._settled: anyio.Event | None = None  # set when the running refresh ends
        client.on_tools_changed(self._tools_changed)

    @classmethod
    def from_config(cls, config: MCPServerConfig | Mapping[str, Any]) -> MCPToolProvider:
        """A provider for one `mcp:` entry of a YAML `tools` list (validated)."""
        cfg = MCPServerConfig.coerce(config)
        return cls(
            MCPClient.from_config(cfg),
            server_name=cfg.name,
            prefix=cfg.prefix,
            include=cfg.include,
            resources=cfg.resources,
        )

    @property
    def server_name(self) -> str:
        """The server's name: the one given, else the client's (see `MCPClient.name`)."""
        return self._server_name or self.client.name

    @property
    def given_name(self) -> str | None:
        """The name given explicitly (`server_name=`, else the client's configured `name`), or
        None: what a tree's nodes may call the server by before it starts."""
        return self._server_name or self.client.config.name or None

    def attach_run(self, run: RunContext | None) -> None:
        """Answer the server's sampling and elicitation requests for `run` (the run's
        RunContext: its LLM, guard and events; None for no run), as the
        config's `sampling` and `elicitation` say. Takes effect at the next `initialize`."""
        from jianmu_bt.mcp.run_requests import request_callbacks

        self.client.set_request_callbacks(request_callbacks(self.client, run))

    async def initialize(self) -> None:
        """Connect and list the server's tools (again, when called again). When the listing
        fails (a missing `include`d tool, `resources: true` on a server without resources, a
        fault), the connection is closed and its server ended before the error is raised."""
        await self.client.connect()
        try:
            await self.refresh(strict=True)
        except BaseException:
            with anyio.CancelScope(shield=True):  # ended even when the start was cancelled
                await self.client.close()
            raise

    async def refresh(self, *, strict: bool = False) -> None:
        """List the server's tools again and rebuild them (tools already handed out keep
        working). `strict`: a tool named in `include` that the server lacks is an error;
        otherwise (a change the server announced) it is logged and left out."""
        specs = await self.client.list_tools()
        available = [spec.name for spec in specs]
        if self.include is not None:
            missing = [n for n in self.include if n not in available]
            if missing:
                problem = (
                    f"MCP server '{self.server_name}' has no tool {', '.join(map(repr, missing))} "
                    f"(from `include`); it offers: {', '.join(available) or 'none'}"
                )
                if strict:
                    raise MCPClientError(problem)
                logger.warning("%s", problem)
            specs = [spec for spec in specs if spec.name in self.include]
        skipped = {spec.name: reason for spec in specs if (reason := unusable_reason(spec))}
        for name, reason in skipped.items():
            if self.skipped.get(name) == reason:  # said at an earlier listing already
                continue
            logger.warning(
                "MCP server '%s': tool '%s' left out: %s", self.server_name, name, reason
            )
        tools: list[Tool] = [
            MCPTool(self.client, spec, name=local_tool_name(spec.name, self.prefix), provider=self)
            for spec in specs
            if spec.name not in skipped
        ]
        if self.resources:
            tools.extend(await self._resource_tools())
        check_unique_names([(self.label, t) for t in tools])
        self._tools, self.skipped = tools, skipped
        self.version += 1

    async def _resource_tools(self) -> list[Tool]:
        """The list and read tools of the server's resources (`resources: true`)."""
        if not await self.client.offers("resources"):
            raise MCPClientError(
                f"MCP server '{self.server_name}' offers no resources (its capabilities declare "
                "none), but `resources: true` asks for its resources as tools"
            )
        prefix = self.prefix or self.server_name
        return [
            ListResourcesTool(self.client, local_tool_name("list_resources", prefix)),
            ReadResourceTool(self.client, local_tool_name("read_resource", prefix)),
        ]

    def on_tools_changed(self, listener: Listener) -> Callable[[], None]:
        """Call `listener(provider)` (sync, or async and awaited) after the tools were rebuilt
        because the server said its tool list changed, in the connection's task; returns a
        function that removes it. A listener that raises is logged and skipped."""
        return self._changes.add(listener)

    async def _tools_changed(self) -> None:
        # A flood of notifications costs at most one listing running and one more after it.
        if self._refreshing:
            self._stale = True
            return
        self._refreshing = True
        self._settled = settled = anyio.Event()
        try:
            self._stale = True
            while self._stale:
                self._stale = False
                if not self.client.connected:  # gone: its next call reconnects
                    return
                try:
                    await self.refresh()
                except (MCPClientError, ToolNameClashError) as exc:
                    logger.warning(
                        "MCP server '%s': tools not refreshed: %s", self.server_name, exc
                    )
                    return
                await self._changes.notify(self.server_name, self)
        finally:
            self._refreshing = False
            settled.set()

    async def refreshed(self) -> None:
        """Wait (within the client's timeout) for a tool-list refresh under way to end."""
        settled = self._settled
        if settled is not None and not settled.is_set():
            with anyio.move_on_after(self.client.config.timeout):
                await settled.wait()

    def get_tools(self, **kwargs: Any) -> list[Tool]:
        """The server's tools; `initialize` must have run."""
        if self._tools is None:
            raise RuntimeError(
                f"MCPToolProvider for MCP server '{self.server_name}' is not initialized: "
                "await provider.initialize() first"
            )
        return list(self._tools)

    async def close(self) -> None:
        """Close the connection and end the server process. Safe to call more than once."""
        await self.client.close()

    @property
    def label(self) -> str:
        """How this provider is named in clash errors."""
        return f"MCP server '{self.server_name}'"

    def __repr__(self) -> str:
        return f"<MCPToolProvider {self.server_name!r} prefix={self.prefix!r}>"


def unusable_reason(spec: Any) -> str | None:
    """Why a listed server tool cannot be called from here (None when it can)."""
    execution = getattr(spec, "execution", None)
    if getattr(execution, "task_support", None) == "required":
        return (
            "it requires task-augmented execution (execution.taskSupport: required), "
            "which this client does not support"
        )
    return None


def provider_label(provider: Any) -> str:
    """A provider's name for messages: its `label`, its `server_name`, or its class name."""
    label = getattr(provider, "label", None)
    if isinstance(label, str) and label:
        return label
    name = getattr(provider, "server_name", None)
    if isinstance(name, str) and name:
        return f"MCP server '{name}'"
    return f"provider {type(provider).__name__}"


def check_unique_names(labelled_tools: Iterable[tuple[str, Tool]]) -> None:
    """Raise ToolNameClashError when two tools share a name (case-insensitively)."""
    seen: dict[str, str] = {}
    for label, tool in labelled_tools:
        key = tool.name.lower()
        if key in seen:
            first = seen[key]
            where = f"both {first} and {label}" if first != label else f"{label} twice"
            raise ToolNameClashError(
                f"tool name '{tool.name}' is offered by {where}; give the MCP servers a "
                "`prefix` (for example prefix: time -> time_get_current_time) so each tool "
                "keeps its own name"
            )
        seen[key] = label


def merge_providers_tools(
    providers: Iterable[ToolProvider], *, extra: Iterable[Tool] = (), **kwargs: Any
) -> list[Tool]:
    """All tools of initialised providers (plus `extra` tools), refusing same-named tools.

    Unlike `ToolSet.from_providers` (last wins), a clash raises ToolNameClashError naming both
    sources and the tool: a server's tool must never silently replace another's.
    """
    labelled: list[tuple[str, Tool]] = [("a tool given directly", t) for t in extra]
    for provider in providers:
        label = provider_label(provider)
        labelled.extend((label, tool) for tool in provider.get_tools(**kwargs))
    check_unique_names(labelled)
    return [tool for _, tool in labelled]
