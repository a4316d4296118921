"""Sandbox: what LocalSandbox and DockerSandbox share, whatever their workers run in.

- the pre-flight of a call: the tool must be re-creatable by import path (`toolspec`) and its
  arguments JSON; the sandbox's limits are tightened by the tool's own `sandbox_limits`; the call
  is online only when both the sandbox and those limits allow it;
- cold and warm workers: cold, a worker of its own per call; warm, one kept per network setting
  (calls are serialised) and replaced once it is no longer usable;
- the exchange of one call: a fresh id and random nonce that the reply must carry, the per-call
  limits, and a timeout, an oversized reply or a dead worker turned into an error that names the
  limit; a limit counter (memory, processes) that grew during the call names its limit too.

A subclass says how its kind of worker (a process here, a container) starts, is retired after a
failure, is closed, and how its death is explained.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import secrets
import uuid
import weakref
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, Self, TypeVar

import anyio

from jianmu_bt.sandbox.channel import ChannelClosed, ReplyTooLarge
from jianmu_bt.sandbox.failures import LimitName, format_size, limit_error, sandbox_error
from jianmu_bt.sandbox.limits import SandboxLimits
from jianmu_bt.sandbox.toolspec import ToolNotPortableError, describe_tool
from jianmu_bt.tools.runners import RunnableTool

#: The limits the worker applies to each call itself, sent with every request.
_PER_CALL_LIMITS = ("cpu_seconds", "max_output_bytes", "memory_bytes", "max_file_bytes")
#: Room for the reply's own fields around a result of `max_output_bytes`.
_REPLY_ROOM = 1 << 16
#: Limit counters whose growth a sandbox can see; a result that names one of them stands.
_COUNTED: tuple[LimitName, ...] = ("memory", "processes")


class SandboxUnavailableError(RuntimeError):
    """The sandbox cannot work here: no worker starts (no docker SDK, no reachable engine, no
    image, a worker that fails to start); the message says why."""


class SandboxWorker(Protocol):
    """What the shared call logic needs of one running worker (a process, a container)."""

    @property
    def usable(self) -> bool:
        """Whether the worker may take another call."""
        ...

    def hits(self) -> dict[str, int]:
        """How often each counted limit was reached so far ({"processes": n, "memory": n})."""
        ...

    async def request(self, message: dict[str, Any], cap: int) -> dict[str, Any]:
        """Send one request and return its reply (ChannelClosed / ReplyTooLarge on failure)."""
        ...

    def stray_bytes(self) -> int:
        """Bytes the worker's channel carried after the last reply."""
        ...


W = TypeVar("W", bound=SandboxWorker)


@dataclass(frozen=True)
class SandboxCall:
    """One call that passed the pre-flight."""

    tool: RunnableTool
    spec: dict[str, Any]
    args: Any
    limits: SandboxLimits
    online: bool


