"""How the tool nodes make their calls: one immutable options object per node.

`CallOptions` holds what ToolNode and ToolExecutor share (the retry policy, a per-call timeout);
`ExecutorOptions` extends it with what only a ToolExecutor has (how a batch runs, the state fields
it reads and writes). The loader maps the YAML keys `max_retries` and `retry_backoff` into
`RetryPolicy.from_retries(max_retries, retry_backoff)`, the other keys into the fields of the same
name. Values are checked when the object is made: a bad one is a ValueError that names it.

```python
ToolNode(fetch, options=CallOptions(retry=RetryPolicy.from_retries(2), call_timeout=10))
ToolExecutor(tools, options=ExecutorOptions(execution_mode="serial", call_timeout=30))
```
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from jianmu_bt.tools.retry import NO_RETRY, RetryPolicy

ExecutionMode = Literal["auto", "serial", "parallel"]
"""How a ToolExecutor runs a batch: `auto` runs it in parallel only when every tool of the batch
is parallel-safe."""

EXECUTION_MODES: tuple[ExecutionMode, ...] = ("auto", "serial", "parallel")

#: Calls of one parallel batch run at once by default. Sized for I/O-bound async tools (a task
#: waiting on the network costs a few KiB), so 1,000 concurrent calls run in one wave; sync tools
#: that block are bounded by the worker threads as well (`jianmu_bt.tools.blocking`: 40).
DEFAULT_MAX_CONCURRENCY = 1000


@dataclass(frozen=True, slots=True)
class CallOptions:
    """How a node makes each tool call.

    `retry`: when a failed call is tried again (default: never); failures of the call's shape
    (invalid arguments, an unknown tool) never are. `call_timeout`: seconds one attempt may take
    (None: no limit).
    """

    retry: RetryPolicy = NO_RETRY
    call_timeout: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.retry, RetryPolicy):
            raise ValueError(
                "retry must be a RetryPolicy (e.g. RetryPolicy.from_retries(max_retries, "
                f"retry_backoff)), got {type(self.retry).__name__}: {self.retry!r}"
            )
        if self.call_timeout is not None:
            _check_seconds("call_timeout", self.call_timeout)


DEFAULT_CALL_OPTIONS = CallOptions()
"""The options of a node made without any (one shared instance: options are immutable)."""


@dataclass(frozen=True, slots=True)
class ExecutorOptions(CallOptions):
    """A ToolExecutor's options: the call options plus how a batch runs and where it lives.

    `execution_mode`: auto, serial or parallel; `max_concurrency`: calls run at once in a
    parallel batch (default `DEFAULT_MAX_CONCURRENCY`, 1,000; the calls of sync tools that run
    in worker threads are also bounded by the threads); `actions_key`: the state field holding
    the calls to run; `messages_key`: where tool messages are appended; `effects_key`: where the
    successful calls' effect tags are counted and `guard_key`: where the guard's state is saved
    (None, or a key the state does not have: not written).
    """

    execution_mode: ExecutionMode = "auto"
    max_concurrency: int = DEFAULT_MAX_CONCURRENCY
    actions_key: str = "actions"
    messages_key: str = "messages"
    effects_key: str | None = "tool_effects"
    guard_key: str | None = "guard"

    def __post_init__(self) -> None:
        CallOptions.__post_init__(self)  # (a slotted dataclass cannot use a bare super())
        if self.execution_mode not in EXECUTION_MODES:
            raise ValueError(
                f"execution_mode must be auto, serial or parallel, got {self.execution_mode!r}"
            )
        _check_count("max_concurrency", self.max_concurrency, minimum=1)
        for name in ("actions_key", "messages_key"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise ValueError(f"{name} must be a state field name, got {value!r}")
        for name in ("effects_key", "guard_key"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise ValueError(f"{name} must be a state field name or None, got {value!r}")


def _check_count(name: str, value: object, *, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be a whole number of at least {minimum}, got {value!r}")


def _check_seconds(name: str, value: object) -> None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return  # (NaN is not more than 0)
    raise ValueError(f"{name} must be a number of seconds more than 0, got {value!r}")
