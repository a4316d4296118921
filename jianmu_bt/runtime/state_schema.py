"""State schemas: how a pydantic model becomes per-field validators, their errors, AgentState.

`compile_schema(schema)` builds, once per schema class, one `TypeAdapter` per field (the field's
type with its `Annotated` constraints and the model's validation config), the reducer named in
the field's metadata, and a readable name of the expected type. A write then validates only the
field it touches instead of the whole model.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import threading
import types
import typing
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal, get_args, get_origin

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    PlainValidator,
    PydanticUserError,
    TypeAdapter,
    ValidationError,
    WrapSerializer,
)
from pydantic.fields import FieldInfo

from jianmu_bt.runtime.reducers import (
    REPLACE,
    Reducer,
    append_reducer,
    reducer_from_metadata,
    replace_reducer,
)
from jianmu_bt.runtime.state_errors import (  # the errors are this module's public names too
    StateClosedError as StateClosedError,
    StateValidationError as StateValidationError,
    UnknownStateKeyError as UnknownStateKeyError,
    describe_errors as describe_errors,
    short_repr as short_repr,
)
from jianmu_bt.tools.calls import ToolCall

# model_config keys that change how a field's value validates; the rest (title, frozen, extra
# of the state model itself, ...) say nothing about one field's value.
_ValidationKey = Literal[
    "strict",
    "arbitrary_types_allowed",
    "str_strip_whitespace",
    "str_to_lower",
    "str_to_upper",
    "str_min_length",
    "str_max_length",
    "coerce_numbers_to_str",
    "allow_inf_nan",
    "use_enum_values",
    "regex_engine",
    "val_json_bytes",
    "ser_json_bytes",
    "ser_json_timedelta",
    "ser_json_inf_nan",
]
_VALIDATION_CONFIG_KEYS: tuple[_ValidationKey, ...] = get_args(_ValidationKey)
_SERIALIZERS = (PlainSerializer, WrapSerializer)


def describe_type(tp: Any) -> str:
    """A short readable name of a type annotation: `list[dict[str, Any]]`, `str | None`."""
    if tp is type(None) or tp is None:
        return "None"
    if tp is Any:
        return "Any"
    origin = get_origin(tp)
    if origin is Annotated:
        return describe_type(get_args(tp)[0])
    if origin in (typing.Union, types.UnionType):
        return " | ".join(describe_type(arg) for arg in get_args(tp))
    if origin is typing.Literal:
        return f"Literal[{', '.join(repr(arg) for arg in get_args(tp))}]"
    if origin is not None:
        args = get_args(tp)
        name = getattr(origin, "__name__", None) or str(origin).replace("typing.", "")
        return f"{name}[{', '.join(describe_type(arg) for arg in args)}]" if args else name
    if isinstance(tp, type):
        return tp.__name__
    return str(tp).replace("typing.", "")


@dataclass(frozen=True, slots=True)
class FieldPlan:
    """What the StateManager needs to know about one field, computed once per schema.

    `append_items_only` is true when the field is a plain `list[X]` without list-level
    constraints: appending then validates only the new items, not the whole list again.
    """

    name: str
    info: FieldInfo
    adapter: TypeAdapter[Any]
    reducer: Reducer | None
    expected: str
    append_items_only: bool
    validate_default: bool = False
    """The default changes when validated (an integer default of a float field): a run starts
    from the validated default, the value an input equal to it would give."""
    dump: bool = False
    """A run records the field's value as pydantic dumps it (models, dataclasses, values with
    a serializer: restore validates them back); other values are recorded as they are."""

    def default(self, validated_data: dict[str, Any]) -> Any:
        """A fresh default value (`validated_data`: the fields before it, for a factory)."""
        value = self.info.get_default(call_default_factory=True, validated_data=validated_data)
        if self.validate_default:
            try:
                return self.adapter.validate_python(value)
            except ValidationError:  # a default outside its type (`x: int = None`): as given
                return value
        return value

    def check(self, value: Any, *, given: Any = None, note: str = "", skip_loc: int = 0) -> Any:
        """Validate `value` for this field; a refusal names the field, `given` and the type.

        `given` is the value the caller wrote when `value` was derived from it (by a reducer);
        `skip_loc` drops leading error-location parts that the caller's value does not have.
        """
        try:
            return self.adapter.validate_python(value)
        except ValidationError as exc:
            shown = value if given is None else given
            errors = exc.errors(include_url=False)
            raise StateValidationError(
                f"invalid value for state field {self.name!r}{note}: {short_repr(shown)} "
                f"({type(shown).__name__}); expected {self.expected}: "
                f"{describe_errors(errors, skip_loc=skip_loc)}",
                field=self.name,
                value=shown,
                expected=self.expected,
                errors=errors,
            ) from None

    def reduce(self, reducer: Reducer, old: Any, value: Any) -> Any:
        """The validated value that `reducer` makes of `old` and the written `value`."""
        function = reducer.function
        if function is replace_reducer:
            return self.check(value)
        if function is append_reducer and self.append_items_only and isinstance(old, list):
            # old items were validated when written; check only the new ones
            if isinstance(value, list):
                return [*old, *self.check(value)]
            return [*old, *self.check([value], given=value, skip_loc=1)]
        try:
            combined = reducer(old, value)
        except Exception as exc:
            raise StateValidationError(
                f"reducer {reducer.name!r} of state field {self.name!r} refused "
                f"{short_repr(value)} ({type(value).__name__}) with the current value "
                f"{short_repr(old)}: {exc}",
                field=self.name,
                value=value,
                expected=self.expected,
            ) from exc
        return self.check(combined, given=value, note=f" (after reducer {reducer.name!r})")


class SchemaPlan:
    """The compiled form of a state schema: its fields in order, each with a FieldPlan."""

    __slots__ = ("__weakref__", "all_keys", "changed", "fields", "names", "positions", "reducers")

    def __init__(self, fields: dict[str, FieldPlan]) -> None:
        """Hold the plans; `names` keeps the schema's field order, `positions` each name's
        place in it.

        `reducers` (each field's reducer, REPLACE by default) and `changed` (the key set a
        write of one field reports) are shared, read-only, by every StateManager of the schema:
        thousands of runs of one schema hold one copy.
        """
        self.fields = fields
        self.names = tuple(fields)
        self.positions = {name: index for index, name in enumerate(self.names)}
        self.reducers = {name: field.reducer or REPLACE for name, field in fields.items()}
        self.changed = {name: frozenset((name,)) for name in fields}
        self.all_keys = frozenset(fields)

    def unknown(self, key: Any, value: Any = None) -> UnknownStateKeyError:
        """The error for a key that is not a field of this schema."""
        return UnknownStateKeyError(key, self.names, value)

    def starting_values(self, initial: Mapping[str, Any] | None) -> dict[str, Any]:
        """Validated `initial` values, with schema defaults for the fields it leaves out."""
        initial = initial or {}
        for key in initial:
            if key not in self.fields:
                raise self.unknown(key, initial[key])
        values: dict[str, Any] = {}
        for name, plan in self.fields.items():
            if name in initial:
                values[name] = plan.check(initial[name])
            elif plan.info.is_required():
                raise StateValidationError(
                    f"state field {name!r} is required (it has no default) and was not given "
                    f"in initial; expected {plan.expected}",
                    field=name,
                    value=None,
                    expected=plan.expected,
                )
            else:
                # pydantic copies mutable defaults, so runs never share a default list
                values[name] = plan.default(values)
        return values

    def whole_state_error(self, exc: ValidationError, data: Mapping[str, Any]) -> Exception:
        """A model-level ValidationError (from restore) as a StateValidationError."""
        errors = exc.errors(include_url=False)
        first = errors[0]
        field = str(first["loc"][0]) if first.get("loc") else ""
        if first["type"] == "extra_forbidden":
            return self.unknown(field, data.get(field))
        plan = self.fields.get(field)
        expected = plan.expected if plan else None
        where = f"field {field!r}" if field else "state"
        wanted = f"; expected {expected}" if expected else ""
        return StateValidationError(
            f"cannot restore state: {where}: {short_repr(data.get(field))}{wanted}: "
            f"{describe_errors(errors, skip_loc=1)}",
            field=field,
            value=data.get(field),
            expected=expected,
            errors=errors,
        )

    def validate_snapshot(
        self, schema: type[BaseModel], data: Mapping[str, Any] | str | bytes
    ) -> dict[str, Any]:
        """Validate snapshot data (a mapping or JSON text) as a whole `schema` model.

        Returns the field values; refuses unknown fields, fills defaults for missing ones, and
        raises StateValidationError naming the first failing field.
        """
        if isinstance(data, (str, bytes, bytearray)):
            try:
                parsed = json.loads(data)
            except ValueError as exc:
                raise StateValidationError(
                    f"cannot restore state: the snapshot is not valid JSON: {exc}",
                    field="",
                    value=data,
                ) from None
        else:
            parsed = data
        if not isinstance(parsed, Mapping):
            raise StateValidationError(
                f"cannot restore state: a snapshot is a JSON object of fields, got "
                f"{type(parsed).__name__}",
                field="",
                value=parsed,
            )
        for key in parsed:
            if key not in self.fields:
                raise self.unknown(key, parsed[key])
        try:
            if isinstance(data, (str, bytes, bytearray)):
                # JSON mode, so strict schemas still accept e.g. datetimes written as text
                model = schema.model_validate_json(data, by_alias=False, by_name=True)
            else:
                model = schema.model_validate(dict(parsed), by_alias=False, by_name=True)
        except ValidationError as exc:
            raise self.whole_state_error(exc, parsed) from None
        return {name: getattr(model, name) for name in self.names}


_plans: weakref.WeakKeyDictionary[type[BaseModel], SchemaPlan] = weakref.WeakKeyDictionary()
_plans_lock = threading.Lock()


def compile_schema(schema: type[BaseModel]) -> SchemaPlan:
    """The SchemaPlan of `schema`, built on first use and cached for the class's lifetime."""
    if not (isinstance(schema, type) and issubclass(schema, BaseModel)):
        raise TypeError(f"a state schema must be a pydantic BaseModel subclass, got {schema!r}")
    plan = _plans.get(schema)
    if plan is not None:
        return plan
    if not schema.__pydantic_complete__:
        schema.model_rebuild(raise_errors=True)
    config = ConfigDict()
    for key in _VALIDATION_CONFIG_KEYS:
        if key in schema.model_config:
            config[key] = schema.model_config[key]
    fields = {name: _field_plan(name, info, config) for name, info in schema.model_fields.items()}
    plan = SchemaPlan(fields)
    with _plans_lock:
        return _plans.setdefault(schema, plan)


