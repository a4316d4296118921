"""The run's state model: the YAML `state:` fields as a pydantic model subclassing AgentState.

| YAML type | Python type        | JSON types accepted from tools |
|-----------|--------------------|--------------------------------|
| string    | `str`              | string                         |
| integer   | `int`              | integer                        |
| number    | `float`            | number, integer                |
| boolean   | `bool`             | boolean                        |
| list      | `list[Any]`        | array                          |
| dict      | `dict[str, Any]`   | object                         |
| any       | `Any`              | all                            |

A field without a default (or with `default: null`) may hold null and starts as null. The
AgentState fields (`messages`, `actions`, `tool_effects`, `final_answer`, `guard`, `usage`) are
always there and cannot be declared again.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, Field, TypeAdapter, ValidationError, create_model

from jianmu_bt.loader.diagnostics import Diagnostic
from jianmu_bt.loader.records import StateDeclaration
from jianmu_bt.runtime.reducers import Reducer
from jianmu_bt.runtime.state_schema import AgentState, describe_type

PY_TYPES: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "list": list[Any],
    "dict": dict[str, Any],
    "any": Any,
}
_TEXT: Any = Annotated[str, Field(coerce_numbers_to_str=True)]
JSON_TYPES: dict[str, frozenset[str]] = {
    "string": frozenset({"string"}),
    "integer": frozenset({"integer"}),
    "number": frozenset({"number", "integer"}),
    "boolean": frozenset({"boolean"}),
    "list": frozenset({"array"}),
    "dict": frozenset({"object"}),
}
_REDUCER_TYPES = {
    "append": {"list", "any"},
    "add": {"integer", "number", "dict", "any"},
    "merge": {"dict", "any"},
    "replace": set(PY_TYPES),
}
BUILTIN_FIELDS: dict[str, str] = {
    "messages": "list",
    "actions": "list",
    "tool_effects": "dict",
    "final_answer": "string",
    "guard": "dict",
    "usage": "dict",
}


_RESERVED = frozenset(name for name in dir(BaseModel) if not name.startswith("__"))


@dataclass(frozen=True, slots=True)
class FieldFacts:
    """What the checks need to know about one state field."""

    name: str
    type: str
    has_default: bool
    input: bool
    builtin: bool
    declaration: StateDeclaration | None = None

    def accepts_json(self, json_type: str) -> bool:
        """Whether a value of JSON Schema type `json_type` fits this field."""
        allowed = JSON_TYPES.get(self.type)
        return allowed is None or json_type in allowed or json_type == "null"


@dataclass
class StateInfo:
    """The built state model and facts per field (built-in fields included)."""

    model: type[AgentState]
    fields: dict[str, FieldFacts]

    def released(self) -> StateInfo:
        """The same facts without their declarations, which hold on to the files' parsed data
        (a loaded Tree keeps this, so what only the checks needed can be freed)."""
        fields = {  # (not `dataclasses.replace`: that is several times dearer a field)
            name: FieldFacts(f.name, f.type, f.has_default, f.input, f.builtin)
            for name, f in self.fields.items()
        }
        return StateInfo(self.model, fields)


@functools.lru_cache(maxsize=64)
def _adapter(annotation: Any) -> TypeAdapter[Any]:
    # One adapter per field type (a handful), not per declared field: building one is costly.
    return TypeAdapter(annotation)


def _check_default(annotation: Any, default: Any, valid: dict[tuple[Any, type, Any], Any]) -> Any:
    """`default` validated against `annotation` (ValidationError if it does not fit): what an
    input equal to it becomes (a `number` field's default 3 is 3.0). Checked once per distinct
    hashable value: many fields of a file share a default (0, "", false) and a type. `valid`
    holds what this build checked already (its type too: 1, 1.0 and True are equal)."""
    try:
        key = (annotation, type(default), default)
        hash(key)
    except TypeError:  # a list or dict default: checked each time
        return _adapter(annotation).validate_python(default)
    if key not in valid:
        valid[key] = _adapter(annotation).validate_python(default)
    return valid[key]


def _model_name(name: str) -> str:
    words = re.findall(r"[A-Za-z0-9]+", name) or ["Tree"]
    title = "".join(w[:1].upper() + w[1:] for w in words)
    return (title if title[0].isalpha() else f"T{title}") + "State"


def _located(decl: StateDeclaration, sub: tuple[str, ...], message: str, code: str) -> Diagnostic:
    line, col = decl.unit.at((*decl.path, *sub), key=not sub)
    return Diagnostic(decl.unit.file, line, col, "error", message, code)


def _reported(decl: StateDeclaration) -> FieldFacts:
    """Facts for a field whose declaration is in error (already reported): it still exists for
    the later checks, so every reference to it is not reported again as unknown or unwritten."""
    return FieldFacts(decl.name, decl.field.type, True, decl.field.input, False, decl)


def build_state(
    declarations: list[StateDeclaration], tree_name: str
) -> tuple[StateInfo, list[Diagnostic]]:
    """The state model of the whole tree, and the problems with its declarations."""
    problems: list[Diagnostic] = []
    facts: dict[str, FieldFacts] = {
        name: FieldFacts(name, kind, True, False, True) for name, kind in BUILTIN_FIELDS.items()
    }
    definitions: dict[str, Any] = {}
    valid: dict[tuple[Any, type, Any], Any] = {}  # defaults checked already (_check_default)
    for decl in declarations:
        spec = decl.field
        if decl.name in BUILTIN_FIELDS:
            problems.append(
                _located(
                    decl,
                    (),
                    f"'{decl.name}' is a built-in state field ({BUILTIN_FIELDS[decl.name]}); "
                    "it is always there and cannot be declared again",
                    "state-builtin",
                )
            )
            continue
        if decl.name.startswith(("_", "model_")) or decl.name in _RESERVED:
            problems.append(
                _located(
                    decl,
                    (),
                    f"'{decl.name}' cannot name a state field: pydantic models use that name "
                    "themselves (a method or a reserved prefix); choose another name",
                    "state-reserved",
                )
            )
            continue
        known = facts.get(decl.name)
        if known is not None:
            if known.type != spec.type:
                first = known.declaration
                where = (
                    f"{first.unit.file}:{first.unit.at(first.path, key=True)[0]}" if first else ""
                )
                problems.append(
                    _located(
                        decl,
                        ("type",) if "type" in spec.model_fields_set else (),
                        f"state field '{decl.name}' is declared as {known.type} at {where} "
                        f"and as {spec.type} here",
                        "state-conflict",
                    )
                )
            continue
        reducer = spec.reducer or "replace"
        if spec.type not in _REDUCER_TYPES[reducer]:
            problems.append(
                _located(
                    decl,
                    ("reducer",),
                    f"reducer '{reducer}' does not fit a {spec.type} field; it needs "
                    f"{' or '.join(sorted(_REDUCER_TYPES[reducer] - {'any'}))}",
                    "state-reducer",
                )
            )
            facts[decl.name] = _reported(decl)
            continue
        base = PY_TYPES[spec.type]
        nullable = base is not Any and (not spec.has_default or spec.default is None)
        annotation: Any = base | None if nullable else base
        default = spec.default
        if spec.has_default and spec.default is not None:
            try:
                default = _check_default(annotation, spec.default, valid)
            except ValidationError as exc:
                detail = exc.errors(include_url=False)[0]["msg"]
                problems.append(
                    _located(
                        decl,
                        ("default",),
                        f"default of state field '{decl.name}' is not a {spec.type}: {detail} "
                        f"(got {spec.default!r:.60})",
                        "state-default",
                    )
                )
                facts[decl.name] = _reported(decl)
                continue
        if spec.type == "string":
            # Written at run time, a `string` field takes a number as its text: a typed tool
            # result (an MCP tool's 3) fits where its text ("3") did. (Its default stays strict.)
            annotation = _TEXT | None if nullable else _TEXT
        if spec.reducer and spec.reducer != "replace":
            annotation = Annotated[annotation, Reducer(spec.reducer)]
        # A bare default where there is no description: pydantic makes the same field from
        # it, in two thirds of the time (a large tree declares a field per group of nodes).
        definitions[decl.name] = (
            annotation,
            default if spec.description is None else Field(default, description=spec.description),
        )
        facts[decl.name] = FieldFacts(
            decl.name,
            spec.type,
            spec.has_default,
            spec.input,
            False,
            decl,
        )
    model = create_model(_model_name(tree_name), __base__=AgentState, **definitions)
    model.__doc__ = f"The state of the tree {tree_name!r}: " + (
        ", ".join(f"{n}: {describe_type(model.model_fields[n].annotation)}" for n in definitions)
        or "the AgentState fields only"
    )
    return StateInfo(model, facts), problems
