"""MCP tool annotations <-> jianmu_bt tool metadata (`parallel_safe`, `effect_tags`).

Client side (an MCP tool becomes a Tool):

| MCP annotation           | jianmu_bt metadata                                      |
|--------------------------|---------------------------------------------------------|
| `readOnlyHint: true`     | `parallel_safe = True` (anything else: False)           |
| `destructiveHint: true`  | effect tag `"destructive"`                              |
| `openWorldHint: true`    | effect tag `"open_world"`                               |

Only hints the server states count; the MCP spec's defaults for absent hints are not assumed,
except that a tool is run serially unless the server says it is read-only.

Server side (a Tool is described to MCP clients):

| jianmu_bt metadata                                        | MCP annotation                |
|-----------------------------------------------------------|-------------------------------|
| `parallel_safe` and no writing effect tag                 | `readOnlyHint: true` (else false) |
| a destructive effect tag (`file_write`, `exec`, ...)      | `destructiveHint: true`       |
| an open-world effect tag (`http`, `web_search`, ...)      | `openWorldHint: true` (else false) |
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
DESTRUCTIVE_EFFECTS = frozenset({"file_write", "exec", "shell", "bash", DESTRUCTIVE_TAG})
#: Effect tags that make a served tool reach an open world.
OPEN_WORLD_EFFECTS = frozenset({"http", "web_search", "network", OPEN_WORLD_TAG})


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


def _is_writing(tag: str) -> bool:
    return tag in DESTRUCTIVE_EFFECTS or tag.endswith("_write")


def annotation_hints(parallel_safe: bool, effect_tags: Iterable[str]) -> dict[str, bool]:
    """The MCP hints (snake_case, as the SDK's ToolAnnotations takes them) for this metadata."""
    tags = {t.lower() for t in effect_tags}
    hints = {
        "read_only_hint": parallel_safe and not any(_is_writing(t) for t in tags),
        "open_world_hint": bool(tags & OPEN_WORLD_EFFECTS),
    }
    if tags & DESTRUCTIVE_EFFECTS:
        hints["destructive_hint"] = True
    return hints


def tool_annotation_hints(tool: Tool) -> dict[str, bool]:
    """`annotation_hints` of a Tool's `parallel_safe` and `effect_tags`."""
    return annotation_hints(tool.parallel_safe, tool.effect_tags)
