"""Tool providers of a loaded tree, started in the run's event loop and closed after it.

MCP connections belong to the event loop that opened them, so the providers are started inside
the run (`arun`, or the background loop that step-by-step `tick()` uses), their tools are given
to the nodes that use them (`Binding`s), and they are closed when the run ends. `LoadedRunner`
is a TreeRunner that does this around every run.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from typing import Any

import anyio
import anyio.from_thread
from py_trees.common import Status

from jianmu_bt.loader.catalog import ToolCatalog
from jianmu_bt.loader.context import Binding
from jianmu_bt.runtime import RunResult, TreeRunner
from jianmu_bt.tools import ToolSet

logger = logging.getLogger(__name__)

CLOSE_TIMEOUT = 15.0
"""Longest wait for all providers to close."""


class ProviderStartError(RuntimeError):
    """A tool provider of the tree could not start, or its tools do not fit the tree."""


class ProviderSession:
    """Starts the tree's providers, rebinds nodes to their tools, and closes them."""

    def __init__(self, catalog: ToolCatalog, bindings: list[Binding]) -> None:
        self.catalog = catalog
        self.bindings = bindings
        self.toolset: ToolSet | None = None
        self._opened: list[Any] = []

    @property
    def needed(self) -> bool:
        """Whether the tree has providers to start."""
        return bool(self.catalog.providers)

    @property
    def is_open(self) -> bool:
        """Whether the providers are running now."""
        return self.toolset is not None

    async def open(self) -> None:
        """Start every provider, then give each bound node its tools; all or nothing."""
        from jianmu_bt.mcp.provider import merge_providers_tools, provider_label

        for provider in self.catalog.providers:
            try:
                await provider.initialize()
            except BaseException as exc:
                await self.close()
                if not isinstance(exc, Exception):
                    raise
                raise ProviderStartError(
                    f"{provider_label(provider)} could not start: {type(exc).__name__}: {exc}"
                ) from exc
            self._opened.append(provider)
        try:
            tools = merge_providers_tools(
                self.catalog.providers, extra=self.catalog.toolset().tools
            )
            full = ToolSet.from_tools(tools)
            for binding in self.bindings:
                binding.apply(self._pick(full, binding))
        except Exception as exc:
            await self.close()
            raise ProviderStartError(str(exc)) from exc
        self.toolset = full

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
        opened, self._opened = self._opened, []
        self.toolset = None
        with anyio.move_on_after(CLOSE_TIMEOUT, shield=True):
            for provider in reversed(opened):
                try:
                    await provider.close()
                except Exception:
                    logger.exception("closing tool provider %r failed", provider)


class LoadedRunner(TreeRunner):
    """A TreeRunner that starts the tree's providers before a run and closes them after it.

    `owned` are objects with `async aclose()` the tree created (LLM providers from the file),
    closed in the loop of each run (their HTTP clients belong to it).
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
                await self.session.open()
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
        try:
            return await super().arun(inputs, timeout=timeout)
        finally:
            if opened_here:
                await self.session.close()
            if not self.has_background_loop:  # a tick()-driven run closes these in close()
                await self.close_owned()

    async def close_owned(self) -> None:
        """Close the objects the tree created (LLM clients), ignoring their errors."""
        for item in self.owned:
            with contextlib.suppress(Exception):
                await item.aclose()

    def tick(self) -> Status:
        """One tick (see TreeRunner.tick); the first one starts the providers."""
        if self.session.needed and not self.session.is_open:
            # The providers open in the loop the nodes' tasks run in, before the first tick.
            self.background_loop().call(self.session.open)
        return super().tick()

    def close(self) -> None:
        """Close the providers and owned objects in the tick loop, then stop it."""
        if self.has_background_loop:
            loop = self.background_loop()
            if self.session.is_open:
                loop.call(self.session.close)
            loop.call(self.close_owned)
        super().close()
