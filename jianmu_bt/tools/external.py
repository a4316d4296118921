"""ExternalTool: a tool whose result comes from outside the process, later.

A human task queue, a CI job, a payment provider's webhook: the call is handed out (a tree run
records it as `waiting`, with its id, tool and arguments) and its result is supplied from
outside: `jianmu resume RUN --result CALL_ID=JSON`, `Tree.resume(..., results=...)`, or
`Tree.supply_result(call_id, value)` while the run waits in its process. The result is checked
against `output_schema` before the run takes it. After `timeout` seconds without a result the
call takes `default` when one is given, and fails otherwise.

```python
ci_result = ExternalTool(
    "ci_result",
    "Start the CI pipeline on a branch; its verdict comes back when the pipeline ends.",
    parameters={"type": "object", "properties": {"branch": {"type": "string"}},
                "required": ["branch"]},
    output_schema={"type": "object", "properties": {"passed": {"type": "boolean"}},
                   "required": ["passed"]},
    timeout=3600,
)
```
The tool layer knows nothing of runs: called on its own (outside a tree), an ExternalTool
fails with a result that says where its results come from.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from jsonschema import exceptions, validators  # type: ignore[import-untyped]

from jianmu_bt.tools.base import Tool
from jianmu_bt.tools.calls import ToolResult

__all__ = ["NO_DEFAULT", "ExternalTool", "is_external", "value_problems"]

#: `default` when a call that times out has none (it then fails).
NO_DEFAULT: Any = type("NoDefault", (), {"__repr__": lambda self: "NO_DEFAULT"})()


class ExternalTool(Tool):
    """A tool whose calls are handed out and answered from outside (see the module docstring).

    It is taken to have side effects (a call handed out twice may start two jobs): a durable
    run records it before handing it out and never hands it out again.
    """

    blocking = False
    #: Calls of this tool are answered from outside the process (tree nodes hand them out).
    external = True

    def __init__(
        self,
        name: str,
        description: str,
        *,
        parameters: Mapping[str, Any] | None = None,
        output_schema: Mapping[str, Any] | None = None,
        timeout: float | None = None,
        default: Any = NO_DEFAULT,
        effect_tags: Iterable[str] = (),
    ) -> None:
        if timeout is not None and timeout <= 0:
            raise ValueError(f"external tool {name!r}: timeout must be positive, got {timeout}")
        self.name = name
        self.description = description
        self.input_schema = dict(parameters or {"type": "object", "properties": {}})
        #: What a call does, for the guard's budgets (`budgets: {payments: 3}`).
        self.effect_tags = tuple(effect_tags)
        #: The JSON Schema a supplied result must fit (None: any JSON value).
        self.result_schema = dict(output_schema) if output_schema is not None else None
        if self.result_schema is not None:
            self.output_schema = self.result_schema
            _check_schema(name, self.result_schema)
        self.wait_timeout = timeout
        self.default = default
        if default is not NO_DEFAULT:
            problems = value_problems(self.result_schema, default)
            if problems:
                raise ValueError(
                    f"external tool {name!r}: its default does not fit its output_schema: "
                    + "; ".join(problems)
                )

    async def run(self, input: Any) -> Any:
        """Called outside a tree run: there is nobody to hand the call to."""
        return ToolResult.failure(
            self.name,
            f"Error: {self.name} is an external tool: its result is supplied from outside a "
            "tree run (jianmu resume RUN --result CALL_ID=JSON); call it from a tree",
        )


def is_external(tool: object) -> bool:
    """True when calls of `tool` are answered from outside the process."""
    return getattr(tool, "external", False) is True


def value_problems(
    schema: Mapping[str, Any] | None, value: Any, label: str = "result"
) -> list[str]:
    """What is wrong with `value` for `schema`, one line per problem naming where in the value
    (`label`, then the path), none for no schema."""
    if not schema:
        return []
    cls = validators.validator_for(schema, default=validators.Draft202012Validator)
    found = sorted(cls(schema).iter_errors(value), key=lambda e: list(e.absolute_path))
    return [f"{_where(e, label)}: {e.message}" for e in found]


def _check_schema(name: str, schema: Mapping[str, Any]) -> None:
    cls = validators.validator_for(schema, default=validators.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except exceptions.SchemaError as exc:
        message = f"external tool {name!r}: output_schema is not JSON Schema: {exc.message}"
        raise ValueError(message) from None


def _where(error: Any, label: str) -> str:
    path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    return f"{label}{path}"
