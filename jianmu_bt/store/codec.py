"""One typed JSON encoding for everything a run records: values come back equal, or are refused.

JSON values (str, int, float, bool, None, lists, dicts with string keys) are written as they are,
so plain documents and their digests look exactly as plain JSON. Any other value becomes an
object of one key, its tag, which `loads` turns back into an equal value:

- Decimal: `{"$decimal": "1.10"}`; UUID: `{"$uuid": "…"}`
- datetime: `{"$datetime": "2026-03-29T02:30:00+01:00"}`, with the zone key of a zoneinfo
  zone after it, `"…+01:00[Europe/Paris]"`; time the same as `$time`; date: `{"$date": "…"}`
- timedelta: `{"$timedelta": [days, seconds, microseconds]}`
- set, frozenset, tuple: `{"$set": [...]}`, `{"$frozenset": [...]}`, `{"$tuple": [...]}`
- bytes, bytearray: `{"$bytes": "<base64>"}`, `{"$bytearray": "<base64>"}`
- an Enum member: `{"$enum": ["module:Qualname", value]}`
- a dataclass instance: `{"$dataclass": ["module:Qualname", {its init fields}]}`
- a pydantic model: `{"$model": ["module:Qualname", {its fields and extra items}]}`
- NaN, Infinity, -Infinity (which standard JSON lacks): `{"$float": "nan"}`, `"inf"`, `"-inf"`
- a dict with keys that are not strings, or a dict of one key starting with `$` (it would read
  as a tag): `{"$dict": [[key, value], ...]}`

Subclasses of str, int, float, dict and list (other than enums) are written as their base type,
an equal value. Anything else is refused with `UnrecordableValueError`, naming where the value
is (`output['items'][2]`) and its type. A tag `loads` does not know, or a class it cannot find,
is `UnreadableValueError`. `canonical` is the same encoding with sorted keys and set members,
for digests: equal values give equal text whatever their order.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import json
import sys
import uuid
from collections.abc import Callable
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

from jianmu_bt.store.codec_errors import (
    RECORDABLE,
    Refused,
    UnrecordableValueError,
    refusal,
)
from jianmu_bt.store.codec_read import TAGS, UnreadableValueError, find_class, loads

__all__ = [
    "RECORDABLE",
    "TAGS",
    "UnreadableValueError",
    "UnrecordableValueError",
    "canonical",
    "check",
    "dumps",
    "loads",
    "to_json",
]

# -- encoding ----------------------------------------------------------------------------------

_SCALARS = frozenset({str, int, float, bool, type(None)})
"""Types written as they are. Non-finite floats are tagged afterwards (`_finite`), when json's
encoder refuses them: the common document pays nothing for them."""


def _dict(value: dict[Any, Any], sort: bool) -> Any:
    out = None
    for key, item in value.items():
        if type(key) is not str:
            return _pairs(value, sort)
        kind = type(item)
        if kind in _SCALARS:
            continue
        try:  # dicts and lists without a call through `_encode`
            new = (
                _dict(item, sort)
                if kind is dict
                else _list(item, sort)
                if kind is list
                else _encode(item, sort)
            )
        except Refused as exc:
            exc.path.append((key,))
            raise
        if new is not item:
            if out is None:
                out = dict(value)
            out[key] = new
    if len(value) == 1 and key[:1] == "$":  # (its one key) it would read as a tag: escape it
        return _pairs(value, sort)
    return value if out is None else out


def _pairs(value: dict[Any, Any], sort: bool) -> Any:
    pairs = []
    for key, item in value.items():
        try:
            encoded_key = _encode(key, sort)
        except Refused as exc:
            exc.path.append("{key}")
            raise
        try:
            pairs.append([encoded_key, _encode(item, sort)])
        except Refused as exc:
            exc.path.append((key,))
            raise
    if sort:
        pairs.sort(key=lambda pair: _sort_key(pair[0]))
    return {"$dict": pairs}


def _list(value: list[Any], sort: bool) -> list[Any]:
    out = None
    for index, item in enumerate(value):
        kind = type(item)
        if kind in _SCALARS:
            continue
        try:
            new = (
                _dict(item, sort)
                if kind is dict
                else _list(item, sort)
                if kind is list
                else _encode(item, sort)
            )
        except Refused as exc:
            exc.path.append((index,))
            raise
        if new is not item:
            if out is None:
                out = list(value)
            out[index] = new
    return value if out is None else out


def _finite(data: Any) -> Any:
    """Encoded data with NaN and the infinities tagged (copies only what holds one)."""
    kind = type(data)
    if kind is float:
        if data - data == 0.0:
            return data
        return {"$float": "nan" if data != data else ("inf" if data > 0 else "-inf")}
    if kind is dict:
        changed = {k: _finite(v) for k, v in data.items()}
        return data if all(changed[k] is v for k, v in data.items()) else changed
    if kind is list:
        items = [_finite(v) for v in data]
        return data if all(a is b for a, b in zip(items, data, strict=True)) else items
    return data


def _sort_key(data: Any) -> str:
    """The canonical text of encoded data: the order of set members and `$dict` pairs."""
    try:
        return _CANONICAL(data)
    except ValueError:  # a non-finite float
        return _CANONICAL(_finite(data))


def _items(value: Any, sort: bool) -> list[Any]:
    """A tuple's items, encoded (each located by its index)."""
    return _list(list(value), sort)


