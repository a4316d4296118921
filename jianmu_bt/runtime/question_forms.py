"""The form of a question for a person: a flat JSON Schema of fields (MCP elicitation).

An MCP server that asks its client's user for input sends a `requestedSchema`: an object whose
properties are strings (maybe with a `format`), numbers, integers, booleans, single-select enums
(`enum`, or `oneOf`/`anyOf` of `{const, title}`) and multi-select enums (an `array` whose `items`
has `enum` or `anyOf`). This module checks such a schema, lists its fields for a desk that asks
field by field, gives the defaults, and validates an answer's content (with `jsonschema`, formats
included), so nothing invalid is ever sent back to the server.

The schema comes from a server, which may be hostile: only the MCP spec's primitive keywords are
taken (an allow-list), so no `pattern` (a regular expression can take seconds on a short answer),
no `$ref` and no nesting reach the validator, and sizes are capped before anything is checked.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jsonschema import exceptions, validators  # type: ignore[import-untyped]

#: The value types a field may have (MCP's "primitive schema definitions").
FIELD_TYPES = ("string", "number", "integer", "boolean", "array")
#: Caps on what a server may send, checked before anything else.
MAX_FIELDS = 100
MAX_SCHEMA_BYTES = 64 * 1024
MAX_MESSAGE_CHARS = 4096
MAX_CHOICES = 500
#: The string formats of the MCP spec.
FORMATS = ("email", "uri", "date", "date-time")

_FORM_KEYS = {"type", "properties", "required", "title", "description", "$schema"}
_COMMON = {"type", "title", "description", "default"}
_FIELD_KEYS = {
    "string": _COMMON | {"minLength", "maxLength", "format", "enum", "enumNames", "oneOf", "anyOf"},
    "number": _COMMON | {"minimum", "maximum"},
    "integer": _COMMON | {"minimum", "maximum"},
    "boolean": _COMMON,
    "array": _COMMON | {"items", "minItems", "maxItems"},
}
_ITEMS_KEYS = {"type", "enum", "anyOf", "oneOf"}
_OPTION_KEYS = {"const", "title", "description"}
_VALUE_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "number": (int, float),
    "integer": (int,),
    "boolean": (bool,),
}


@dataclass(frozen=True, slots=True)
class FormField:
    """One field of a question's form.

    `choices` are (value, label) pairs of an enum (empty otherwise); `multiple` is true for a
    multi-select (an array of choices). `default` is meaningful only when `has_default`."""

    name: str
    type: str
    title: str
    description: str
    required: bool
    has_default: bool
    default: Any
    choices: tuple[tuple[str, str], ...]
    multiple: bool
    schema: Mapping[str, Any]


def question_problem(message: Any, schema: Any) -> str:
    """What makes a question unusable ("" when it is fine): a message that is not text or too
    long, or a form `schema_problem` refuses."""
    if not isinstance(message, str):
        return f"the message is a {type(message).__name__}, not text"
    if len(message) > MAX_MESSAGE_CHARS:
        return f"the message has {len(message)} characters (at most {MAX_MESSAGE_CHARS})"
    return schema_problem(schema)


def schema_problem(schema: Any) -> str:
    """What makes `schema` unusable as a question's form ("" when it is fine): not an object,
    too big, a keyword outside the MCP spec's primitive ones (`pattern`, `$ref`, nesting...),
    a field that is not a primitive, or not valid JSON Schema."""
    if not isinstance(schema, Mapping):
        return f"the requested schema is a {type(schema).__name__}, not a JSON object"
    if schema.get("type", "object") != "object":
        return f"the requested schema has type {_shown(schema.get('type'))}; it must be 'object'"
    properties = schema.get("properties") or {}
    if not isinstance(properties, Mapping):
        return "the requested schema's `properties` is not an object"
    if len(properties) > MAX_FIELDS:  # before any walk: a huge form costs nothing to refuse
        return f"the form has {len(properties)} fields (at most {MAX_FIELDS})"
    problem = _unknown(schema, _FORM_KEYS, "the requested schema")
    if not problem and not isinstance(schema.get("$schema", ""), str):
        problem = "the requested schema's `$schema` is not a string"
    for name, field in properties.items():
        problem = problem or _field_problem(str(name), field)
    if problem:
        return problem
    try:  # every value is a primitive by now: the encoding is shallow and bounded
        size = len(json.dumps(schema, ensure_ascii=False))
    except (TypeError, ValueError) as exc:
        return f"the requested schema is not JSON: {exc}"
    if size > MAX_SCHEMA_BYTES:
        return f"the requested schema has {size} bytes of JSON (at most {MAX_SCHEMA_BYTES})"
    required = schema.get("required") or []
    if not isinstance(required, list) or not all(isinstance(n, str) for n in required):
        return "the requested schema's `required` is not a list of field names"
    missing = [name for name in required if name not in properties]
    if missing:
        return f"the requested schema requires fields it does not define: {', '.join(missing)}"
    try:
        validators.Draft202012Validator.check_schema(schema)
    except exceptions.SchemaError as exc:
        return f"the requested schema is not valid JSON Schema: {exc.message}"
    return ""


def _unknown(part: Mapping[str, Any], allowed: set[str], where: str) -> str:
    extra = sorted(str(key) for key in part if key not in allowed)
    if not extra:
        return ""
    return (
        f"{where} uses {', '.join(extra)}, not among the keywords a question's form may use "
        f"({', '.join(sorted(allowed))})"
    )


def _field_problem(name: str, field: Any) -> str:
    """The first thing wrong with one field ("" when it is fine)."""
    kind = field.get("type") if isinstance(field, Mapping) else None
    if kind not in FIELD_TYPES:
        return f"field '{name}' has type {_shown(kind)}; a question's fields must be {FIELD_TYPES}"
    assert isinstance(field, Mapping) and isinstance(kind, str)
    where = f"field '{name}'"
    problem = _unknown(field, _FIELD_KEYS[kind], where)
    for key in ("title", "description"):
        if not problem and not isinstance(field.get(key, ""), str):
            problem = f"{where}: `{key}` is not text"
    for key in ("minLength", "maxLength", "minItems", "maxItems"):
        value = field.get(key, 0)
        if not problem and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
            problem = f"{where}: `{key}` is not a whole number >= 0"
    for key in ("minimum", "maximum"):
        if not problem and key in field and not _number(field[key]):
            problem = f"{where}: `{key}` is not a finite number"
    if not problem and field.get("format", "email") not in FORMATS:
        problem = f"{where}: the format {_shown(field.get('format'))} is not one of {FORMATS}"
    if problem:
        return problem
    if kind == "array":
        items = field.get("items")
        if not isinstance(items, Mapping):
            return f"{where} is an array without `items`: only multi-selects (enum items) are taken"
        problem = _unknown(items, _ITEMS_KEYS, f"{where}'s items") or _choices_problem(
            items, f"{where}'s items"
        )
        if not problem and items.get("type", "string") != "string":
            problem = f"{where}'s items have type {_shown(items.get('type'))}; choices are text"
        if not problem and not _choices(items):
            problem = f"{where} is an array whose items are not choices (`enum` or `anyOf`)"
        if not problem and "default" in field:
            default = field["default"]
            if not isinstance(default, list) or not all(isinstance(v, str) for v in default):
                problem = f"{where}: the default is not a list of choices"
        return problem
    problem = _choices_problem(field, where)
    if not problem and "default" in field:
        default = field["default"]
        fits = isinstance(default, _VALUE_TYPES[kind]) and (
            kind == "boolean" or not isinstance(default, bool)
        )
        if not fits or (isinstance(default, float) and not math.isfinite(default)):
            problem = f"{where}: the default (a {type(default).__name__}) is not a {kind}"
    return problem


def _choices_problem(part: Mapping[str, Any], where: str) -> str:
    """Enum values must be text, options `{const, title}` with text in them; bounded in number."""
    for key in ("enum", "enumNames", "oneOf", "anyOf"):
        if key not in part:
            continue
        values = part[key]
        if not isinstance(values, list) or len(values) > MAX_CHOICES:
            return f"{where}: `{key}` is not a list of at most {MAX_CHOICES} entries"
        for value in values:
            if key in ("enum", "enumNames"):
                if not isinstance(value, str):
                    return f"{where}: `{key}` holds a {type(value).__name__}, not text"
                continue
            if not isinstance(value, Mapping) or not isinstance(value.get("const"), str):
                return f"{where}: each of `{key}` must be {{const, title}} with a text const"
            problem = _unknown(value, _OPTION_KEYS, f"{where}'s {key} option")
            if problem or not all(isinstance(value.get(k, ""), str) for k in _OPTION_KEYS):
                return problem or f"{where}: a {key} option's title is not text"
    return ""


def _shown(value: Any) -> str:
    """A server's value in a message: short, and never the repr of a deep structure."""
    if value is None or isinstance(value, str | int | float | bool):
        text = repr(value)
        return text if len(text) <= 60 else text[:57] + "..."
    return f"a {type(value).__name__}"


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def form_fields(schema: Mapping[str, Any]) -> list[FormField]:
    """The fields of a (checked) form, in the schema's order."""
    required = set(schema.get("required") or ())
    fields = []
    for name, field in (schema.get("properties") or {}).items():
        multiple = field.get("type") == "array"
        choices = _choices(field.get("items") or {} if multiple else field)
        fields.append(
            FormField(
                name=name,
                type=field["type"],
                title=str(field.get("title") or ""),
                description=str(field.get("description") or ""),
                required=name in required,
                has_default="default" in field,
                default=field.get("default"),
                choices=choices,
                multiple=multiple,
                schema=field,
            )
        )
    return fields


