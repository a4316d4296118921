"""pydantic validation errors of a tree file, as located diagnostics with readable messages.

pydantic reports each problem with a `loc` path through the models; for a node that path holds
the kind twice (the union's tag, then the wrapper's field). `data_path` turns a `loc` into the
path through the YAML data, which the SourceMap turns into a line and column. Messages name the
key and suggest the closest known key for a typo.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Iterable
from typing import Annotated, Any, get_args, get_origin

from pydantic import BaseModel, ValidationError

from jianmu_bt.loader.diagnostics import Diagnostic, quote_list
from jianmu_bt.loader.positions import Path, SourceMap, child_value
from jianmu_bt.loader.registry import INVALID_TAG, node_kinds
from jianmu_bt.tools.references import did_you_mean

_TOOL_TAGS = {"name", "builtin", "python", "mcp", "invalid"}


def data_path(loc: Iterable[str | int], data: Any) -> tuple[Path, bool]:
    """The YAML data path of a pydantic `loc`, and whether it names a mapping key itself."""
    parts = list(loc)
    kinds = node_kinds()
    path: list[str | int] = []
    current = data
    is_key = False
    tag_depth = -1
    i = 0
    while i < len(parts):
        part = parts[i]
        if part == "[key]":
            is_key = True
            i += 1
            continue
        nxt = parts[i + 1] if i + 1 < len(parts) else None
        if isinstance(current, dict) and part in kinds and nxt == part and part in current:
            i += 1  # the union's tag: the wrapper's field (same name) follows
            part = parts[i]
        elif part == INVALID_TAG or (
            len(path) == 2 and path[0] == "tools" and part in _TOOL_TAGS and tag_depth != 2
        ):
            tag_depth = len(path)
            i += 1  # a union's tag, not a step into the data
            continue
        current = child_value(current, part)
        path.append(part)
        i += 1
    return tuple(path), is_key


def _unwrap(tp: Any) -> Any:
    while get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    return tp


def _members(tp: Any) -> list[Any]:
    """The alternatives of a (possibly nested, possibly Annotated) union; tagged ones kept."""
    if _tag_of(tp) is not None:
        return [tp]
    tp = _unwrap(tp)
    if get_origin(tp) in (typing.Union, types.UnionType):
        found = []
        for arg in get_args(tp):
            found.extend(_members(arg))
        return found
    return [tp]


def _tag_of(member: Any) -> str | None:
    if get_origin(member) is Annotated:
        for meta in get_args(member)[1:]:
            tag = getattr(meta, "tag", None)
            if isinstance(tag, str):
                return tag
    return None


def _fields(model: type[BaseModel]) -> dict[str, Any]:
    """A model's fields with their annotations evaluated: a node config is completed only when
    used on its own (see `registry`), which an error's path through it is."""
    if not model.__pydantic_complete__:
        model.model_rebuild(raise_errors=False)
    return model.model_fields


def _step(tp: Any, part: str | int) -> Any:
    for member in _members(tp):
        if _tag_of(member) == part:
            return _unwrap(member)
        inner = _unwrap(member)
        origin = get_origin(inner)
        if isinstance(inner, type) and issubclass(inner, BaseModel) and isinstance(part, str):
            for name, info in _fields(inner).items():
                if part in (name, info.alias):
                    return info.annotation
        elif origin is list and isinstance(part, int):
            return get_args(inner)[0]
        elif origin is dict and part != "[key]":
            return get_args(inner)[1]
    return None


def known_keys(model: type[BaseModel], loc: Iterable[str | int]) -> list[str] | None:
    """The keys allowed at `loc` (a pydantic loc of a mapping), or None when unknown."""
    tp: Any = model
    for part in loc:
        tp = _step(tp, part)
        if tp is None:
            return None
    for member in _members(tp):
        inner = _unwrap(member)
        if isinstance(inner, type) and issubclass(inner, BaseModel):
            return [info.alias or name for name, info in _fields(inner).items()]
    return None


def _label(path: Path) -> str:
    if not path:
        return "the file"
    last = path[-1]
    before = [p for p in path[:-1] if isinstance(p, str)]
    if isinstance(last, int):
        return f"{before[-1]}[{last}]" if before else f"[{last}]"
    if len(path) > 1 and isinstance(path[-2], str):
        return f"{path[-2]}.{last}"
    return str(last)


def _got(value: Any) -> str:
    if isinstance(value, (dict, list)) or value is None:
        return ""
    text = repr(value)
    return f" (got {text[:60]}{'...' if len(text) > 60 else ''})"


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:] if text[:2] != text[:2].upper() else text


def validation_diagnostics(
    error: ValidationError, data: Any, source: SourceMap, model: type[BaseModel]
) -> list[Diagnostic]:
    """One diagnostic per pydantic error, located in the YAML."""
    found = []
    for item in error.errors(include_url=False):
        loc = item["loc"]
        path, is_key = data_path(loc, data)
        kind = item["type"]
        ctx = item.get("ctx") or {}
        msg = item["msg"].removeprefix("Value error, ")
        parent = path[:-1]
        code = "invalid-value"
        if kind == "extra_forbidden":
            key = str(path[-1]) if path else "?"
            keys = known_keys(model, loc[:-1]) or []
            where = f" in '{_label(parent)}'" if parent else " at the top level"
            message = (
                f"unknown key '{key}'{where}{did_you_mean(key, keys)}; "
                f"known keys: {quote_list(keys)}"
            )
            line, col = source.key(path)
            code = "unknown-key"
        elif kind == "missing":
            key = str(path[-1]) if path else "?"
            where = f" in '{_label(parent)}'" if parent else " at the top level"
            message = f"missing required key '{key}'{where}"
            line, col = source.key(parent) if parent else (1, 1)
            code = "missing-key"
        elif kind in ("node_shape", "unknown_kind", "tool_entry"):
            message = msg
            at_key = ctx.get("at_key")
            if at_key is not None:
                line, col = source.key((*path, at_key))
            else:
                line, col = source.value(path)
            code = {"node_shape": "node-shape", "unknown_kind": "unknown-kind"}.get(
                kind, "tool-entry"
            )
        elif kind in ("model_type", "dict_type", "model_attributes_type") and (
            item.get("input") is None
        ):
            message = f"'{_label(path)}' is empty; it needs a mapping of its keys"
            line, col = source.key(path)
        else:
            detail = _lower_first(msg)
            message = f"{_label(path)}: {detail}{_got(item.get('input'))}"
            if kind == "value_error" or kind.startswith("assertion"):
                message = f"in '{_label(path)}': {detail}"
            line, col = source.key(path) if is_key else source.value(path)
        found.append(Diagnostic(source.file, line, col, "error", message, code))
    return found
