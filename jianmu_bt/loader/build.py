"""Building: node records -> py_trees behaviours, children first, each tagged with its NodeInfo.

Tools from providers (MCP servers) are known only once the providers start, so nodes that use
them get a stand-in at build time and a `Binding` that gives them the real tools when the tree
starts its providers (`rebind`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import py_trees
from py_trees.behaviour import Behaviour

from jianmu_bt.loader.diagnostics import Diagnostic
from jianmu_bt.loader.expand import NodeRecord
from jianmu_bt.loader.node_info import ATTRIBUTE, NodeInfo
from jianmu_bt.loader.registry import NodeProblem, get_kind
from jianmu_bt.loader.tools_config import ToolCatalog
from jianmu_bt.nodes import AddMessage, AgentLLMNode, AgentLoop, ToolExecutor
from jianmu_bt.tools import Tool, ToolResult, ToolSet


class PendingTool(Tool):
    """Stands in for a tool a provider will offer once it starts; fails clearly if called."""

    blocking = False

    def __init__(self, name: str) -> None:
        self.name = name
        self.description = f"'{name}', offered by a tool provider once it starts"

    async def run(self, input: Any) -> ToolResult:
        return ToolResult.failure(
            self.name,
            f"Error: tool '{self.name}' is not available: the tree's tool providers "
            "(MCP servers) have not started; run the tree with Tree.run/arun/tick",
        )


@dataclass
class Binding:
    """A node's tools to set again once the providers started (`names` None: all tools)."""

    record: NodeRecord
    names: list[str] | None
    apply: Callable[[ToolSet], None]


@dataclass
class BuildContext:
    """What builders use: the tool catalog, and where they leave bindings and owned objects."""

    catalog: ToolCatalog
    bindings: list[Binding] = field(default_factory=list)
    owned_llms: list[Any] = field(default_factory=list)
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
            self.bindings.append(Binding(record, names, apply))


_PARTS: dict[type, tuple[str, str, str]] = {
    AddMessage: ("goal", "add_message", "action"),
    AgentLoop: ("loop", "agent_loop", "decorator"),
    AgentLLMNode: ("llm", "llm", "action"),
    ToolExecutor: ("executor", "executor", "action"),
    py_trees.composites.Sequence: ("turn", "sequence", "composite"),
}


def _detail(record: NodeRecord) -> str:
    config = record.config
    if record.kind == "subtree":
        return record.subtree or ""
    fields = type(config).model_fields  # not getattr: pydantic's miss path is slow
    for attribute in ("tool", "check", "class_", "goal"):
        value = getattr(config, attribute) if attribute in fields else None
        if isinstance(value, str):
            return value
    values = config.values if "values" in fields else None  # type: ignore[attr-defined]
    return ", ".join(values) if isinstance(values, dict) else ""


def _annotate(record: NodeRecord, behaviour: Behaviour) -> None:
    kind = get_kind(record.kind)
    category = kind.category if kind is not None else "behaviour"
    line, col = record.unit.at((*record.path, record.kind), key=True)
    group = record.id if record.kind == "agent" else None
    info = NodeInfo(
        record.id,
        record.kind,
        category,
        behaviour.name,
        record.unit.file,
        line,
        col,
        _detail(record),
        group,
        None,
    )
    setattr(behaviour, ATTRIBUTE, info)
    if record.kind != "agent":
        return
    for inner in behaviour.iterate():
        if inner is behaviour or hasattr(inner, ATTRIBUTE):
            continue
        part, inner_kind, inner_category = _PARTS.get(type(inner), ("part", "behaviour", "action"))
        setattr(
            inner,
            ATTRIBUTE,
            NodeInfo(
                f"{record.id}/{part}",
                inner_kind,
                inner_category,
                inner.name,
                record.unit.file,
                line,
                col,
                info.detail if part == "goal" else "",
                record.id,
                part,
            ),
        )


def build_behaviours(
    records: dict[str, NodeRecord], root_id: str, ctx: BuildContext
) -> tuple[Behaviour | None, list[Diagnostic]]:
    """Build every record (children first); the root behaviour, and the problems met."""
    built: dict[str, Behaviour] = {}
    problems: list[Diagnostic] = []
    for record in reversed(list(records.values())):  # pre-order reversed: children first
        kind = get_kind(record.kind)
        if kind is None:  # unreachable: validation refuses unknown kinds
            continue
        children = [built[c] for c in record.children if c in built]
        try:
            behaviour = kind.build(record, children, ctx)
        except NodeProblem as exc:
            problems.append(record.diagnostic(exc.message, exc.code, exc.path))
            continue
        except Exception as exc:  # a builder's bug or a library refusing: located, no traceback
            problems.append(
                record.diagnostic(
                    f"cannot build this {record.kind} node: {type(exc).__name__}: {exc}",
                    "build-error",
                )
            )
            continue
        _annotate(record, behaviour)
        built[record.id] = behaviour
    return built.get(root_id), problems
