"""Repair: a file the model refused, patched so the later stages can still check the rest of it.

A tree file with a schema error (an unknown node kind, a mistyped key, a missing required key)
is reported by the model stage, and then repaired, on a copy of its data, as little as needed
for the model to accept it, so that expansion, analysis and the checks can report the problems
of every other part of the file in the same run:

| refused | repaired by |
|---|---|
| an unknown key of a node close to a known one (`argumnets`) | taking it for that key |
| another unknown key, or an optional key of the wrong type | dropping it (its default applies) |
| a node itself (unknown kind, wrong shape, missing required key, ...) | a placeholder node |
| a key of a state field | dropping that key (the field stays, untyped) |
| a `tools` entry | a placeholder entry that gives no tool |
| a top-level setting (`llm`, `guard`, `tool_options`, ...) | dropping it |

The placeholders are remembered (`Repair`), and `drop_placeholders` takes their nodes out of the
expanded records, so no later stage reports anything about them; the errors already reported
keep the load from building anything.
"""

from __future__ import annotations

import copy
import difflib
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from jianmu_bt.loader.positions import MISSING, Path, SourceMap, child_value
from jianmu_bt.loader.records import NodeRecord
from jianmu_bt.loader.registry import get_kind
from jianmu_bt.loader.schema_errors import data_path

PLACEHOLDER_CLASS = "py_trees.behaviours:Dummy"
"""The class of a placeholder node (a valid `behaviour` node that is never analysed or built)."""
BROKEN_TOOL_ENTRY = "__refused_tools_entry__"
"""What a refused `tools` entry is replaced by (the tool stage skips it by its index)."""
MAX_ROUNDS = 12
"""Validation rounds before giving up (each repairs every error the last one found)."""


@dataclass
class Repair:
    """What was patched in one file: placeholder node paths, refused tools entries, dropped
    top-level settings."""

    nodes: set[Path] = field(default_factory=set)
    tool_entries: set[int] = field(default_factory=set)
    settings: set[str] = field(default_factory=set)


def repaired_model(
    data: dict[str, Any], error: ValidationError, model: type[BaseModel], source: SourceMap
) -> tuple[Any, Repair]:
    """The model of a repaired copy of `data` (None when it cannot be repaired), and the Repair.

    A key renamed (a typo taken for the key it is close to) gets the positions of the original
    in `source`, so what the later stages say about it points at what the file wrote.
    """
    repair = Repair()
    patched = copy.deepcopy(data)
    for _ in range(MAX_ROUNDS):
        changed = False
        for item in error.errors(include_url=False):
            path, is_key = data_path(item["loc"], patched)
            changed = _fix(patched, path, is_key, repair, source) or changed
        if not changed:
            return None, repair
        try:
            return model.model_validate(patched), repair
        except ValidationError as again:
            error = again
    return None, repair


def _fix(data: dict[str, Any], path: Path, is_key: bool, repair: Repair, source: SourceMap) -> bool:
    """Patch `data` so the error at `path` goes away; False when it cannot (or did already)."""
    if not path:
        return False
    top = path[0]
    if top in ("root", "trees"):
        if top == "trees" and (len(path) == 1 or (len(path) == 2 and is_key)):
            return _drop(data, path)
        return _fix_node(data, path, repair, source)
    if top == "state":
        return _fix_state(data, path)
    if top == "tools":
        if len(path) == 1 or not isinstance(data.get("tools"), list):
            data["tools"] = []
            return True
        index = path[1]
        if not isinstance(index, int) or index in repair.tool_entries:
            return False
        data["tools"][index] = BROKEN_TOOL_ENTRY
        repair.tool_entries.add(index)
        return True
    if isinstance(top, str) and top in data:  # a setting (`llm`, `guard`, ...) or unknown key
        repair.settings.add(top)
        return _drop(data, (top,))
    return False


def _drop(data: Any, path: Path) -> bool:
    parent = _at(data, path[:-1])
    if isinstance(parent, dict) and path[-1] in parent:
        del parent[path[-1]]
        return True
    return False


def _at(data: Any, path: Path) -> Any:
    current = data
    for part in path:
        current = child_value(current, part)
        if current is MISSING:
            return None
    return current


