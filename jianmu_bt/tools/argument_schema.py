"""Arguments checked against a tool's declared JSON Schema before anything runs.

A reviewer who edits a held call's arguments must not be able to hand the tool something its
schema refuses: `schema_problems` checks them with `jsonschema` (every keyword of the tool's
`parameters`) and says what is wrong, one line per problem, naming the argument.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jsonschema import exceptions, validators  # type: ignore[import-untyped]

from jianmu_bt.tools.base import Tool
from jianmu_bt.tools.signature import FunctionSignature

__all__ = ["edit_refusal", "schema_problems"]


def schema_problems(tool: Tool, arguments: Any) -> list[str]:
    """What is wrong with `arguments` for `tool` (an empty list when they fit its schema, or
    when the tool declares no usable schema)."""
    if not isinstance(arguments, Mapping):
        return [f"the arguments must be a JSON object, not {type(arguments).__name__}"]
    schema = tool.to_schema().get("parameters")
    if not isinstance(schema, Mapping):
        return []
    cls = validators.validator_for(schema, default=validators.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except exceptions.SchemaError:
        return []  # a schema that is not JSON Schema checks nothing (the tool still validates)
    found = sorted(cls(schema).iter_errors(dict(arguments)), key=lambda e: list(e.absolute_path))
    return [*_unexpected(tool, arguments), *(f"{_where(e)}: {e.message}" for e in found)]


def edit_refusal(name: str, tool: Tool | None, arguments: Any) -> str | None:
    """Why a reviewer's edited arguments for a call of `name` (the tool `tool`, None when the
    tree has no such tool) cannot be taken, or None when they fit its schema."""
    problems = schema_problems(tool, arguments) if tool is not None else []
    if not problems:
        return None
    return f"the edited arguments do not fit {name}'s schema: " + "; ".join(problems)


def _unexpected(tool: Tool, arguments: Mapping[str, Any]) -> list[str]:
    """Arguments a function tool has no parameter for (its schema does not list them as
    forbidden, but the function refuses them), and values the run injects itself."""
    signature = getattr(tool, "signature", None)
    if not isinstance(signature, FunctionSignature) or signature.input_schema.get(
        "additionalProperties"
    ):
        return []
    problems = []
    for name in arguments:
        if name in signature.injected_names:
            problems.append(f"arguments.{name}: the run gives this value itself")
        elif name not in signature.param_names:
            problems.append(f"arguments.{name}: unexpected argument")
    return problems


def _where(error: Any) -> str:
    path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    return f"arguments{path}" if path else "arguments"
