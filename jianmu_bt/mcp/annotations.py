"""MCP tool annotations <-> jianmu_bt tool metadata (`parallel_safe`, `effect_tags`).

Client side (an MCP tool becomes a Tool):

| MCP annotation           | jianmu_bt metadata                                      |
|--------------------------|---------------------------------------------------------|
| `readOnlyHint: true`     | `parallel_safe = True` (anything else: False)           |
| `destructiveHint: true`  | effect tag `"destructive"`                              |
| `openWorldHint: true`    | effect tag `"open_world"`                               |

Only hints the server states count; the MCP spec's defaults for absent hints are not assumed,
except that a tool is run serially unless the server says it is read-only.

Server side (a Tool is described to MCP clients). Hints are claims a client may act on (skip a
confirmation for a "read-only" tool), so they are derived to fail closed:

| jianmu_bt metadata                                          | MCP annotation                  |
|-------------------------------------------------------------|---------------------------------|
| `parallel_safe`, and no effect tag but reads (`*_read`)     | `readOnlyHint: true` (else false) |
| a write/delete/exec-like tag (`file_write`, `exec`, ...)    | `destructiveHint: true`         |
| only read and network tags (`http_request`, `web_search`)   | `destructiveHint: false`        |
| else, when not read-only (other `*_write`, unknown tags)    | none (MCP reads it as true)     |
| a network tag (`http`, `net`, `search`, `web_search`, ...)  | `openWorldHint: true` (else false) |
| `idempotent` (tools that are not read-only)                 | `idempotentHint`                |

A tool of an MCP server served again (an MCPTool) keeps the annotations its own server sent.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from jianmu_bt.tools.base import Tool

#: Effect tag given to an MCP tool whose server marks it `destructiveHint`.
DESTRUCTIVE_TAG = "destructive"
#: Effect tag given to an MCP tool whose server marks it `openWorldHint`.
OPEN_WORLD_TAG = "open_world"

#: Effect tags that make a served tool destructive (and so not read-only).
DESTRUCTIVE_EFFECTS = frozenset(
    {"file_write", "file_delete", "write", "delete", "exec", "shell", "bash", DESTRUCTIVE_TAG}
)
#: Effect tags (and `_`-separated parts of tags) that make a served tool reach an open world.
OPEN_WORLD_EFFECTS = frozenset(
    {"http", "https", "net", "network", "web", "web_search", "search", "internet", OPEN_WORLD_TAG}
)


def _hint(annotations: Any, field: str) -> bool | None:
    """A hint from an SDK ToolAnnotations model or a plain mapping (camelCase or snake_case)."""
    if annotations is None:
        return None
    if isinstance(annotations, dict):
        camel = field.split("_")[0] + "".join(p.title() for p in field.split("_")[1:])
        value = annotations.get(field, annotations.get(camel))
    else:
        value = getattr(annotations, field, None)
    return value if isinstance(value, bool) else None


def parallel_safe_from_annotations(annotations: Any) -> bool:
    """True only when the server says the tool is read-only."""
    return _hint(annotations, "read_only_hint") is True


def effect_tags_from_annotations(annotations: Any) -> tuple[str, ...]:
    """`("destructive",)`, `("open_world",)`, both or none, from the server's hints."""
    tags = []
    if _hint(annotations, "destructive_hint") is True:
        tags.append(DESTRUCTIVE_TAG)
    if _hint(annotations, "open_world_hint") is True:
        tags.append(OPEN_WORLD_TAG)
    return tuple(tags)


def is_read_effect(tag: str) -> bool:
    """`read` or `*_read`: an effect that only observes."""
    return tag == "read" or tag.endswith("_read")


def is_destructive_effect(tag: str) -> bool:
    """A write/delete/exec-like tag: `file_write`, `*_delete`, `*_exec`, `bash`, ..."""
    return tag in DESTRUCTIVE_EFFECTS or tag.endswith(("_delete", "_exec"))


def is_open_world_effect(tag: str) -> bool:
    """A network tag: `http`, `net`, `web_search`, or a tag with such a part (`net_fetch`)."""
    return tag in OPEN_WORLD_EFFECTS or any(p in OPEN_WORLD_EFFECTS for p in tag.split("_"))


def annotation_hints(
    parallel_safe: bool, effect_tags: Iterable[str], idempotent: bool = False
) -> dict[str, bool]:
    """The MCP hints (snake_case, as the SDK's ToolAnnotations takes them) for this metadata.

    Destructive and idempotent hints mean something only for a tool that is not read-only, so
    they are left out for read-only ones (as the MCP specification reads them).
    """
    tags = {t.lower() for t in effect_tags}
    read_only = parallel_safe and all(is_read_effect(t) for t in tags)
    hints = {
        "read_only_hint": read_only,
        "open_world_hint": any(is_open_world_effect(t) for t in tags),
    }
    if read_only:
        return hints
    if any(is_destructive_effect(t) for t in tags):
        hints["destructive_hint"] = True
    elif tags and all(is_read_effect(t) or is_open_world_effect(t) for t in tags):
        hints["destructive_hint"] = False
    # Otherwise (no tags but not parallel-safe, other writes, unknown tags) it is left out,
    # which MCP clients read as destructive.
    hints["idempotent_hint"] = bool(idempotent)
    return hints


def tool_annotation_hints(tool: Tool) -> dict[str, bool]:
    """`annotation_hints` of a Tool's `parallel_safe`, `effect_tags` and `idempotent`."""
    return annotation_hints(
        tool.parallel_safe, tool.effect_tags, bool(getattr(tool, "idempotent", False))
    )
