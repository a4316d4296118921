"""MCP tool annotations <-> jianmu_bt tool metadata (`read_only`, `idempotent`, `effect_tags`).

Client side (an MCP tool becomes a Tool). The MCP specification's defaults for absent hints hold
(`readOnlyHint` false, `destructiveHint` true, `idempotentHint` false, `openWorldHint` true), so a
tool its server does not annotate is a destructive, open-world tool with side effects: a durable
run holds one in flight at a crash in doubt instead of running it again.

| MCP annotation                   | jianmu_bt metadata                                   |
|----------------------------------|------------------------------------------------------|
| `readOnlyHint: true`             | `read_only = True`, `parallel_safe = True`           |
| `readOnlyHint` false or absent   | not read-only, `parallel_safe = False` (serial)      |
| `destructiveHint` true or absent | effect tag `"destructive"` (tools not read-only)     |
| `openWorldHint` true or absent   | effect tag `"open_world"`                            |
| `idempotentHint: true`           | `idempotent = True` (tools not read-only)            |

`destructiveHint` and `idempotentHint` mean something only for a tool that is not read-only (as
the specification reads them), so a read-only tool gets neither from them.

Server side (a Tool is described to MCP clients). Every hint is sent, none left to the client's
defaults; hints are claims a client may act on (skip a confirmation for a "read-only" tool), so
they are derived to fail closed:

| jianmu_bt metadata                                           | MCP annotation                |
|--------------------------------------------------------------|-------------------------------|
| `read_only`                                                  | `readOnlyHint` (exactly then) |
| read-only                                                    | `destructiveHint: false`      |
| a write/delete/exec-like tag (`file_write`, `exec`, `bash`)  | `destructiveHint: true`       |
| only read and network tags (`http_request`)                  | `destructiveHint: false`      |
| else, not read-only: no tags (effects unknown), other tags   | `destructiveHint: true`       |
| read-only; else `idempotent`                                 | `idempotentHint: true`/false  |
| a network tag (`http`, `net`, `search`, `web_search`, ...)   | `openWorldHint: true`         |
| not read-only and no tags (effects unknown)                  | `openWorldHint: true`         |
| else                                                         | `openWorldHint: false`        |

A tool of an MCP server served again (an MCPTool) keeps the annotations its own server sent.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from jianmu_bt.tools.base import Tool
from jianmu_bt.tools.effects import (
    OPEN_WORLD_EFFECTS as OPEN_WORLD_EFFECTS,
    OPEN_WORLD_TAG as OPEN_WORLD_TAG,
    is_open_world_effect as is_open_world_effect,
    is_read_effect as is_read_effect,
)

#: Effect tag given to an MCP tool that is destructive (`destructiveHint` true or absent).
DESTRUCTIVE_TAG = "destructive"

#: Effect tags that make a served tool destructive.
DESTRUCTIVE_EFFECTS = frozenset(
    {"file_write", "file_delete", "write", "delete", "exec", "shell", "bash", DESTRUCTIVE_TAG}
)
#: `_`-separated parts of a tag that make it destructive (`web_write`, `db_delete`).
_DESTRUCTIVE_PARTS = frozenset({"write", "delete", "exec"})


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


def read_only_from_annotations(annotations: Any) -> bool:
    """True only when the server says `readOnlyHint: true`."""
    return _hint(annotations, "read_only_hint") is True


def parallel_safe_from_annotations(annotations: Any) -> bool:
    """True only when the server says the tool is read-only."""
    return read_only_from_annotations(annotations)


def idempotent_from_annotations(annotations: Any) -> bool:
    """True when the server says `idempotentHint: true` of a tool that is not read-only."""
    if read_only_from_annotations(annotations):
        return False
    return _hint(annotations, "idempotent_hint") is True


def effect_tags_from_annotations(annotations: Any) -> tuple[str, ...]:
    """`("destructive", "open_world")`, one of them or none, with the specification's defaults
    for absent hints: destructive unless the tool is read-only or `destructiveHint: false`,
    open-world unless `openWorldHint: false`."""
    tags = []
    read_only = read_only_from_annotations(annotations)
    if not read_only and _hint(annotations, "destructive_hint") is not False:
        tags.append(DESTRUCTIVE_TAG)
    if _hint(annotations, "open_world_hint") is not False:
        tags.append(OPEN_WORLD_TAG)
    return tuple(tags)


def is_destructive_effect(tag: str) -> bool:
    """A write/delete/exec-like tag: `file_write`, `web_write`, `*_delete`, `*_exec`, `bash`..."""
    tag = tag.lower()
    return tag in DESTRUCTIVE_EFFECTS or any(p in _DESTRUCTIVE_PARTS for p in tag.split("_"))


def annotation_hints(
    effect_tags: Iterable[str], *, read_only: bool = False, idempotent: bool = False
) -> dict[str, bool]:
    """The MCP hints (snake_case, as the SDK's ToolAnnotations takes them) for this metadata:
    all four, always (see the module docstring)."""
    tags = {t.lower() for t in effect_tags}
    open_world = any(is_open_world_effect(t) for t in tags)
    if read_only:
        return {
            "read_only_hint": True,
            "destructive_hint": False,
            "idempotent_hint": True,
            "open_world_hint": open_world,
        }
    # Additive at most only when every tag is a read or a network tag; no tags means unknown.
    additive = bool(tags) and all(is_read_effect(t) or is_open_world_effect(t) for t in tags)
    return {
        "read_only_hint": False,
        "destructive_hint": not additive or any(is_destructive_effect(t) for t in tags),
        "idempotent_hint": bool(idempotent),
        "open_world_hint": open_world or not tags,
    }


def tool_annotation_hints(tool: Tool) -> dict[str, bool]:
    """`annotation_hints` of a Tool's `effect_tags`, `read_only` and `idempotent`."""
    return annotation_hints(
        tool.effect_tags,
        read_only=bool(getattr(tool, "read_only", False)),
        idempotent=bool(getattr(tool, "idempotent", False)),
    )
