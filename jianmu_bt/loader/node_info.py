"""NodeInfo: what the loader knows about each behaviour it built, attached to the behaviour.

Every behaviour of a loaded tree carries `behaviour.jianmu`, a NodeInfo with its stable id (the
node's path, or its `id:`), its kind and display category, where it was written, and a short
detail (a tool step's tool, a condition's expression, a subtree's file). The nodes an `agent`
expands to carry `group` (the agent's id) and `part` (goal, loop, turn, llm, executor), so a
display can draw an agent as one cluster. `node_info(behaviour)` reads it (None for behaviours
the loader did not build).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

ATTRIBUTE = "jianmu"
"""The attribute name holding a behaviour's NodeInfo."""


@dataclass(frozen=True, slots=True)
class NodeInfo:
    """A built node's id, kind, category, name, source position and display details."""

    id: str
    kind: str
    category: str
    name: str
    file: str
    line: int
    col: int
    detail: str = ""
    group: str | None = None
    part: str | None = None

    @property
    def location(self) -> str:
        """`file:line:col` of the node in its tree file."""
        return f"{self.file}:{self.line}:{self.col}"


def node_info(behaviour: Any) -> NodeInfo | None:
    """The NodeInfo the loader attached to `behaviour`, or None."""
    info = getattr(behaviour, ATTRIBUTE, None)
    return info if isinstance(info, NodeInfo) else None
