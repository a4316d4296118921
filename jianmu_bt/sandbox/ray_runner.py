"""RayRunner: a tool call runs as a Ray task, with the resources its tool asks for.

```python
runner = RayRunner(num_cpus=2, memory="2GiB", timeout=60)
result = await heavy_tool.call({"path": "big.csv"}, runner=runner)   # a ToolResult
```
What crosses to the worker is the tool's import path (`describe_tool`, as for the sandboxes:
nothing of the tool is pickled) and the call's JSON arguments; the worker imports the tool once
per process and runs `execute_local`. The folder the tool's module was imported from goes along,
so a `tools.py` next to a tree file imports on a local cluster's workers; on a remote cluster the
module must be installed there or shipped with `runtime_env` (`working_dir`, `py_modules`).

A `timeout` (or the caller's cancellation, e.g. a tool's own `timeout` or a halted tree) cancels
the Ray task with `ray.cancel(force=True)`, which kills the worker running it. A tool that raises,
a worker that dies or a tool that cannot be imported there comes back as a failed ToolResult.

When Ray is not connected yet, the first call starts a local Ray (`ray.init` with `num_cpus`
of this machine, no dashboard) or connects to `address`; `close()` shuts down a Ray it started.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio

from jianmu_bt.sandbox.failures import limit_error, sandbox_error
from jianmu_bt.sandbox.limits import parse_size
from jianmu_bt.sandbox.ray_local import (
    RAY_EXTRA,
    RayUnavailableError,
    require_ray,
    start_local_ray,
)
from jianmu_bt.sandbox.ray_resources import missing_resources
from jianmu_bt.sandbox.ray_waits import active_waits
from jianmu_bt.sandbox.toolspec import ToolNotPortableError, describe_tool, recreate_tool, spec_key
from jianmu_bt.tools.runners import RunnableTool

__all__ = ["RAY_EXTRA", "RayRunner", "RayUnavailableError", "require_ray", "start_local_ray"]

#: The options a tree file may give `runner: {kind: ray, ...}`.
RAY_OPTIONS = (
    "num_cpus",
    "num_gpus",
    "memory",
    "runtime_env",
    "timeout",
    "address",
    "max_retries",
    "warm",
)


def portable_spec(tool: Any) -> dict[str, Any]:
    """`describe_tool(tool)` plus the folder its module was imported from (`sys_path`)."""
    spec = describe_tool(tool)
    module = sys.modules.get(spec["module"])
    where = getattr(module, "__file__", None)
    if where:
        root = Path(where).resolve().parent
        for _ in range(spec["module"].count(".")):
            root = root.parent
        spec["sys_path"] = str(root)
    return spec


_worker_tools: dict[str, Any] = {}


def call_on_worker(spec: dict[str, Any], args: Any) -> Any:
    """The Ray task: re-create the tool (once per worker process) and run the call here."""
    key = spec_key(spec)
    tool = _worker_tools.get(key)
    if tool is None:
        path = spec.get("sys_path")
        if path and path not in sys.path:
            sys.path.append(path)
        try:
            tool = recreate_tool({k: v for k, v in spec.items() if k != "sys_path"})
        except ToolNotPortableError as exc:
            return sandbox_error(f"on the Ray worker: {exc}")
        _worker_tools[key] = tool
    try:
        return anyio.run(tool.execute_local, args)
    except Exception as exc:  # the tool raised: a failed result, as a local call gives
        return {"ok": False, "error": f"Error: {type(exc).__name__}: {exc}"}


class ToolHost:
    """A Ray actor that keeps its tools imported between calls (RayRunner's `warm` pool)."""

    def call(self, spec: dict[str, Any], args: Any) -> Any:
        """Run one call in this actor's process."""
        return call_on_worker(spec, args)


class ActorPool:
    """`size` ToolHost actors; a call goes to the least busy one. An actor whose call timed out
    or was cancelled is killed (Ray cannot stop a running actor call otherwise) and replaced."""

    def __init__(self, ray: Any, size: int, options: Mapping[str, Any]) -> None:
        self.ray = ray
        self.options = {k: v for k, v in options.items() if k != "max_retries"}
        self.actors: list[Any] = [None] * size
        self.busy = [0] * size

    def submit(self, spec: dict[str, Any], args: Any) -> tuple[int, Any, Any]:
        """The slot used, its actor and the call's ObjectRef."""
        slot = self.busy.index(min(self.busy))
        if self.actors[slot] is None:
            self.actors[slot] = self.ray.remote(ToolHost).options(**self.options).remote()
        self.busy[slot] += 1
        actor = self.actors[slot]
        return slot, actor, actor.call.remote(spec, args)

    def done(self, slot: int) -> None:
        """A call on `slot` ended."""
        self.busy[slot] -= 1

    def replace(self, slot: int, actor: Any) -> None:
        """Kill `actor` (of `slot`); the next call there starts a new one. A call that failed
        on an actor already replaced leaves the new one alone."""
        if self.actors[slot] is actor:
            self.actors[slot] = None
        if actor is not None:
            with contextlib.suppress(Exception):
                self.ray.kill(actor, no_restart=True)

    def close(self) -> None:
        """Kill every actor."""
        for slot, actor in enumerate(self.actors):
            self.replace(slot, actor)


class RayRunner:
    """Runs each tool call as a Ray task (implements the ToolRunner protocol).

    `num_cpus`, `num_gpus`, `memory` (bytes or "2GiB") and `runtime_env` are the task's Ray
    options; `timeout` (seconds) bounds each call; `max_retries` is how often Ray runs a call
    again whose worker died (0 by default: a tool call may have effects). `address` names a
    cluster to connect to when this process is not connected to Ray yet. `warm=N` runs the calls
    on a pool of N actors instead (each with those resources), which keep their tools imported.
    """

    def __init__(
        self,
        *,
        num_cpus: float = 1,
        num_gpus: float = 0,
        memory: int | str | None = None,
        runtime_env: Mapping[str, Any] | None = None,
        timeout: float | None = None,
        max_retries: int = 0,
        address: str | None = None,
        warm: int = 0,
    ) -> None:
        if warm < 0:
            raise ValueError(f"warm must be >= 0 actors, got {warm}")
        if num_cpus < 0 or num_gpus < 0:
            raise ValueError("num_cpus and num_gpus must be >= 0")
        if timeout is not None and timeout <= 0:
            raise ValueError(f"timeout must be > 0 seconds, got {timeout}")
        self.options: dict[str, Any] = {
            "num_cpus": num_cpus,
            "num_gpus": num_gpus,
            "max_retries": max_retries,
        }
        if memory is not None:
            self.options["memory"] = parse_size(memory)
        if runtime_env:
            self.options["runtime_env"] = dict(runtime_env)
        self.timeout = timeout
        self.address = address
        self.warm = warm
        self._remote: Any = None
        self._pool: ActorPool | None = None
        self._stop: Any = None
        self._short = ""  # the resources the cluster lacks for these options (see _task)
        self._specs: dict[int, tuple[RunnableTool, dict[str, Any]]] = {}
        self._lock = threading.Lock()

    def _task(self) -> Any:
        """The remote function with this runner's options; connects to Ray on first use."""
        if self._remote is None:
            ray = require_ray()
            with self._lock:
                if self._remote is None:  # another thread may have connected meanwhile
                    if not ray.is_initialized():
                        if self.address:
                            ray.init(address=self.address, logging_level="WARNING")
                        else:
                            self._stop = start_local_ray()
                            atexit.register(self.close)  # a runner nobody closed: at exit
                    # A task asking for more than the cluster has would wait forever.
                    self._short = missing_resources(ray.cluster_resources(), self.options)
                    if self.warm:
                        self._pool = ActorPool(ray, self.warm, self.options)
                    self._remote = ray.remote(call_on_worker).options(**self.options)
        return self._remote

    def _spec(self, tool: RunnableTool) -> dict[str, Any]:
        known = self._specs.get(id(tool))
        if known is None:  # the tool is kept with its spec, so its id is not reused
            known = self._specs[id(tool)] = (tool, portable_spec(tool))
        return known[1]

    async def run(self, tool: RunnableTool, args: Any) -> Any:
        """Run the call as a Ray task; its raw result, or a failed result saying what went wrong."""
        try:
            spec = self._spec(tool)
        except ToolNotPortableError as exc:
            return sandbox_error(str(exc))
        ray = require_ray()
        task = self._task()
        if self._short:
            return sandbox_error(f"'{tool.name}' cannot run on this Ray: it asks for {self._short}")
        pool, slot, actor = self._pool, -1, None
        if pool is not None:
            slot, actor, ref = pool.submit(spec, args)
        else:
            ref = task.remote(spec, args)
        try:
            waits = active_waits()  # in a batch's Ray task: its main thread waits, CPUs freed
            with anyio.fail_after(self.timeout):
                if waits is not None:
                    return await waits.wait(ref)
                return await asyncio.wrap_future(ref.future())
        except TimeoutError:
            self._stop_call(ray, ref, slot, actor)
            return limit_error("timeout", f"the call ran longer than {self.timeout:g} s")
        except ray.exceptions.RayError as exc:
            if pool is not None:
                pool.replace(slot, actor)  # it may be gone
            return sandbox_error(f"the Ray task of '{tool.name}' failed: {_first_line(exc)}")
        except BaseException:  # cancelled by the caller: the task stops too
            self._stop_call(ray, ref, slot, actor)
            raise
        finally:
            if pool is not None:
                pool.done(slot)

    def _stop_call(self, ray: Any, ref: Any, slot: int, actor: Any) -> None:
        if self._pool is not None:
            self._pool.replace(slot, actor)
        else:
            _cancel(ray, ref)

    def close(self) -> None:
        """Shut down the local Ray this runner started (nothing when it connected to one)."""
        stop, self._stop, self._remote = self._stop, None, None
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()
        if stop is not None:
            atexit.unregister(self.close)
            stop()

    async def __aenter__(self) -> RayRunner:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self.options.items())
        return f"RayRunner({shown}, timeout={self.timeout!r})"


def _cancel(ray: Any, ref: Any) -> None:
    with contextlib.suppress(Exception):
        ray.cancel(ref, force=True)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:500]
