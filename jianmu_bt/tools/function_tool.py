"""FunctionTool and `@tool`: any sync or async function as a first-class, validated tool.

```python
@tool
def add(a: int, b: int) -> int:
    '''Add two integers.

    Args:
        a: The first addend.
        b: The second addend.
    '''
    return a + b
```
`add` is advertised with `a` and `b` (types, descriptions, required), validated before it runs,
and still callable as `add(1, 2)`.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypedDict, Unpack, overload

from jianmu_bt.tools.base import Tool
from jianmu_bt.tools.calls import ToolResult
from jianmu_bt.tools.effects import check_effects
from jianmu_bt.tools.shapes import DEFAULT_DESCRIPTION, DEFAULT_OUTPUT_SCHEMA
from jianmu_bt.tools.signature import ArgumentError, FunctionSignature


class FunctionTool(Tool):
    """A Tool backed by a plain function; what `@tool` returns.

    The function is analysed once (`FunctionSignature`). Without an explicit `input_schema` the
    schema comes from the type hints and the docstring (Google, NumPy or Sphinx style), and every
    call is validated against it; a validation failure is a ToolResult error naming the argument.
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        input_schema: Mapping[str, Any] | None = None,
        output_schema: Mapping[str, Any] | None = None,
        parallel_safe: bool = True,
        effect_tags: Iterable[str] = (),
        injected: Iterable[str] = (),
        timeout: float | None = None,
        blocking: bool | None = None,
        idempotent: bool = False,
        read_only: bool = False,
    ) -> None:
        if not callable(fn):
            raise TypeError(f"@tool needs a function, got {type(fn).__name__}")
        tags = tuple(effect_tags)
        check_effects(name or fn.__name__, read_only, tags)
        self.fn = fn
        functools.update_wrapper(self, fn, updated=())
        self.signature = FunctionSignature.from_function(fn, injected)
        self.name = name or fn.__name__
        self.description = description or self.signature.description or DEFAULT_DESCRIPTION
        self.input_schema = dict(input_schema) if input_schema else self.signature.input_schema
        self.output_schema = dict(output_schema or self.signature.output_schema or {}) or dict(
            DEFAULT_OUTPUT_SCHEMA
        )
        self.parallel_safe = parallel_safe
        self.effect_tags = tags
        self.timeout = timeout
        self.blocking = blocking
        self.idempotent = idempotent
        self.read_only = read_only
        self._run_is_async = inspect.iscoroutinefunction(fn)
        if self._run_is_async:
            # The contract: `run` of an async tool is a coroutine function. Calls do not go
            # through `run` (`_bind` calls `fn` directly), so the fast paths are unchanged.
            self.run = self._run_async  # type: ignore[method-assign]
        # A tool with one visible parameter may be called with a bare value instead of a dict.
        visible = [n for n in self.signature.param_names if n not in self.signature.injected_names]
        self._sole_param = visible[0] if len(visible) == 1 else None
        self._wraps_input = self.input_schema.get("type") != "object" and "input" not in visible

    def get_description(self) -> str:
        """The explicit description, else the function's docstring text, else "".

        Never FunctionTool's own class docstring: that describes the wrapper, not the tool.
        """
        return "" if self.description == DEFAULT_DESCRIPTION else self.description

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the underlying function directly, as if it were not decorated."""
        return self.fn(*args, **kwargs)

    def run(self, *args: Any, **kwargs: Any) -> Any:
        """Call the function (the coroutine of an async function is returned, not awaited)."""
        return self.fn(*args, **kwargs)

    async def _run_async(self, *args: Any, **kwargs: Any) -> Any:
        """`run` of an async function: a coroutine function awaiting it."""
        return await self.fn(*args, **kwargs)

    def _merge_args(
        self, args: Any, injected: Mapping[str, Any] | None, prefer_injected: bool
    ) -> Any:
        """Like `Tool._merge_args`, but values an LLM sent for injected parameters are dropped."""
        hidden = self.signature.injected_names
        if hidden and isinstance(args, Mapping) and hidden.intersection(args):
            args = {k: v for k, v in args.items() if k not in hidden}
        return super()._merge_args(args, injected, prefer_injected)

    def _prepare_input(self, args: Any) -> Any:
        """Validated keyword arguments, or a ToolResult error that names the bad argument."""
        if args is None:
            args = {}
        if self._wraps_input and isinstance(args, Mapping) and set(args) == {"input"}:
            args = args["input"]  # advertised as {"input": ...}; see normalize_parameters
        if not isinstance(args, Mapping):
            if self._sole_param is None:
                expected = ", ".join(self.signature.param_names) or "no arguments"
                return ToolResult.failure(
                    self.name,
                    f"Error: tool '{self.name}' expects a JSON object with {expected}; "
                    f"got {type(args).__name__}: {str(args)[:200]!r}",
                )
            args = {self._sole_param: args}
        try:
            return self.signature.validate(args)
        except ArgumentError as exc:
            return ToolResult.failure(
                self.name, f"Error: invalid arguments for tool '{self.name}': {exc}"
            )

    def _bind(self, prepared: Any) -> Callable[[], Any]:
        """The call of the function with validated keyword arguments (see `Tool._bind`)."""
        kwargs: dict[str, Any] = prepared
        positional = [kwargs.pop(n) for n in self.signature.positional_only]
        return functools.partial(self.fn, *positional, **kwargs)

    def __repr__(self) -> str:
        return f"<FunctionTool {self.name!r} of {getattr(self.fn, '__qualname__', self.fn)!r}>"


class ToolOptions(TypedDict, total=False):
    """The keyword options of `@tool(...)` and `FunctionTool(fn, ...)`; `tool` describes them."""

    name: str | None
    description: str | None
    input_schema: Mapping[str, Any] | None
    output_schema: Mapping[str, Any] | None
    parallel_safe: bool
    effect_tags: Iterable[str]
    injected: Iterable[str]
    timeout: float | None
    blocking: bool | None
    idempotent: bool
    read_only: bool


@overload
def tool(fn: Callable[..., Any], /, **options: Unpack[ToolOptions]) -> FunctionTool: ...


@overload
def tool(
    fn: None = None, /, **options: Unpack[ToolOptions]
) -> Callable[[Callable[..., Any]], FunctionTool]: ...


def tool(
    fn: Callable[..., Any] | None = None, /, **options: Unpack[ToolOptions]
) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Turn a function into a FunctionTool: `@tool` or `@tool(name=..., effect_tags=...)`.

    Options: `name`, `description` (default: the docstring's text), `input_schema` (default:
    derived from the type hints), `output_schema`, `parallel_safe`, `effect_tags`, `injected`
    (parameter names hidden from the LLM and supplied by the caller), `timeout` (seconds per
    call), `blocking` (where a sync function runs: by default it is measured, in a worker thread
    until its calls have shown they are quick, then on the event loop, back to a thread once a
    call is slow (`jianmu_bt.tools.placement`); True always runs it in a thread, for functions
    that block on I/O; False always on the loop), `idempotent` (running the same call twice
    has the effect of running it once: a durable run may re-run it after a crash; it can read
    its `idempotency_key` as an injected parameter) and `read_only` (it only observes: a durable
    run re-runs it after a crash; effect tags other than reads are refused with it).

    Without `read_only=True` or `idempotent=True` a tool is taken to have side effects, whether
    it lists effect tags or not (see `jianmu_bt.tools.effects`).
    """
    if fn is not None:
        return FunctionTool(fn, **options)
    return lambda f: FunctionTool(f, **options)