def _choices(field: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    if isinstance(field.get("enum"), list):
        values = [str(value) for value in field["enum"]]
        names = field.get("enumNames")  # the legacy way to title an enum's values
        labels = [str(n) for n in names] if isinstance(names, list) else values
        return tuple(zip(values, labels + values[len(labels) :], strict=False))
    options = field.get("oneOf") or field.get("anyOf") or []
    return tuple(
        (str(option["const"]), str(option.get("title") or option["const"]))
        for option in options
        if isinstance(option, Mapping) and "const" in option
    )


def default_content(schema: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The content made of the form's defaults, and the required fields that have none."""
    content, missing = {}, []
    for field in form_fields(schema):
        if field.has_default:
            content[field.name] = field.default
        elif field.required:
            missing.append(field.name)
    return content, missing


def content_problems(schema: Mapping[str, Any], content: Any) -> list[str]:
    """What is wrong with `content` as an answer to the form (empty when it is valid). The
    form should have passed `schema_problem`; one that makes the validator fail is reported
    as a problem, never raised."""
    if not isinstance(content, Mapping):
        return [f"the content must be an object of fields, not a {type(content).__name__}"]
    cls = validators.Draft202012Validator
    properties = schema.get("properties") or {}
    problems = [f"{name}: not a field of this form" for name in content if name not in properties]
    try:
        validator = cls(schema, format_checker=cls.FORMAT_CHECKER)
        errors = sorted(validator.iter_errors(dict(content)), key=lambda e: list(e.path))
    except Exception as exc:  # an unresolvable $ref or the like: the form's fault
        return [*problems, f"the form cannot be checked: {type(exc).__name__}: {exc}"[:300]]
    for error in errors:
        where = "/".join(str(part) for part in error.path)
        problems.append(f"{where}: {error.message}" if where else error.message)
    return problems


def field_problems(field: FormField, value: Any) -> list[str]:
    """What is wrong with `value` for one field (empty when it is valid)."""
    return content_problems(
        {"type": "object", "properties": {field.name: field.schema}}, {field.name: value}
    )


#: The form field a question whose answer is not an object (a choice, a number, free text)
#: is asked through: MCP elicitation, and every desk, take only flat forms of fields.
ANSWER_FIELD = "answer"
#: The answer schema of a question that names none: free text.
FREE_TEXT: dict[str, Any] = {"type": "string"}


def answer_form(schema: Mapping[str, Any], default: Any = None) -> tuple[dict[str, Any], bool]:
    """The form a question with answer `schema` is asked through, and whether the answer is
    wrapped in it (a non-object answer is the form's one field `answer`). `default`, when not
    None, is shown as the form's default."""
    if schema.get("type") == "object":
        form = json.loads(json.dumps(dict(schema)))
        if isinstance(default, Mapping):
            for name, value in default.items():
                field = form.get("properties", {}).get(name)
                if isinstance(field, dict):
                    field["default"] = value
        return form, False
    field = dict(schema)
    if default is not None:
        field["default"] = default
    form = {"type": "object", "properties": {ANSWER_FIELD: field}, "required": [ANSWER_FIELD]}
    return form, True


def answer_schema_problem(schema: Any) -> str:
    """What makes `schema` unusable as a question's answer schema ("" when it is fine): it
    must make a flat form (see `schema_problem`), as an object of fields or as one field."""
    if not isinstance(schema, Mapping):
        return f"the answer schema is a {type(schema).__name__}, not a JSON object"
    return schema_problem(answer_form(schema)[0])
