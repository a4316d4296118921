"""Reading the run's typed JSON encoding back (`jianmu_bt.store.codec` writes it).

`loads` turns each tagged object into the value it stands for; plain JSON text is read by json's
C decoder alone. A tag this program does not know, or a class it cannot find, is
UnreadableValueError, naming the tag and the class.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import importlib
import json
import sys
import uuid
from collections.abc import Callable
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

from jianmu_bt.store.errors import StoreError

__all__ = ["TAGS", "UnreadableValueError", "find_class", "loads"]


class UnreadableValueError(StoreError, ValueError):
    """A recorded value this program cannot read back: an unknown tag, or a class not found."""


def loads(text: str | bytes) -> Any:
    """The value `dumps` wrote (also plain JSON text; NaN and Infinity as Python writes them)."""
    if isinstance(text, (bytes, bytearray)):
        text = text.decode("utf-8")
    if '"$' not in text:  # no tag can be in it: json's C decoder alone
        return json.loads(text)
    return json.loads(text, object_hook=_hook)


def _hook(data: dict[str, Any]) -> Any:
    if len(data) != 1:
        return data
    for tag, inner in data.items():
        if tag[:1] != "$":
            return data
        decoder = _DECODERS.get(tag)
        if decoder is None:
            raise UnreadableValueError(
                f"a recorded value has the unknown tag {tag!r} (written by a newer jianmu-bt?); "
                f"known tags: {', '.join(sorted(_DECODERS))}"
            )
        try:
            return decoder(inner)
        except UnreadableValueError:
            raise
        except Exception as exc:
            raise UnreadableValueError(
                f"a recorded {tag} value cannot be read back: {type(exc).__name__}: {exc}"
            ) from exc
    return data  # pragma: no cover - a dict of one item always returns above


_CLASSES: dict[str, type] = {}


def find_class(name: str) -> type:
    """The class named `module:Qualname`: from sys.modules, else imported (kept once found)."""
    found = _CLASSES.get(name)
    if found is not None:
        return found
    module_name, _, qualname = name.partition(":")
    try:
        target: Any = sys.modules.get(module_name) or importlib.import_module(module_name)
        for part in qualname.split("."):
            target = getattr(target, part)
    except Exception as exc:
        raise UnreadableValueError(
            f"class {name} cannot be found: {type(exc).__name__}: {exc}"
        ) from None
    if not isinstance(target, type):
        raise UnreadableValueError(f"{name} is not a class")
    if len(_CLASSES) < 1024:
        _CLASSES[name] = target
    return target


def _class_of(tag: str, name: Any, check: Callable[[type], bool], what: str) -> Any:
    """The class a `$enum`/`$dataclass`/`$model` value names, which must still be `what`."""
    try:
        kind = find_class(str(name))
    except UnreadableValueError as exc:
        raise UnreadableValueError(f"a recorded {tag} value: {exc}") from None
    if not check(kind):
        raise UnreadableValueError(
            f"a recorded {tag} value names class {name}, which is not {what} any more"
        )
    return kind


def _datetime(text: str) -> datetime:
    text, key = _zone_key(text)
    found = datetime.fromisoformat(text)
    if key is None:
        return found
    local = found.replace(tzinfo=ZoneInfo(key))
    if local.utcoffset() != found.utcoffset():  # the second of two equal wall times
        local = local.replace(fold=1)
    return local


def _time(text: str) -> time:
    text, key = _zone_key(text)
    found = time.fromisoformat(text)
    return found if key is None else found.replace(tzinfo=ZoneInfo(key))


def _zone_key(text: str) -> tuple[str, str | None]:
    if text.endswith("]"):
        head, _, key = text[:-1].rpartition("[")
        return head, key
    return text, None


def _float_tag(text: str) -> float:
    if text not in ("nan", "inf", "-inf"):
        raise ValueError(f"{text!r} is not nan, inf or -inf")
    return float(text)


def _dataclass_tag(inner: list[Any]) -> Any:
    kind = _class_of("$dataclass", inner[0], dataclasses.is_dataclass, "a dataclass")
    return kind(**inner[1])


def _model_tag(inner: list[Any]) -> Any:
    kind = _class_of("$model", inner[0], _is_model_class, "a pydantic model")
    return kind.model_validate(inner[1], by_alias=False, by_name=True)


def _enum_tag(inner: list[Any]) -> Any:
    return _class_of("$enum", inner[0], lambda k: issubclass(k, enum.Enum), "an Enum")(inner[1])


def _is_model_class(kind: type) -> bool:
    pydantic = sys.modules.get("pydantic")
    return pydantic is not None and issubclass(kind, pydantic.BaseModel)


_DECODERS: dict[str, Callable[[Any], Any]] = {
    "$decimal": Decimal,
    "$datetime": _datetime,
    "$date": date.fromisoformat,
    "$time": _time,
    "$timedelta": lambda inner: timedelta(*inner),
    "$uuid": uuid.UUID,
    "$set": set,
    "$frozenset": frozenset,
    "$tuple": tuple,
    "$bytes": lambda inner: base64.b64decode(inner, validate=True),
    "$bytearray": lambda inner: bytearray(base64.b64decode(inner, validate=True)),
    "$enum": _enum_tag,
    "$dataclass": _dataclass_tag,
    "$model": _model_tag,
    "$float": _float_tag,
    "$dict": lambda inner: {key: item for key, item in inner},
}

TAGS: tuple[str, ...] = tuple(_DECODERS)
"""Every tag this encoding writes and reads."""
