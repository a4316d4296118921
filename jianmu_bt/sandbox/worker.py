"""The sandbox worker: the child-process entry point of LocalSandbox and DockerSandbox.

Protocol (JSON lines on stdin/stdout; never pickle):

1. the parent sends one configuration line (limits, isolation steps, workspace);
2. the worker isolates itself (see `isolation`), points its own stdout/stderr at /dev/null so stray
   output cannot corrupt the channel, and answers `{"ready": true, "pid": ..., "applied": {...}}`
   (or `{"ready": false, "error": ...}` and exits);
3. then, per call, a request `{"id", "tool": <spec>, "args", "limits"}` gets a reply
   `{"id", "raw": <JSON raw result>, "restart": bool}`. `restart` asks the parent to replace this
   worker (a limit was hit and the process may be in a bad state). End of input ends the worker.

A process forked by the tool's code inherits the channel; only the worker's own pid may answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import errno
import json
import os
import signal
import sys
from typing import Any

from jianmu_bt.sandbox import isolation
from jianmu_bt.sandbox.cgroups import own_cgroup_hits
from jianmu_bt.sandbox.context import mark_inside_sandbox
from jianmu_bt.sandbox.limits import format_size, limit_error
from jianmu_bt.sandbox.toolspec import ToolNotPortableError, recreate_tool, spec_key

#: Bootstrap run as `python -I -B -c BOOTSTRAP '<json sys.path>'`: isolated mode ignores PYTHON*
#: variables and the working directory; the parent's import path is added explicitly.
BOOTSTRAP = (
    "import json, sys; sys.path[:0] = [p for p in json.loads(sys.argv[1]) if p not in sys.path]; "
    "from jianmu_bt.sandbox.worker import main; main()"
)


def _jsonable(value: Any) -> Any:
    """`json.dumps` default: models, dataclasses, sets, bytes; anything else as its text."""
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", errors="replace")
    return str(value)


def _as_raw(result: Any) -> Any:
    # A ToolResult (duck-typed: the sandbox layer does not import the tool layer).
    if all(hasattr(result, a) for a in ("ok", "output", "error", "to_dict")):
        return {"ok": result.ok, "output": result.output, "error": result.error}
    return result


class Worker:
    """One worker process's state: the channel, the tool cache, the limits."""

    def __init__(self, config: dict[str, Any], out_fd: int) -> None:
        self.config = config
        self.limits: dict[str, Any] = config.get("limits", {})
        self.out_fd = out_fd
        self.pid = os.getpid()
        self.tools: dict[str, Any] = {}
        self.loop = asyncio.new_event_loop()

    def send(self, message: dict[str, Any]) -> None:
        """Write one reply line; a forked copy of the worker exits instead of answering."""
        if os.getpid() != self.pid:
            os._exit(70)
        data = json.dumps(message, default=_jsonable, ensure_ascii=False).encode() + b"\n"
        view = memoryview(data)
        while view:
            view = view[os.write(self.out_fd, view) :]

    def serve(self, request: dict[str, Any]) -> dict[str, Any]:
        """Run one request and build its reply."""
        limits = {**self.limits, **(request.get("limits") or {})}
        if self.config.get("warm"):
            isolation.set_call_cpu_limit(limits.get("cpu_seconds"))
        try:
            raw = self.loop.run_until_complete(self._call(request))
            restart = False
        except MemoryError:
            memory = limits.get("memory_bytes")
            raw = limit_error("memory", f"the call ran out of its {format_size(memory)} of memory")
            restart = True
        except OSError as exc:
            restart = exc.errno == errno.EFBIG
            if restart:
                size = format_size(limits.get("max_file_bytes") or 0)
                raw = limit_error("files", f"a file grew past the {size} limit ({exc})")
            else:
                raw = {"ok": False, "error": f"Error: {type(exc).__name__}: {exc}"}
        except ToolNotPortableError as exc:
            raw, restart = {"ok": False, "error": f"Error: {exc}"}, False
        except BaseException as exc:  # the tool's fault, reported as a result
            raw = {"ok": False, "error": f"Error: {type(exc).__name__}: {exc}"}
            restart = not isinstance(exc, Exception)
        finally:
            if os.getpid() != self.pid:  # a fork of the worker must never get past this point
                os._exit(70)
        reply = {"id": request.get("id"), "raw": raw, "restart": restart}
        if self.config.get("report_hits"):
            reply["hits"] = own_cgroup_hits()
        try:
            encoded = json.dumps(reply, default=_jsonable, ensure_ascii=False)
        except (TypeError, ValueError) as exc:
            return {"id": request.get("id"), "raw": {"ok": False, "error": f"Error: {exc}"}}
        cap = int(limits.get("max_output_bytes") or 0)
        if cap and len(encoded) > cap:
            detail = f"the result is {len(encoded):,} bytes, over the {cap:,}-byte limit"
            reply.update(raw=limit_error("output", detail), restart=False)
            return reply
        return reply

    async def _call(self, request: dict[str, Any]) -> Any:
        spec = request["tool"]
        key = spec_key(spec)
        tool = self.tools.get(key)
        if tool is None:
            tool = self.tools[key] = recreate_tool(spec)
        return _as_raw(await tool.execute_local(request.get("args")))


