"""From a Python function to a validated, LLM-facing argument schema.

All of the expensive work (signature, type hints, docstring, pydantic model, JSON Schema) happens
once in `FunctionSignature.from_function`, when a tool is built; a call only validates.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, create_model

if TYPE_CHECKING:
    import docstring_parser


class Injected:
    """Marks a parameter as injected by the framework: hidden from the LLM, passed to the function.

    Use it as `user_id: Annotated[str, Injected]`, or list the name in `@tool(injected=[...])`.
    An LLM cannot set an injected parameter: a value it sends under that name is dropped.
    """


@dataclass(frozen=True, slots=True)
class FunctionSignature:
    """What a function takes and returns, analysed once."""

    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    model: type[BaseModel] | None
    param_names: tuple[str, ...]
    injected_names: frozenset[str]
    positional_only: tuple[str, ...]

    @classmethod
    def from_function(
        cls, fn: Callable[..., Any], injected: Iterable[str] = ()
    ) -> FunctionSignature:
        """Analyse `fn`: its parameters, their types, defaults and docstring descriptions."""
        # Only a function tool is analysed: a module that just formats errors (the built-ins)
        # does not load the docstring parser.
        import docstring_parser

        doc = docstring_parser.parse(inspect.getdoc(fn) or "")
        param_docs = {p.arg_name: (p.description or "").strip() for p in doc.params}
        hints = typing.get_type_hints(fn, include_extras=True)
        signature = inspect.signature(fn)
        injected_names = set(injected)
        fields: dict[str, Any] = {}
        names: list[str] = []
        positional_only: list[str] = []
        variadic = False
        for param in signature.parameters.values():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                variadic = True
                continue
            annotation = hints.get(param.name, Any)
            if _is_injected(annotation):
                injected_names.add(param.name)
            default = ... if param.default is param.empty else param.default
            description = param_docs.get(param.name) or None
            fields[param.name] = (annotation, Field(default, description=description))
            names.append(param.name)
            if param.kind is param.POSITIONAL_ONLY:
                positional_only.append(param.name)
        unknown = injected_names - set(names)
        if unknown:
            raise TypeError(f"{fn.__name__}: injected names {sorted(unknown)} are not parameters")

        model = None
        visible: dict[str, Any] = {}
        if not variadic:
            config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)
            model = create_model(f"{fn.__name__}_arguments", __config__=config, **fields)
            visible = {n: f for n, f in fields.items() if n not in injected_names}
        schema_model = create_model(
            f"{fn.__name__}_arguments",
            __config__=ConfigDict(arbitrary_types_allowed=True),
            **visible,
        )
        try:
            input_schema = _clean_schema(schema_model.model_json_schema())
        except Exception as exc:
            raise TypeError(
                f"cannot derive a JSON schema for the arguments of {fn.__name__}: {exc}; "
                "give the parameters JSON-compatible type hints or pass input_schema="
            ) from exc
        if variadic:
            input_schema["additionalProperties"] = True
        return cls(
            description=_description(doc),
            input_schema=input_schema,
            output_schema=_output_schema(hints.get("return"), doc),
            model=model,
            param_names=tuple(names),
            injected_names=frozenset(injected_names),
            positional_only=tuple(positional_only),
        )

    def validate(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """Validated keyword arguments for the function; raises `ArgumentError` on bad input."""
        if self.model is None:
            return dict(args)
        try:
            validated = self.model.model_validate(args)
        except ValidationError as exc:
            raise ArgumentError(format_validation_error(exc, self.injected_names)) from None
        return {name: getattr(validated, name) for name in self.param_names}


class ArgumentError(ValueError):
    """Arguments that do not fit a tool's schema; the message names each bad argument."""


def format_validation_error(exc: ValidationError, injected: frozenset[str] = frozenset()) -> str:
    """One readable line per problem: `argument: message (got value)`."""
    parts = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in err["loc"]) or "arguments"
        kind = err.get("type")
        if kind == "missing":
            what = (
                "missing injected value"
                if err["loc"][0] in injected
                else "missing required argument"
            )
            parts.append(f"{loc}: {what}")
        elif kind == "extra_forbidden":
            parts.append(f"{loc}: unexpected argument")
        else:
            parts.append(f"{loc}: {err['msg']} (got {err.get('input')!r:.80})")
    return "; ".join(parts)


def _is_injected(annotation: Any) -> bool:
    if typing.get_origin(annotation) is not Annotated:
        return False
    return any(m is Injected or isinstance(m, Injected) for m in annotation.__metadata__)


def _description(doc: docstring_parser.Docstring) -> str:
    parts = [doc.short_description or "", doc.long_description or ""]
    return "\n\n".join(p.strip() for p in parts if p and p.strip())


def _clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop pydantic's generated titles: noise in a prompt, and not part of the contract."""
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        if isinstance(prop, dict):
            prop.pop("title", None)
    if not schema.get("required"):
        schema.pop("required", None)
    return schema


def _output_schema(annotation: Any, doc: docstring_parser.Docstring) -> dict[str, Any] | None:
    if annotation is None or annotation is type(None):
        return None
    try:
        schema = TypeAdapter(annotation).json_schema()
    except Exception:
        return None
    schema.pop("title", None)
    if doc.returns and doc.returns.description:
        schema["description"] = doc.returns.description.strip()
    return schema
