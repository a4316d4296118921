"""What a running tool may know about its own call: the idempotency key of a durable run, and
where to report its progress.

A durable run (see docs/durability.md) may run a call again after a crash when its tool is
`idempotent`; the tool tells the two runs apart from a new call by the key, which stays the same
for every run of that call. A tool reads it either as an injected parameter named
`idempotency_key` (`def pay(amount: int, idempotency_key: Annotated[str, Injected])`) or, from
any code it calls, with `idempotency_key()`. The value follows the call into worker threads.

A long tool reports progress with `report_progress(done, total, message)`: whoever runs the call
(a tree node, which turns it into a `tool.progress` run event; the MCP server, which sends it to
the client as a progress notification) installs a sink with `progress_sink(...)`. Outside such a
call the report goes nowhere. A sink may be called from a worker thread.

Both live in one context variable, set once per call by the node that runs it (`enter_call`,
`leave_call`): a call pays one set and one more to put back what was there, whatever it
carries. (What `enter_call` hands back is that earlier scope, not a `contextvars.Token`: a token
would be one more object kept for as long as the call runs. The scope is a plain tuple, which
the garbage collector stops tracking once it holds no callable, as for most calls: a named
tuple would stay tracked, one more object to walk for every call in flight.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token

IDEMPOTENCY_PARAMETER = "idempotency_key"
"""The name of the injected parameter that receives a call's idempotency key."""

ProgressSink = Callable[[float, "float | None", "str | None"], None]
"""Receives `(progress, total, message)` reports of the call running in its context."""


CallScope = tuple[str | None, ProgressSink | None]
"""What the tool call running in a context may know: `(idempotency key, progress sink)`."""

_OUTSIDE: CallScope = (None, None)
_CALL: ContextVar[CallScope] = ContextVar("jianmu_call", default=_OUTSIDE)


def enter_call(key: str | None, progress: ProgressSink | None = None) -> CallScope:
    """Mark the current context as running a call with this key and progress sink; returns the
    scope it replaces, for `leave_call`."""
    previous = _CALL.get()
    _CALL.set((key, progress))
    return previous


def leave_call(previous: CallScope) -> None:
    """Undo `enter_call`: `previous` is what it returned."""
    _CALL.set(previous)


def idempotency_key() -> str | None:
    """The idempotency key of the tool call running now, or None outside a call."""
    return _CALL.get()[0]


def set_idempotency_key(key: str | None) -> Token[CallScope]:
    """Set the key for the current context (the progress sink stays); returns a token for
    `reset_idempotency_key`."""
    return _CALL.set((key, _CALL.get()[1]))


def reset_idempotency_key(token: Token[CallScope]) -> None:
    """Undo `set_idempotency_key`."""
    _CALL.reset(token)


def wants_idempotency_key(tool: object) -> bool:
    """True when the tool declares an injected `idempotency_key` parameter."""
    signature = getattr(tool, "signature", None)
    names = getattr(signature, "injected_names", ())
    return IDEMPOTENCY_PARAMETER in names


def report_progress(
    progress: float, total: float | None = None, message: str | None = None
) -> None:
    """Report how far the running tool call is (`progress` of `total`, both in the tool's own
    unit; `total` None when unknown). A no-op outside a call whose runner listens."""
    sink = _CALL.get()[1]
    if sink is not None:
        sink(progress, total, message)


@contextmanager
def progress_sink(sink: ProgressSink | None) -> Iterator[None]:
    """Send the progress reports of calls run in this context (and the threads it hands calls
    to) to `sink` until the block ends; the call's idempotency key stays."""
    token = _CALL.set((_CALL.get()[0], sink))
    try:
        yield
    finally:
        _CALL.reset(token)
