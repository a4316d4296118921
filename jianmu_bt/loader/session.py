"""Tool providers of a loaded tree, started in the run's event loop and closed after it.

MCP connections belong to the event loop that opened them, so the providers are started inside
the run (`arun`, or the background loop that step-by-step `tick()` uses), their tools are given
to the nodes that use them (`Binding`s), and they are closed when the run ends. `LoadedRunner`
is a TreeRunner that does this around every run.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import anyio
import anyio.from_thread
from py_trees.common import Status

from jianmu_bt.loader.catalog import ToolCatalog
from jianmu_bt.loader.context import Binding
from jianmu_bt.runtime import RunResult, TreeRunner
from jianmu_bt.runtime.questions import withdraw_open_questions
from jianmu_bt.tools import ToolSet

if TYPE_CHECKING:
    from jianmu_bt.runtime.context import RunContext

logger = logging.getLogger(__name__)

CLOSE_TIMEOUT = 15.0
"""Longest wait for all providers to close."""


class ProviderStartError(RuntimeError):
    """A tool provider of the tree could not start, or its tools do not fit the tree."""


class ProviderSession:
    """Starts the tree's providers, rebinds nodes to their tools, and closes them.

    The providers start side by side (a tree with four MCP servers waits for the slowest, not
    for the sum), all or nothing: the first failure cancels the others' starts and closes every
    provider. A provider that announces a changed tool list (an MCP server's
    `notifications/tools/list_changed`) is refreshed in the background; the nodes get the new
    tools at the start of the next tick (`apply_changes`), never during one.
    """

    def __init__(self, catalog: ToolCatalog, bindings: list[Binding]) -> None:
        self.catalog = catalog
        self.bindings = bindings
        self.toolset: ToolSet | None = None
        self._opened: list[Any] = []
        self._unsubscribe: list[Callable[[], None]] = []
        self._changed = threading.Event()

    @property
    def needed(self) -> bool:
        """Whether the tree has providers to start."""
        return bool(self.catalog.providers)

    @property
    def is_open(self) -> bool:
        """Whether the providers are running now."""
        return self.toolset is not None

    async def open(self, run: RunContext | None = None) -> None:
        """Start every provider (concurrently), then give each bound node its tools; all or
        nothing. `run` (the run's RunContext) answers what providers ask of the run: an MCP
        server's sampling and elicitation requests (`attach_run`)."""
        from jianmu_bt.mcp.provider import provider_label

        providers = list(self.catalog.providers)
        for provider in providers:
            attach = getattr(provider, "attach_run", None)
            if callable(attach):
                attach(run)
        failures: dict[int, BaseException] = {}
        started: list[Any] = []

        async def start(index: int, provider: Any) -> None:
            try:
                await provider.initialize()
            except Exception as exc:
                failures[index] = exc
                tasks.cancel_scope.cancel()  # all or nothing: stop waiting for the others
            else:
                started.append(provider)

        try:
            async with anyio.create_task_group() as tasks:
                for index, provider in enumerate(providers):
                    tasks.start_soon(start, index, provider)
        finally:
            # Any provider may have spawned something, started or not: unless all started,
            # close them all (closing one that never started costs nothing).
            self._opened = providers
            if failures or len(started) != len(providers):
                await self.close()
        if failures:
            index, exc = min(failures.items(), key=lambda item: item[0])
            raise ProviderStartError(
                f"{provider_label(providers[index])} could not start: {type(exc).__name__}: {exc}"
            ) from exc
        try:
            full = self._bind_all()
        except Exception as exc:
            await self.close()
            raise ProviderStartError(str(exc)) from exc
        self.toolset = full
        for provider in providers:
            listen = getattr(provider, "on_tools_changed", None)
            if callable(listen):
                self._unsubscribe.append(listen(lambda _provider: self._changed.set()))

    def _bind_all(self) -> ToolSet:
        """Every provider's tools with the catalog's, given to each bound node."""
        from jianmu_bt.mcp.provider import merge_providers_tools

        tools = merge_providers_tools(self.catalog.providers, extra=self.catalog.toolset().tools)
        full = ToolSet.from_tools(tools)
        # Every pick first: a change that does not fit one node changes no node.
        picks = [(binding, self._pick(full, binding)) for binding in self.bindings]
        for binding, picked in picks:
            binding.apply(picked)
        return full

    def apply_changes(self) -> bool:
        """Give the nodes the tools of providers that changed since the last call (call it
        between ticks); True when something was applied. All or nothing: a change that no
        longer fits the tree (a node's tool went away, a name clash) is logged and every node
        keeps its tools."""
        if not self._changed.is_set() or self.toolset is None:
            return False
        self._changed.clear()
        try:
            self.toolset = self._bind_all()
        except Exception as exc:
            logger.warning("the tools of a provider changed but cannot be used: %s", exc)
            return False
        return True

    @staticmethod
    def _pick(full: ToolSet, binding: Binding) -> ToolSet:
        if binding.names is None:
            return full
        try:
            return full.subset(binding.names)
        except KeyError as exc:
            raise ProviderStartError(f"{binding.where}: {exc.args[0]}") from None

    async def close(self) -> None:
        """Close the providers that were started (errors are logged, never raised)."""
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self._unsubscribe = []
        opened, self._opened = self._opened, []
        self.toolset = None

        async def close_one(provider: Any) -> None:
            try:
                await provider.close()
            except Exception:
                logger.exception("closing tool provider %r failed", provider)

        # Side by side: each may wait out its server's grace period.
        with anyio.move_on_after(CLOSE_TIMEOUT, shield=True):
            async with anyio.create_task_group() as tasks:
                for provider in reversed(opened):
                    tasks.start_soon(close_one, provider)


class LoadedRunner(TreeRunner):
    """A TreeRunner that starts the tree's providers before a run and closes them after it.

    `owned` are objects with `async aclose()` the tree created (LLM providers from the file),
    opened at the start of each run (pooled connections) and closed in the loop of that run
    (their HTTP clients belong to it).
    """

    def __init__(
        self, *args: Any, session: ProviderSession, owned: list[Any], **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.session = session
        self.owned = owned

    async def arun(
        self, inputs: Mapping[str, Any] | None = None, *, timeout: float | None = None
    ) -> RunResult:
        """Start the providers (unless `tick()` did), run, close what this run started."""
        opened_here = False
        if self.session.needed and not self.session.is_open:
            try:
                await self.session.open(self.context)
            except ProviderStartError as exc:
                reason = str(exc)
                self.events.emit("tree.finished", status="FAILURE", ticks=0, reason=reason)
                return RunResult(
                    Status.FAILURE,
                    self.state.get(),
                    self.tick_count,
                    reason,
                    self.context.run_id,
                    0.0,
                    self.node_statuses(),
                )
            opened_here = True
        if not self.has_background_loop:
            await self.open_owned()
        try:
            return await super().arun(inputs, timeout=timeout)
        finally:
            if opened_here:
                await self.session.close()
            if not self.has_background_loop:  # a tick()-driven run closes these in close()
                await self.close_owned()

    async def open_owned(self) -> None:
        """Open the LLM providers the tree created, so a run's requests share pooled
        connections (one handshake per host, not one per LLM turn); `close_owned` closes them."""
        for item in self.owned:
            if callable(getattr(item, "complete", None)) and callable(getattr(item, "open", None)):
                with contextlib.suppress(Exception):  # a provider that cannot pool still works
                    await item.open()

    async def close_owned(self) -> None:
        """Close the objects the tree created (LLM clients), ignoring their errors."""
        for item in self.owned:
            with contextlib.suppress(Exception):
                await item.aclose()

    def _tick_once(self) -> Status:
        # Between ticks: the nodes take up tools a provider announced as changed.
        self.session.apply_changes()
        return super()._tick_once()

    def halt(self) -> None:
        """Stop the run's work (TreeRunner.halt, also called when a run ends) and withdraw the
        questions for a person still open: a server may ask outside the call it was halted in
        (the 2025 protocols), so cancelling the call alone would leave its question waiting."""
        super().halt()
        withdraw_open_questions(self.context, "withdrawn: the run ended or was halted")

    def tick(self) -> Status:
        """One tick (see TreeRunner.tick); the first one starts the providers."""
        if self.session.needed and not self.session.is_open:
            # The providers open in the loop the nodes' tasks run in, before the first tick.
            self.background_loop().call(self.session.open, self.context)
        return super().tick()

    def close(self) -> None:
        """Close the providers and owned objects in the tick loop, then stop it."""
        # Open questions first: their askers answer while the servers are still connected.
        withdraw_open_questions(self.context, "withdrawn: the tree was closed")
        if self.has_background_loop:
            loop = self.background_loop()
            if self.session.is_open:
                loop.call(self.session.close)
            loop.call(self.close_owned)
        super().close()
