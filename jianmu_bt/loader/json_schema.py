"""Literal tool arguments through a real JSON Schema validator, with plain messages.

`jsonschema` does the validating (every keyword of the tool's schema, `$ref`s included);
`plain_errors` turns each of its errors into a short message naming the argument, with a code and
a hint, and the path inside the arguments where the bad value is, so the loader can point at it.
Missing and unknown arguments are the argument checks' own findings (with did-you-mean), so the
validator's top-level `required`/`additionalProperties` errors are left out here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from jsonschema import exceptions, validators  # type: ignore[import-untyped]

from jianmu_bt.loader.argument_flow import describe_value, type_problem
from jianmu_bt.tools.references import did_you_mean

_BOUNDS = {
    "minimum": "at least",
    "maximum": "at most",
    "exclusiveMinimum": "more than",
    "exclusiveMaximum": "less than",
}
_SIZES = {
    "minLength": ("at least", "character"),
    "maxLength": ("at most", "character"),
    "minItems": ("at least", "item"),
    "maxItems": ("at most", "item"),
    "minProperties": ("at least", "key"),
    "maxProperties": ("at most", "key"),
}


@dataclass(frozen=True, slots=True)
class PlainError:
    """One refused literal: where inside the arguments, what, a code and a hint."""

    path: tuple[str | int, ...]
    message: str
    code: str
    hint: str = ""


def make_validator(schema: Mapping[str, Any]) -> Any:
    """A validator for `schema` (its own draft, 2020-12 by default), or None for a schema that
    is not valid JSON Schema (the tool's arguments are then not checked)."""
    cls = validators.validator_for(schema, default=validators.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except exceptions.SchemaError:
        return None
    return cls(schema)


def plain_errors(validator: Any, arguments: Mapping[str, Any]) -> list[PlainError]:
    """The problems of literal `arguments` (a mapping of argument name -> value)."""
    try:
        errors = sorted(validator.iter_errors(dict(arguments)), key=lambda e: list(e.path))
    except Exception:  # an unresolvable $ref or the like: the schema's problem, not the file's
        return []
    found = []
    for error in errors:
        if not error.path:  # required / additionalProperties: the argument checks' own
            continue
        try:
            found.append(_plain(_most_relevant(error)))
        except Exception:  # an odd schema value: jsonschema's own words, at the value
            path = tuple(error.absolute_path)
            found.append(PlainError(path, f"{_label(path)}: {error.message}", "argument-value"))
    return found


def _most_relevant(error: Any) -> Any:
    """For anyOf/oneOf, the member error that says most (jsonschema's best match)."""
    if error.validator in ("anyOf", "oneOf") and error.context:
        best = exceptions.best_match(error.context)
        if best is not None:
            return best
    return error


def _label(path: Iterable[str | int]) -> str:
    parts = list(path)
    text = str(parts[0])
    for part in parts[1:]:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return f"argument '{text}'"


def _count(number: Any, unit: str) -> str:
    return f"{number} {unit}{'s' if number != 1 else ''}"


def _plain(error: Any) -> PlainError:
    path = tuple(error.absolute_path)
    label = _label(path)
    keyword = error.validator
    want = error.validator_value
    got = describe_value(error.instance)
    if keyword == "type":
        types = {want} if isinstance(want, str) else set(want)
        message, hint = type_problem(label, types, error.instance) or (error.message, "")
        return PlainError(path, message, "argument-type", hint)
    if keyword == "enum" and isinstance(want, list):
        choices = ", ".join(repr(v) for v in want[:20])
        words = [v for v in want if isinstance(v, str)]
        near = did_you_mean(error.instance, words) if isinstance(error.instance, str) else ""
        message = f"{label} must be one of {choices}, got {got}{near}"
        return PlainError(path, message, "argument-value", "use one of the listed values")
    if keyword == "const":
        return PlainError(path, f"{label} must be {want!r}, got {got}", "argument-value")
    if keyword in _BOUNDS:
        message = f"{label} must be {_BOUNDS[keyword]} {want}, got {got}"
        return PlainError(path, message, "argument-value")
    if keyword in _SIZES:
        bound, unit = _SIZES[keyword]
        size = len(error.instance)
        message = (
            f"{label} must have {bound} {_count(want, unit)}, got {got} ({_count(size, unit)})"
        )
        return PlainError(path, message, "argument-value")
    if keyword == "pattern":
        message = f"{label} must match the pattern {want!r}, got {got}"
        return PlainError(path, message, "argument-value")
    return PlainError(path, f"{label}: {error.message}", "argument-value")