def _members(value: Any, sort: bool) -> list[Any]:
    """A set's members, encoded (sorted by their canonical text for a digest)."""
    try:
        items = [_encode(item, sort) for item in value]
    except Refused as exc:
        exc.path.append("{member}")
        raise
    if sort:
        items.sort(key=_sort_key)
    return items


def _zoned(text: str, tz: Any) -> str:
    key = getattr(tz, "key", None) if isinstance(tz, ZoneInfo) else None
    return f"{text}[{key}]" if key else text


def _fields(value: Any, names: Any, sort: bool, extra: dict[str, Any] | None = None) -> Any:
    """An object's fields (and a model's extra items) as an encoded dict, each located."""
    fields = {}
    for name in names:
        try:
            fields[name] = _encode(getattr(value, name), sort)
        except Refused as exc:
            exc.path.append("." + name)
            raise
    for key, item in (extra or {}).items():
        try:
            fields[key] = _encode(item, sort)
        except Refused as exc:
            exc.path.append("." + key)
            raise
    if len(fields) == 1 and next(iter(fields))[:1] == "$":  # only an extra item can be
        return {"$dict": [[key, item] for key, item in fields.items()]}
    return fields


def _dataclass(value: Any, sort: bool) -> Any:
    kind = type(value)
    names = _INIT_FIELDS.get(kind)
    if names is None:
        names = _INIT_FIELDS[kind] = tuple(f.name for f in dataclasses.fields(kind) if f.init)
    return {"$dataclass": [_class_name(kind), _fields(value, names, sort)]}


def _model(value: Any, sort: bool) -> Any:
    kind = type(value)
    held = value.__dict__  # the fields' values (one `model_construct` left out is not there)
    names = [name for name in kind.model_fields if name in held]
    fields = _fields(value, names, sort, value.__pydantic_extra__)
    return {"$model": [_class_name(kind), fields]}


def _enum(value: enum.Enum, sort: bool) -> Any:
    try:
        inner = _encode(value.value, sort)
    except Refused as exc:
        exc.path.append(".value")
        raise
    return {"$enum": [_class_name(type(value)), inner]}


_ENCODERS: dict[type, Callable[[Any, bool], Any]] = {
    dict: _dict,
    list: _list,
    tuple: lambda value, sort: {"$tuple": _items(value, sort)},
    set: lambda value, sort: {"$set": _members(value, sort)},
    frozenset: lambda value, sort: {"$frozenset": _members(value, sort)},
    Decimal: lambda value, sort: {"$decimal": str(value)},
    datetime: lambda value, sort: {"$datetime": _zoned(value.isoformat(), value.tzinfo)},
    date: lambda value, sort: {"$date": value.isoformat()},
    time: lambda value, sort: {"$time": _zoned(value.isoformat(), value.tzinfo)},
    timedelta: lambda value, sort: {"$timedelta": [value.days, value.seconds, value.microseconds]},
    uuid.UUID: lambda value, sort: {"$uuid": str(value)},
    bytes: lambda value, sort: {"$bytes": base64.b64encode(value).decode("ascii")},
    bytearray: lambda value, sort: {"$bytearray": base64.b64encode(value).decode("ascii")},
}
_BASES = (str, int, float, dict, list, tuple, datetime, date, time, Decimal, uuid.UUID)
# Found once per type (bounded, so classes made at run time are not all pinned):
_FOUND: dict[type, Callable[[Any, bool], Any]] = {}  # subclasses, enums, dataclasses, models
_NAMES: dict[type, str] = {}  # `module:Qualname` of classes checked to be found by it
_INIT_FIELDS: dict[type, tuple[str, ...]] = {}  # a dataclass's fields that `__init__` takes