def _adapter(annotation: Any, config: ConfigDict) -> TypeAdapter[Any]:
    try:
        return TypeAdapter(annotation, config=config)
    except PydanticUserError as exc:
        # a BaseModel/dataclass/TypedDict field carries its own config
        if exc.code != "type-adapter-config-unused":
            raise
        return TypeAdapter(annotation)


@functools.lru_cache(maxsize=256)
def _shared_adapter(annotation: Any, config: tuple[tuple[str, Any], ...]) -> TypeAdapter[Any]:
    # Fields of one type share an adapter (schemas repeat a few types many times, and each
    # adapter is a compiled validator of its own); bounded, so dynamic types are not pinned.
    return _adapter(annotation, ConfigDict(**dict(config)))  # type: ignore[typeddict-item]


def _field_plan(name: str, info: FieldInfo, config: ConfigDict) -> FieldPlan:
    metadata = list(info.metadata)
    if info.discriminator is not None:
        metadata.append(Field(discriminator=info.discriminator))
    # a type expression: pydantic takes any, mypy has no type for "any type expression"
    annotation: Any = Annotated[info.annotation, *metadata] if metadata else info.annotation
    try:
        adapter = _shared_adapter(annotation, tuple(sorted(config.items())))
    except TypeError:  # an unhashable annotation or config value: an adapter of its own
        adapter = _adapter(annotation, config)
    plain_list = get_origin(info.annotation) is list and len(get_args(info.annotation)) == 1
    return FieldPlan(
        name=name,
        info=info,
        adapter=adapter,
        reducer=reducer_from_metadata(metadata),
        expected=describe_type(info.annotation),
        append_items_only=plain_list and all(isinstance(m, Reducer) for m in metadata),
        validate_default=_default_changes(info, adapter),
        dump=_dumped(annotation),
    )


