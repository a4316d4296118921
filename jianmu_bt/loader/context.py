"""BuildContext: what node kinds' builders are given besides their node and its children.

A builder takes its tools from the context (`tool`, `tools`), leaves the LLM clients and guards
it creates there for the Tree to own, and `bind`s nodes whose tools come from providers (MCP
servers): those are known only once the providers start, so such a node gets a `PendingTool`
stand-in now and a `Binding` that gives it the real tools when the tree starts its providers.
This module imports none of the loader's stages.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from jianmu_bt.loader.catalog import ToolCatalog
from jianmu_bt.loader.records import NodeRecord
from jianmu_bt.tools import Tool, ToolResult, ToolSet


class PendingTool(Tool):
    """Stands in for a tool a provider will offer once it starts; fails clearly if called."""

    blocking = False

    def __init__(self, name: str) -> None:
        self.name = name
        self.description = f"'{name}', offered by a tool provider once it starts"

    async def run(self, input: Any) -> ToolResult:
        """A failed result: the providers have not started."""
        return ToolResult.failure(
            self.name,
            f"Error: tool '{self.name}' is not available: the tree's tool providers "
            "(MCP servers) have not started; run the tree with Tree.run/arun/tick",
        )


@dataclass(slots=True)
class Binding:
    """A node's tools to set again once the providers started (`names` None: all tools).

    `where` is the node as messages name it (`file:line:col: node 'name'`): a binding outlives
    the load, so it keeps that text rather than the node's record and its file's data.
    """

    where: str
    names: list[str] | None
    apply: Callable[[ToolSet], None]


@dataclass
class BuildContext:
    """What builders use: the tool catalog, and where they leave bindings and owned objects."""

    catalog: ToolCatalog
    bindings: list[Binding] = field(default_factory=list)
    owned_llms: list[Any] = field(default_factory=list)
    owned_runners: list[Any] = field(default_factory=list)
    guards: list[Any] = field(default_factory=list)
    _all: ToolSet | None = None

    def tool(self, name: str) -> Tool:
        """The tool called `name`, or a stand-in until the providers start."""
        return self.catalog.get(name) or PendingTool(name)

    def tools(self, names: list[str] | None) -> ToolSet:
        """The named tools (None: every tool of the tree)."""
        if names is None:
            if self._all is None:
                self._all = self.catalog.toolset()
            return self._all
        return ToolSet.from_tools([self.tool(name) for name in names])

    def bind(
        self, record: NodeRecord, names: list[str] | None, apply: Callable[[ToolSet], None]
    ) -> None:
        """Remember how to give `record`'s node its tools again (only needed with providers)."""
        if self.catalog.providers:
            line, col = record.at()
            where = f"{record.unit.file}:{line}:{col}: node '{record.name}'"
            self.bindings.append(Binding(where, names, apply))
