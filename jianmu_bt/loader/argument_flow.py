"""Which state values may flow into which tool parameters: the rules of the argument checks.

At run time a string that is exactly one reference (`"{count}"`) becomes the referenced value
itself, with its type; references inside longer text become text (see
`jianmu_bt.runtime.templates`). So the checks compare JSON types:

| value in `arguments` | its type is | into a parameter of type |
|---|---|---|
| `"{count}"` (whole reference) | the field's declared type (integer -> integer) | checked |
| `"{user.name}"` (a path inside a value) | not declared | not checked |
| `"n = {count}"` (text around references) | string | checked |
| a mapping or list holding references | object / array | checked (the container) |

and judge each flow:

- fits (`ok`): the type is one the parameter lists (an integer fits a number);
- may fail (`maybe`, a warning): text into an integer, number or boolean parameter (a tool that
  parses "5" takes it, a strict one does not), a number into an integer parameter (2.0 passes,
  2.5 fails);
- refused (`no`, an error): anything else: an integer, list or mapping into a string parameter, a
  list into a number, a mapping into a list, text into a list or mapping, ...
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from jianmu_bt.runtime.templates import REFERENCE

TEXT_MAY_PARSE = frozenset({"integer", "number", "boolean"})
"""Parameter types that text may parse into (so text flowing there is a warning, not an error)."""

_STATE_JSON = {
    "string": "string",
    "integer": "integer",
    "number": "number",
    "boolean": "boolean",
    "list": "array",
    "dict": "object",
}
_ARTICLES = {"integer": "an integer", "object": "an object (mapping)", "array": "an array (list)"}

Verdict = Literal["ok", "maybe", "no"]


@dataclass(frozen=True, slots=True)
class Flow:
    """How a value refers to state: `whole` is the key of a whole-value reference (else None);
    `dotted` says that reference goes into the value (`{user.name}`)."""

    whole: str | None
    dotted: bool = False


def flow_of(value: Any) -> Flow | None:
    """The Flow of a value holding `{key}` references, or None for a plain literal."""
    if isinstance(value, str):
        matches = [m for m in REFERENCE.finditer(value) if m.group(1)]
        if not matches:
            return None
        first = matches[0]
        if len(matches) == 1 and first.start() == 0 and first.end() == len(value):
            path = first.group(1)
            return Flow(path.split(".")[0], "." in path)
        return Flow(None)
    if isinstance(value, Mapping):
        inner = any(flow_of(v) is not None for v in value.values())
        return Flow(None) if inner else None
    if isinstance(value, list):
        return Flow(None) if any(flow_of(v) is not None for v in value) else None
    return None


def state_json_type(state_type: str) -> str:
    """The JSON type of a state field's declared type (`list` -> `array`)."""
    return _STATE_JSON.get(state_type, "any")


def json_type_of(value: Any) -> str:
    """The JSON type of a plain value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, (datetime.date, datetime.time)):
        return "date"  # YAML's own: 2024-01-31 unquoted (JSON has no such type)
    return "any"


def accepted_types(schema: Any, root: Mapping[str, Any], depth: int = 0) -> set[str] | None:
    """The JSON types a (sub)schema accepts, or None when it does not say (or says anything).

    Follows `type`, `enum`, `const`, `anyOf`/`oneOf` and local `$ref`s (`#/$defs/...` of `root`).
    """
    if depth > 20 or schema is True or not isinstance(schema, Mapping):
        return None if schema is not False else set()
    ref = schema.get("$ref")
    if isinstance(ref, str):
        return accepted_types(_local(ref, root), root, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list):
        return {k for k in kind if isinstance(k, str)}
    if "const" in schema:
        return {json_type_of(schema["const"])}
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return {json_type_of(v) for v in enum}
    for key in ("anyOf", "oneOf"):
        members = schema.get(key)
        if isinstance(members, list) and members:
            found: set[str] = set()
            for member in members:
                types = accepted_types(member, root, depth + 1)
                if types is None:
                    return None
                found |= types
            return found
    return None


def _local(ref: str, root: Mapping[str, Any]) -> Any:
    if not ref.startswith("#/"):
        return None
    current: Any = root
    for part in ref[2:].split("/"):
        if not isinstance(current, Mapping) or part not in current:
            return None
        current = current[part]
    return current


def verdict(given: set[str], accepted: set[str] | None) -> Verdict:
    """Whether values of the `given` JSON types fit a parameter accepting `accepted`."""
    if accepted is None or "any" in given or not given:
        return "ok"
    if any(t in accepted or (t == "integer" and "number" in accepted) for t in given):
        return "ok"
    if given == {"string"} and accepted & TEXT_MAY_PARSE:
        return "maybe"
    if given == {"number"} and "integer" in accepted:
        return "maybe"
    return "no"


def type_phrase(types: set[str] | None) -> str:
    """`a string`, `an integer or null`, ... for messages."""
    if types is None:
        return "any value"
    if not types:
        return "no value"
    words = [_ARTICLES.get(t, f"a {t}") if t != "null" else "null" for t in sorted(types)]
    return " or ".join(words)


def describe_value(value: Any) -> str:
    """A value for messages: `the integer 5`, `the string 'x'`, `a list`."""
    kind = json_type_of(value)
    if kind in ("object", "array"):
        return "a mapping" if kind == "object" else "a list"
    if kind == "null":
        return "null"
    if kind == "date":
        return f"the date {value.isoformat()}"
    shown = repr(value)
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    return f"the {kind} {shown}"


_PLAIN_KEYS = frozenset({"type", "description", "default", "title", "examples"})


def plain_type_schema(schema: Any) -> bool:
    """Whether a parameter's schema says nothing but its type (so a literal is checked by its
    JSON type alone, without loading a JSON Schema validator)."""
    return (
        isinstance(schema, Mapping)
        and isinstance(schema.get("type"), (str, list))
        and set(schema) <= _PLAIN_KEYS
    )


def type_problem(label: str, accepted: set[str], value: Any) -> tuple[str, str] | None:
    """`(message, hint)` when a literal's JSON type is not one `accepted` holds, else None (as
    JSON Schema judges it: an integer is a number, 3.0 is an integer)."""
    given = json_type_of(value)
    if given in accepted or (given == "integer" and "number" in accepted):
        return None
    if given == "number" and "integer" in accepted and float(value).is_integer():
        return None
    hint = ""
    if given == "date":
        hint = f'YAML reads this as a date: quote it to pass text: "{value}"'
    elif "string" in accepted and given in ("integer", "number", "boolean"):
        hint = f'quote it to pass text: "{value}"'
    return f"{label} takes {type_phrase(accepted)}, got {describe_value(value)}", hint