def _default_changes(info: FieldInfo, adapter: TypeAdapter[Any]) -> bool:
    """Whether validating the field's default gives another value (always for a factory)."""
    if info.default_factory is not None:
        return True
    if info.is_required():
        return False
    try:
        validated = adapter.validate_python(info.default)
    except ValidationError:
        return False
    return type(validated) is not type(info.default) or repr(validated) != repr(info.default)


def _dumped(annotation: Any) -> bool:
    """Whether a field of this type holds models, dataclasses or values with a serializer."""
    if isinstance(annotation, type):
        return issubclass(annotation, BaseModel) or dataclasses.is_dataclass(annotation)
    origin = get_origin(annotation)
    if origin is Annotated:
        base, *metadata = get_args(annotation)
        return _dumped(base) or any(isinstance(m, _SERIALIZERS) for m in metadata)
    return any(_dumped(arg) for arg in get_args(annotation) if arg is not Ellipsis)


def _to_tool_call(value: Any) -> ToolCall:
    if isinstance(value, ToolCall):
        return value
    try:
        return ToolCall.from_dict(value)
    except TypeError as exc:  # pydantic reports ValueError, not TypeError, as a validation error
        raise ValueError(str(exc)) from None


StateToolCall = Annotated[
    ToolCall,
    PlainValidator(_to_tool_call, json_schema_input_type=dict[str, Any]),
    PlainSerializer(ToolCall.to_dict, return_type=dict[str, Any]),
]
"""A ToolCall as a state value: dicts in any shape `ToolCall.from_dict` reads (flat or OpenAI)
become ToolCalls; a snapshot stores `to_dict()`, which restores as a ToolCall again."""


class AgentState(BaseModel):
    """The standard fields the tree nodes read and write; subclass it to add your own.

    `messages` are OpenAI-shaped message dicts (appended), `actions` the ToolCalls the LLM node
    asked for, `tool_effects` and `usage` counters (added per key), `guard` the guard's snapshot
    for pause and resume.
    """

    messages: Annotated[list[dict[str, Any]], Reducer("append")] = []
    actions: list[StateToolCall] = []
    tool_effects: Annotated[dict[str, int], Reducer("add")] = {}
    final_answer: str | None = None
    guard: dict[str, Any] = {}
    usage: Annotated[dict[str, int | float], Reducer("add")] = {}