def _isolate(config: dict[str, Any]) -> dict[str, Any]:
    """Apply the requested isolation steps; returns what was applied (or why not)."""
    applied: dict[str, Any] = {}
    as_root = os.geteuid() == 0
    for procs in config.get("cgroup_procs") or []:
        try:
            with open(procs, "w") as handle:
                handle.write(str(os.getpid()))
            applied["cgroup"] = True
        except OSError as exc:
            applied["cgroup"] = f"could not join the cgroup: {exc}"
    if config.get("network") is False:
        isolation.leave_network(as_root)  # failure is fatal: no-network was asked for
        applied["network"] = "isolated"
    user = config.get("user")
    mount_cfg = config.get("mount")
    if mount_cfg:
        try:
            uid, gid = (user["uid"], user["gid"]) if user else (os.getuid(), os.getgid())
            hidden = isolation.private_mounts(mount_cfg["keep"], uid, gid, mount_cfg["tmp_size"])
            applied["mount"] = hidden
            try:
                isolation.hide_other_processes()
                applied["proc"] = "hidepid"
            except OSError as exc:
                applied["proc"] = f"could not remount /proc: {exc}"
        except OSError as exc:
            applied["mount"] = f"could not build a private mount namespace: {exc}"
    isolation.set_rlimits(config.get("limits", {}), nproc=config.get("nproc"), warm=config["warm"])
    if user:
        keep = (mount_cfg or {}).get("keep", [])
        reachable = all(isolation.can_enter(p, user["uid"], {user["gid"]}) for p in keep)
        if isinstance(applied.get("mount"), list) or reachable:
            isolation.drop_privileges(user["uid"], user["gid"])
            applied["user"] = user["uid"]
        else:
            applied["user"] = "kept: the sandbox user could not reach the Python installation"
    with contextlib.suppress(OSError):
        isolation.prctl(isolation.PR_SET_NO_NEW_PRIVS, 1)
    parent = config.get("parent_pid")
    if parent:
        isolation.prctl(isolation.PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # the parent died before the signal was armed
            os._exit(0)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an over-size write fails with EFBIG instead
    os.chdir(config["workspace"])
    return applied


def main() -> None:
    """Entry point: configure, isolate, announce readiness, then serve requests until EOF."""
    in_file = os.fdopen(os.dup(0), "rb")
    out_fd = os.dup(1)
    config = json.loads(in_file.readline() or b"{}")
    try:
        applied = _isolate(config)
        for spec in config.get("preload") or []:
            recreate_tool(spec)
    except Exception as exc:
        message = {"ready": False, "error": f"{type(exc).__name__}: {exc}"}
        os.write(out_fd, json.dumps(message).encode() + b"\n")
        sys.exit(2)
    mark_inside_sandbox()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    worker = Worker(config, out_fd)
    ready = {"ready": True, "pid": worker.pid, "uid": os.getuid(), "applied": applied}
    if config.get("report_hits"):
        ready["hits"] = own_cgroup_hits()
    worker.send(ready)
    for line in in_file:
        try:
            request = json.loads(line)
        except ValueError as exc:
            worker.send({"id": None, "raw": {"ok": False, "error": f"Error: bad request: {exc}"}})
            continue
        worker.send(worker.serve(request))
    os._exit(0)  # no atexit work: threads a tool left behind must not delay the exit


if __name__ == "__main__":
    main()
