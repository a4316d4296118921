"""What a running tool may know about its own call: the idempotency key of a durable run.

A durable run (see docs/durability.md) may run a call again after a crash when its tool is
`idempotent`; the tool tells the two runs apart from a new call by the key, which stays the same
for every run of that call. A tool reads it either as an injected parameter named
`idempotency_key` (`def pay(amount: int, idempotency_key: Annotated[str, Injected])`) or, from
any code it calls, with `idempotency_key()`. The value follows the call into worker threads.
"""

from __future__ import annotations

from contextvars import ContextVar

IDEMPOTENCY_PARAMETER = "idempotency_key"
"""The name of the injected parameter that receives a call's idempotency key."""

_IDEMPOTENCY_KEY: ContextVar[str | None] = ContextVar("jianmu_idempotency_key", default=None)


def idempotency_key() -> str | None:
    """The idempotency key of the tool call running now, or None outside a call."""
    return _IDEMPOTENCY_KEY.get()


def set_idempotency_key(key: str | None) -> object:
    """Set the key for the current context; returns a token for `reset_idempotency_key`."""
    return _IDEMPOTENCY_KEY.set(key)


def reset_idempotency_key(token: object) -> None:
    """Undo `set_idempotency_key`."""
    _IDEMPOTENCY_KEY.reset(token)  # type: ignore[arg-type]


def wants_idempotency_key(tool: object) -> bool:
    """True when the tool declares an injected `idempotency_key` parameter."""
    signature = getattr(tool, "signature", None)
    names = getattr(signature, "injected_names", ())
    return IDEMPOTENCY_PARAMETER in names
