"""ModelTool: a built-in tool whose arguments are a pydantic model.

The model is the one source of truth for a built-in's arguments: the LLM-facing `input_schema` is
generated from it once per class, and every call is validated against it before `run` sees it, so
a wrong or missing argument comes back as an error naming the argument instead of a crash.

Refusals and faults inside `run` are raised as `ToolFault` and reported, by `reports_faults`, as a
string starting with "Error:" (which `ToolResult.from_raw` turns into `ok=False`).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from jianmu_bt.tools.base import Tool
from jianmu_bt.tools.builtin.faults import ToolFault as ToolFault  # its home before faults.py
from jianmu_bt.tools.calls import ToolResult
from jianmu_bt.tools.signature import format_validation_error

RunFn = TypeVar("RunFn", bound=Callable[..., Any])


class ToolArguments(BaseModel):
    """Base of every built-in's argument model: unknown arguments are refused, not ignored."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


def argument_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON Schema an LLM sees for `model`, without pydantic's generated titles."""
    schema = model.model_json_schema(by_alias=True)
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    if not schema.get("required"):
        schema.pop("required", None)
    return schema


class ModelTool(Tool):
    """A Tool whose arguments are validated against the pydantic model `Arguments`.

    Subclasses declare `Arguments` (a `ToolArguments` subclass) and write `run(args)` decorated
    with `reports_faults`. `primary_argument` names the argument a bare string input fills, so a
    tree step may pass `"2 + 3"` to the calculator instead of `{"expression": "2 + 3"}`.
    """

    Arguments: ClassVar[type[BaseModel]] = ToolArguments
    primary_argument: ClassVar[str | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # Generated once per class, never per call.
        if "Arguments" in cls.__dict__:
            cls.input_schema = argument_schema(cls.Arguments)

    def parse_arguments(self, args: Any) -> BaseModel:
        """Validated arguments; raises ToolFault naming every bad argument."""
        if isinstance(args, self.Arguments):
            return args
        if isinstance(args, str) and self.primary_argument:
            args = {self.primary_argument: args}
        if not isinstance(args, Mapping):
            expected = ", ".join(self.input_schema.get("properties", {}))
            raise ToolFault(
                f"tool '{self.name}' expects a JSON object with the arguments ({expected}), "
                f"got {type(args).__name__}: {str(args)[:120]!r}"
            )
        try:
            return self.Arguments.model_validate(args)
        except ValidationError as exc:
            raise ToolFault(
                f"invalid arguments for '{self.name}': {format_validation_error(exc)}"
            ) from None

    def _prepare_input(self, args: Any) -> Any:
        """The validated argument model, or a ToolResult error the LLM can correct."""
        try:
            return self.parse_arguments(args)
        except ToolFault as exc:
            return ToolResult.failure(self.name, f"Error: {exc}")


def describe_os_error(exc: OSError) -> str:
    """An OSError in words, without the absolute paths it may carry."""
    return exc.strerror or type(exc).__name__


def reports_faults(run: RunFn) -> RunFn:
    """Decorate a ModelTool's `run`: validate raw arguments and report faults as "Error: ..." text.

    Works for sync and async `run`. `run` may then be called directly with a plain dict, and a
    ToolFault or an OSError becomes an error string instead of an exception.
    """
    if inspect.iscoroutinefunction(run):

        @functools.wraps(run)
        async def run_async(self: ModelTool, input: Any) -> Any:
            try:
                return await run(self, self.parse_arguments(input))
            except ToolFault as exc:
                return f"Error: {exc}"
            except OSError as exc:
                return f"Error: {self.name} failed: {describe_os_error(exc)}"

        return run_async  # type: ignore[return-value]

    @functools.wraps(run)
    def run_sync(self: ModelTool, input: Any) -> Any:
        try:
            return run(self, self.parse_arguments(input))
        except ToolFault as exc:
            return f"Error: {exc}"
        except OSError as exc:
            return f"Error: {self.name} failed: {describe_os_error(exc)}"

    return run_sync  # type: ignore[return-value]