def _encode(value: Any, sort: bool) -> Any:
    kind = type(value)
    if kind in _SCALARS:
        return value
    encoder = _ENCODERS.get(kind) or _FOUND.get(kind) or _encoder_of(value)
    return encoder(value, sort)


def _encoder_of(value: Any) -> Callable[[Any, bool], Any]:
    """The encoder of a type the table does not hold (found once per type, then kept)."""
    kind = type(value)
    found: Callable[[Any, bool], Any]
    if isinstance(value, enum.Enum):
        found = _enum
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        found = _dataclass
    elif _is_model(value):
        found = _model
    else:
        base = next((base for base in _BASES if isinstance(value, base)), None)
        if base is None:
            raise Refused(kind, "")
        found = _as_base(base) if base in (str, int, float) else _ENCODERS[base]
    if found in (_enum, _dataclass, _model):
        _class_name(kind)  # refuse a class a resume could not find
    if len(_FOUND) < 1024:
        _FOUND[kind] = found
    return found


def _as_base(base: type) -> Callable[[Any, bool], Any]:
    return lambda value, sort: base(value)


def _is_model(value: Any) -> bool:
    pydantic = sys.modules.get("pydantic")
    return pydantic is not None and isinstance(value, pydantic.BaseModel)


def _class_name(kind: type) -> str:
    """`module:Qualname` of a class that `loads` can find again by that name."""
    name = _NAMES.get(kind)
    if name is not None:
        return name
    name = f"{kind.__module__}:{kind.__qualname__}"
    if "<locals>" in kind.__qualname__:
        raise Refused(
            kind, "its class is defined inside a function, where a resumed run cannot find it "
            "(define it at module level)",
        )  # fmt: skip
    try:
        found = find_class(name)
    except UnreadableValueError:
        found = None
    if found is not kind:
        raise Refused(kind, f"its class cannot be found again by its name {name}")
    if len(_NAMES) < 1024:
        _NAMES[kind] = name
    return name


def to_json(value: Any, where: str | None = "value", *, sort: bool = False) -> Any:
    """`value` as JSON-native data (the tags above); the same objects when it is JSON already.

    `where` names the value in a refusal (None: `value` is a document whose first key names
    it, `state['plan']`); `sort` sorts set members and `$dict` pairs (for digests).
    """
    return _finite(_walk(value, where, sort))


def check(value: Any, where: str | None = "value") -> None:
    """Raise UnrecordableValueError (located, as `to_json`) unless a run can record `value`."""
    _walk(value, where, False)


def _walk(value: Any, where: str | None, sort: bool) -> Any:
    """The encoded data, but for non-finite floats (json's encoder refuses them: `_finite`)."""
    if type(value) in _SCALARS:
        return value
    try:
        return _encode(value, sort)
    except Refused as exc:
        raise refusal(exc, where) from None
    except RecursionError:
        raise UnrecordableValueError(
            f"{where or 'a document'} cannot be recorded: it is nested too deeply or contains "
            "itself",
            where=where or "",
        ) from None


# Built once: `json.dumps` with options makes a new encoder per call.
_TEXT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode
_ASCII = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode
_CANONICAL = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
).encode


def dumps(value: Any, where: str | None = None) -> str:
    """Compact JSON text of `value` in this encoding (UnrecordableValueError when it has no
    exact form; `where` as in `to_json`). Lone surrogates are kept as `\\u` escapes."""
    if value is None:
        return "null"
    data = _walk(value, where, False)
    try:
        text = _TEXT(data)
    except ValueError:  # NaN or an infinity somewhere
        data = _finite(data)
        text = _TEXT(data)
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = _ASCII(data)
    return text


def canonical(value: Any, where: str | None = "value") -> str:
    """The canonical text of `value`: this encoding with sorted keys and set members, so equal
    values give equal text (for digests). Plain JSON gives `json.dumps(value, sort_keys=True,
    separators=(",", ":"), ensure_ascii=False)`."""
    data = _walk(value, where, True)
    try:
        return _CANONICAL(data)
    except ValueError:  # NaN or an infinity somewhere
        return _CANONICAL(_finite(data))
