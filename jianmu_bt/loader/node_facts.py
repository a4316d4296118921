"""What a node kind tells the later stages about one node, and the error its hooks raise.

A kind's `io(config)` gives a `NodeIO` (the state keys the node reads and writes, for the
analysis and the checks), its `outcome(config, children)` an `Outcome` (for the reachability
check), and any of its hooks may raise `NodeProblem` for a config that is wrong in a way the
pydantic model cannot see. This module imports none of the loader's stages, so kinds, stages and
the registry can all share these types.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from jianmu_bt.loader.positions import Path


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a node can end in, as far as the file tells: used to find unreachable children."""

    can_succeed: bool = True
    can_fail: bool = True


EITHER = Outcome()
"""A node that can both succeed and fail (the default)."""


@dataclass(slots=True)
class NodeIO:
    """The state keys a node reads and writes (its own, un-remapped names), with where each is
    named in its config (a path below the config), and the literal values it writes."""

    reads: dict[str, Path] = field(default_factory=dict)
    writes: dict[str, Path] = field(default_factory=dict)
    literal_writes: list[tuple[str, Any, Path]] = field(default_factory=list)
    text_writes: list[tuple[str, Path]] = field(default_factory=list)
    #: Typed answers: (key, the answer's JSON Schema, where the schema is named).
    schema_writes: list[tuple[str, Any, Path]] = field(default_factory=list)
    copies: list[tuple[str, str, Path]] = field(default_factory=list)
    tools: list[tuple[str, Path]] = field(default_factory=list)
    output_tool: str | None = None
    #: MCP servers the node uses directly (by the `name:` or `prefix:` of an `mcp:` entry).
    servers: list[tuple[str, Path]] = field(default_factory=list)


class NodeProblem(Exception):
    """A problem with one node's config found while analysing or building it.

    `path` is below the node's config (e.g. `("check",)`); `offset` a character offset inside
    that (one-line) value, when the problem is at a known place in it.
    """

    def __init__(
        self, message: str, path: Path = (), *, code: str = "invalid-node", offset: int = -1
    ) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.code = code
        self.offset = offset