def _fix_state(data: dict[str, Any], path: Path) -> bool:
    if len(path) == 1 or not isinstance(data.get("state"), dict):
        data["state"] = {}
        return True
    spec = data["state"].get(path[1])
    if len(path) > 2 and isinstance(spec, dict) and path[2] in spec:
        del spec[path[2]]  # e.g. `type: strng`: the field stays, untyped
        return True
    if path[1] in data["state"]:
        if len(path) == 2 and not isinstance(spec, (dict, str)):
            data["state"][path[1]] = {"default": None}
            return True
        del data["state"][path[1]]  # a bad name
        return True
    return False


def _fix_node(data: dict[str, Any], path: Path, repair: Repair, source: SourceMap) -> bool:
    """Drop the refused optional key of the innermost node around `path`, else replace that
    node with a placeholder."""
    node: Path = path[:1] if path[0] == "root" else path[:2]
    rest = path[len(node) :]
    while True:
        value = _at(data, node)
        if node in repair.nodes:
            return False
        kind = next(iter(value), None) if isinstance(value, dict) and len(value) == 1 else None
        if kind is None or get_kind(str(kind)) is None or not rest or rest[0] != kind:
            return _placeholder(data, node, repair)
        config = value[kind]
        inner = rest[1:]
        if len(inner) >= 2 and inner[0] == "children" and isinstance(inner[1], int):
            node, rest = (*node, kind, "children", inner[1]), inner[2:]
            continue
        if len(inner) >= 2 and inner[0] == "child":
            node, rest = (*node, kind, "child"), inner[1:]
            continue
        if inner == ("child",) and isinstance(config, dict) and "child" in config:
            return _placeholder(data, (*node, kind, "child"), repair)  # the child is refused
        if not inner or not isinstance(config, dict) or inner[0] not in config:
            return _placeholder(data, node, repair)
        known = _fields(str(kind))
        if len(inner) == 1 and inner[0] not in known:  # a key the kind does not have
            return _rename(config, (*node, kind), str(inner[0]), known, source)
        if known.get(str(inner[0]), True):
            return _placeholder(data, node, repair)
        del config[inner[0]]
        return True


def _fields(kind: str) -> dict[str, bool]:
    """The keys of the kind's config -> whether each is required (or holds children)."""
    node_kind = get_kind(kind)
    if node_kind is None:
        return {}
    found = {}
    for name, info in node_kind.config.model_fields.items():
        required = info.is_required() or name in ("children", "child")
        found[info.alias or name] = required
    return found


def _rename(
    config: dict[str, Any], at: Path, key: str, known: dict[str, bool], source: SourceMap
) -> bool:
    """Take an unknown key for the known key it is closest to (a typo: `argumnets`), so the
    node is checked as meant (its positions are copied over); drop it when none is close."""
    close = difflib.get_close_matches(key, [k for k in known if k not in config], 1, 0.75)
    value = config.pop(key)
    if not close:
        return True
    config[close[0]] = value
    old, new = (*at, key), (*at, close[0])
    for table in (source.values, source.keys):
        for path in [p for p in table if p[: len(old)] == old]:
            table.setdefault((*new, *path[len(old) :]), table[path])
    return True


def _placeholder(data: dict[str, Any], node: Path, repair: Repair) -> bool:
    parent = _at(data, node[:-1])
    last = node[-1]
    if isinstance(parent, dict) or (isinstance(parent, list) and isinstance(last, int)):
        parent[last] = {"behaviour": {"class": PLACEHOLDER_CLASS}}  # type: ignore[index]
        repair.nodes.add(node)
        return True
    return False


def drop_placeholders(
    records: dict[str, NodeRecord], root_id: str, repairs: dict[str, Repair]
) -> str | None:
    """Take the placeholder nodes out of `records` (and their parents' children); the root's id,
    or None when the root itself is a placeholder."""
    if not repairs:
        return root_id
    dropped = set()
    for record in records.values():
        repair = repairs.get(record.unit.key)
        if repair is not None and record.path in repair.nodes:
            dropped.add(record.id)
    for node_id in dropped:
        record = records.pop(node_id)
        parent = records.get(record.parent) if record.parent else None
        if parent is not None:
            parent.children.remove(node_id)
    return None if root_id in dropped else root_id