class Sandbox(ABC, Generic[W]):
    """The base of the sandbox runners (see the module doc); a ToolRunner.

    Attributes:
        limits: the ceiling of every call's limits.
        warm: keep one worker for many calls instead of one per call.
        network: whether calls may be online (each call's limits may still say no).
        id: a short random id naming this sandbox's resources (cgroups, container labels).
    """

    #: The limit counters whose growth during a call this kind of sandbox reports.
    watched_hits: tuple[LimitName, ...] = ("processes",)
    #: What is replaced when a reply is not the call's own ("worker", "container").
    worker_noun = "worker"

    def __init__(
        self, limits: SandboxLimits | Mapping[str, Any] | None, *, warm: bool, network: bool
    ) -> None:
        self.limits = limits if isinstance(limits, SandboxLimits) else SandboxLimits(**limits or {})
        self.warm = warm
        self.network = network
        self.id = uuid.uuid4().hex[:12]
        self._workers: dict[bool, W] = {}  # warm workers by network access (online or not)
        self._lock = anyio.Lock()
        self._ids = itertools.count(1)
        self._specs: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()

    # -- the runner -------------------------------------------------------------------------

    async def run(self, tool: RunnableTool, args: Any) -> Any:
        """Run `tool` with `args` in a sandboxed worker; returns the raw result or an error."""
        try:
            spec = self._spec(tool)
            json.dumps(args)
        except ToolNotPortableError as exc:
            return sandbox_error(str(exc))
        except (TypeError, ValueError) as exc:
            return sandbox_error(f"the arguments of '{tool.name}' are not JSON: {exc}")
        limits = self.limits.tightened(getattr(tool, "sandbox_limits", None))
        online = limits.allows_network(self.network)  # the sandbox and the call must both allow
        call = SandboxCall(tool, spec, args, limits, online)
        try:
            return await self._dispatch(call)
        except SandboxUnavailableError as exc:
            return sandbox_error(str(exc))

    async def aclose(self) -> None:
        """Close the warm workers and release what the sandbox holds (a temporary workspace)."""
        with anyio.CancelScope(shield=True):
            async with self._lock:
                while self._workers:
                    await self._close(self._workers.popitem()[1])
                await self._release()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # -- workers ----------------------------------------------------------------------------

    def _spec(self, tool: Any) -> dict[str, Any]:
        """The tool's spec (`toolspec.describe_tool`), kept per tool object while it lives."""
        try:
            spec = self._specs.get(tool)
        except TypeError:
            spec = None
        if spec is None:
            spec = describe_tool(tool)
            with contextlib.suppress(TypeError):  # a tool that cannot be weakly referenced
                self._specs[tool] = spec
        return spec

    async def _dispatch(self, call: SandboxCall) -> Any:
        if not self.warm:
            return await self._run_cold(call)
        async with self._lock:
            return await self._run_warm(call)

    async def _run_cold(self, call: SandboxCall) -> Any:
        """The call in a worker of its own, started with the call's limits and closed after."""
        worker = await self._start_worker(call.limits, warm=False, online=call.online)
        try:
            return await self._call(worker, call)
        finally:
            await self._close(worker)

    async def _run_warm(self, call: SandboxCall) -> Any:
        """The call in the warm worker of its network setting (the caller holds the lock)."""
        worker = self._workers.get(call.online)  # (an offline call of an online sandbox gets
        if worker is None or not worker.usable:  # an offline warm worker of its own)
            if worker is not None:
                await self._close(worker)
            worker = await self._start_worker(self.limits, warm=True, online=call.online)
            self._workers[call.online] = worker
        try:
            return await self._call(worker, call)
        finally:
            if not worker.usable:
                await self._close(worker)
                if self._workers.get(call.online) is worker:
                    del self._workers[call.online]

    # -- one call ---------------------------------------------------------------------------

    async def _call(self, worker: W, call: SandboxCall) -> Any:
        limits = call.limits
        nonce = secrets.token_hex(16)
        per_call = {name: getattr(limits, name) for name in _PER_CALL_LIMITS}
        request = {"id": next(self._ids), "nonce": nonce, "tool": call.spec, "args": call.args}
        request.update(limits=per_call, **self._placement(call))
        before = worker.hits()
        try:
            with anyio.fail_after(limits.timeout):
                reply = await worker.request(request, limits.max_output_bytes + _REPLY_ROOM)
        except TimeoutError:
            await self._retire(worker)
            detail = f"the call ran longer than {limits.timeout:g} s and was killed"
            return self._with_hits(limit_error("timeout", detail), worker, before, limits)
        except ReplyTooLarge:
            await self._retire(worker)
            cap = limits.max_output_bytes
            return limit_error("output", f"the result is over the {cap:,}-byte limit")
        except ChannelClosed:
            await self._retire(worker)
            return await self._died(worker, before, limits)
        except BaseException:  # cancelled: nothing may outlive the call
            await self._retire(worker)
            raise
        if reply.get("id") != request["id"] or reply.get("nonce") != nonce:
            await self._retire(worker)
            return sandbox_error(
                f"the reply did not carry this call's id and nonce; the {self.worker_noun} "
                "was replaced"
            )
        raw = self._with_hits(reply.get("raw"), worker, before, limits)
        if reply.get("restart") or raw is not reply.get("raw") or worker.stray_bytes():
            await self._retire(worker)  # a limit was hit, or something else wrote on the channel
        else:
            await self._settle(worker, reply)
        return raw

    def _with_hits(
        self, raw: Any, worker: W, before: Mapping[str, int], limits: SandboxLimits
    ) -> Any:
        """`raw`, or a limit error when a watched limit counter grew during the call (a result
        that already names a counted limit stands: it says more)."""
        if isinstance(raw, dict) and raw.get("limit") in _COUNTED:
            return raw
        after = worker.hits()
        said = raw.get("error") if isinstance(raw, dict) else None
        suffix = f" ({said})" if said else ""
        for limit in self.watched_hits:
            if after.get(limit, 0) > before.get(limit, 0):
                return limit_error(limit, _hit_detail(limit, limits) + suffix)
        return raw

    # -- what a kind of sandbox says --------------------------------------------------------

    @abstractmethod
    async def _start_worker(self, limits: SandboxLimits, *, warm: bool, online: bool) -> W:
        """A started worker; raises SandboxUnavailableError when none can start."""

    @abstractmethod
    async def _retire(self, worker: W) -> None:
        """Stop using `worker` after a failure or a hit limit (it is no longer `usable`)."""

    @abstractmethod
    async def _close(self, worker: W) -> None:
        """End `worker` and everything it started (idempotent; completes when cancelled)."""

    @abstractmethod
    async def _died(self, worker: W, before: Mapping[str, int], limits: SandboxLimits) -> Any:
        """The error of a call whose worker died (after `_retire`): the limit that killed it,
        when one did."""

    def _placement(self, call: SandboxCall) -> dict[str, Any]:
        """Extra request fields saying where in the worker the call runs (none by default)."""
        return {}

    async def _settle(self, worker: W, reply: dict[str, Any]) -> None:
        """After a sound reply: clear what the call left behind (nothing to do by default)."""

    async def _release(self) -> None:
        """Release what the sandbox holds besides its warm workers (called by `aclose`)."""


def _hit_detail(limit: LimitName, limits: SandboxLimits) -> str:
    if limit == "memory":
        return f"the call's processes reached {format_size(limits.memory_bytes or 0)}"
    return f"the call tried to run more than {limits.max_processes} processes"
