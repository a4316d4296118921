"""The shapes of a tool's schemas and arguments: defaults, how they are normalised, and how a
tool describes itself to an LLM (`Described`, a base of `Tool`).

Re-exported by `jianmu_bt.tools.base` (and the package), where callers import them from.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

DEFAULT_NAME = "unnamed_tool"
DEFAULT_DESCRIPTION = "No description provided"
DEFAULT_INPUT_SCHEMA: dict[str, Any] = {"type": "string", "description": "Input for the tool"}
DEFAULT_OUTPUT_SCHEMA: dict[str, Any] = {"type": "string", "description": "Output of the tool"}


def normalize_parameters(schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """An object JSON Schema for function calling: objects pass through, anything else is wrapped.

    A non-object input schema becomes `{"type": "object", "properties": {"input": schema},
    "required": ["input"]}`, so an LLM always fills named arguments.
    """
    schema = dict(schema or {})
    if schema.get("type") == "object":
        schema.setdefault("properties", {})
        return schema
    return {"type": "object", "properties": {"input": schema}, "required": ["input"]}


def normalize_output_schema(schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """The declared output schema, or the default string schema when none was declared."""
    return dict(schema) if schema else dict(DEFAULT_OUTPUT_SCHEMA)


def merge_call_args(args: Any, injected: Mapping[str, Any] | None, prefer_injected: bool) -> Any:
    """Merge injected values into dict arguments; non-dict arguments are left untouched.

    With `prefer_injected` (the default) an injected value beats an argument of the same name.
    """
    if args is None:
        args = {}
    if not injected or not isinstance(args, Mapping):
        return args
    return {**args, **injected} if prefer_injected else {**injected, **args}


class Described:
    """What a tool tells an LLM or a UI about itself (`Tool` sets the attributes)."""

    name: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    parallel_safe: bool
    effect_tags: tuple[str, ...]
    read_only: bool
    idempotent: bool

    def get_description(self) -> str:
        """The explicit description, else this class's own docstring, else ""."""
        if self.description and self.description != DEFAULT_DESCRIPTION:
            return self.description
        # Only the class's own docstring: an inherited one describes the base class, not the tool.
        doc = type(self).__dict__.get("__doc__")
        return inspect.cleandoc(doc) if doc else ""

    def to_schema(self) -> dict[str, Any]:
        """The function-calling schema: `{"name", "description", "parameters"}` (object params)."""
        return {
            "name": self.name,
            "description": self.get_description(),
            "parameters": normalize_parameters(self.input_schema),
        }

    def spec(self) -> dict[str, Any]:
        """A richer description for prompts and UIs: schemas, returns, effects (the declared
        effect tags), parallel_safe, read_only and idempotent."""
        output_schema = normalize_output_schema(self.output_schema)
        return {
            "name": self.name,
            "description": self.get_description(),
            "parameters": normalize_parameters(self.input_schema),
            "input_schema": dict(self.input_schema),
            "output_schema": output_schema,
            "returns": output_schema.get("description", output_schema.get("type", "")),
            "effects": list(self.effect_tags),
            "parallel_safe": self.parallel_safe,
            "read_only": bool(self.read_only),
            "idempotent": bool(self.idempotent),
        }
