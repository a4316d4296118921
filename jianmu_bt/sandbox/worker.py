"""The sandbox worker: the child-process entry point of LocalSandbox and DockerSandbox.

Protocol (JSON lines; never pickle): the parent sends one configuration line on stdin; the worker
isolates itself (`isolation.apply_config`), moves the channel to private close-on-exec
descriptors (0, 1 and 2 become /dev/null), makes itself non-dumpable, starts its fork server and
answers `{"ready": true, "pid", "helpers", "applied"}` (or `{"ready": false, "error"}`). Then
each request `{"id", "nonce", "tool", "args", "limits", "isolate", "session"}` gets the reply
`{"id", "nonce", "raw", "restart", "keep"}`: id and nonce (unguessable, fresh per call) come back
unchanged; `restart` asks the parent to replace the worker; `keep` are helpers the parent's
clean-up spares with their children. End of input ends the worker.

A trusted call runs in the worker itself (its tools stay imported). An untrusted one (`isolate`;
`isolation.placement` when the request does not say) never does: the fork server, forked from the
worker before anything ran in it, hands it a fresh process that holds nothing but its own socket.
Its code cannot reach the channel (not by fd number, /proc, ptrace or pidfd_getfd: the worker is
non-dumpable), cannot patch the worker, and cannot outlive the call: the process answers once,
then it and its process group are killed. A `session` keeps one such process for the calls of
that session only (python_repl's variables).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import errno
import json
import os
import select
import signal
import socket
import sys
from typing import Any, NoReturn

from jianmu_bt.sandbox import isolation
from jianmu_bt.sandbox.cgroups import own_cgroup_hits
from jianmu_bt.sandbox.context import mark_inside_sandbox
from jianmu_bt.sandbox.limits import format_size, limit_error, sandbox_error
from jianmu_bt.sandbox.process import ChildProcess, pidfd_open
from jianmu_bt.sandbox.toolspec import ToolNotPortableError, recreate_tool, spec_key

#: Bootstrap run as `python -I -B -c BOOTSTRAP '<json sys.path>'`: isolated mode ignores PYTHON*
#: variables and the working directory; the parent's import path is added explicitly.
BOOTSTRAP = (
    "import json, sys; sys.path[:0] = [p for p in json.loads(sys.argv[1]) if p not in sys.path]; "
    "from jianmu_bt.sandbox.worker import main; main()"
)
#: Session processes one worker keeps; the least recently used one is ended beyond this.
MAX_SESSIONS = 8
_SLACK = 1 << 16  # bytes a child's reply may carry beyond the output cap (its JSON framing)


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


def _encode(message: dict[str, Any]) -> bytes:
    return json.dumps(message, default=_jsonable, ensure_ascii=False).encode() + b"\n"


def _as_raw(result: Any) -> Any:
    # A ToolResult (duck-typed: the sandbox layer does not import the tool layer).
    if all(hasattr(result, a) for a in ("ok", "output", "error", "to_dict")):
        return {"ok": result.ok, "output": result.output, "error": result.error}
    return result


class Executor:
    """Runs requests in this process: the tool cache, an event loop, failures as results."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.limits: dict[str, Any] = config.get("limits", {})
        self.pid = os.getpid()
        self.tools: dict[str, Any] = {}
        self.loop: asyncio.AbstractEventLoop | None = None

    def tool(self, spec: dict[str, Any]) -> Any:
        """The tool a spec describes, built once (raises ToolNotPortableError)."""
        key = spec_key(spec)
        if key not in self.tools:
            self.tools[key] = recreate_tool(spec)
        return self.tools[key]

    def execute(self, request: dict[str, Any], per_call_cpu: bool) -> tuple[Any, bool]:
        """(raw result, whether this process should be replaced) of one request."""
        limits = {**self.limits, **(request.get("limits") or {})}
        if per_call_cpu:
            isolation.set_call_cpu_limit(limits.get("cpu_seconds"))
        if self.loop is None:
            self.loop = asyncio.new_event_loop()
        try:
            tool = self.tool(request["tool"])
            raw = _as_raw(self.loop.run_until_complete(tool.execute_local(request.get("args"))))
            return raw, False
        except MemoryError:
            memory = format_size(limits.get("memory_bytes") or 0)
            return limit_error("memory", f"the call ran out of its {memory} of memory"), True
        except OSError as exc:
            if exc.errno == errno.EFBIG:
                size = format_size(limits.get("max_file_bytes") or 0)
                return limit_error("files", f"a file grew past the {size} limit ({exc})"), True
            return {"ok": False, "error": f"Error: {type(exc).__name__}: {exc}"}, False
        except ToolNotPortableError as exc:
            return {"ok": False, "error": f"Error: {exc}"}, False
        except BaseException as exc:  # the tool's fault, reported as a result
            error = {"ok": False, "error": f"Error: {type(exc).__name__}: {exc}"}
            return error, not isinstance(exc, Exception)
        finally:
            if os.getpid() != self.pid:  # a fork made by the tool must never get past here
                os._exit(70)


class ForkServerGone(Exception):
    """The fork server stopped answering (the call's code may have killed it)."""


class ForkServer:
    """A clean copy of the worker, forked before it ran anything, that forks call processes.

    It keeps one call process forked ahead (a spare, holding nothing but its own socket), so a
    call does not wait for a fork, and it reaps the processes the worker is done with.
    """

    def __init__(self, config: dict[str, Any]) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:
            ours.close()
            _serve_forks(theirs, config, parent)
        theirs.close()
        self.pid, self.ctl, self.pidfd = pid, ours, pidfd_open(pid)

    def _ask(self, message: dict[str, Any], answer: bool = True) -> tuple[dict, list[int]]:
        try:
            self.ctl.send(_encode(message))
            if not answer:
                return {}, []
            data, fds, _, _ = socket.recv_fds(self.ctl, 1 << 16, 1)
        except OSError as exc:
            raise ForkServerGone(str(exc)) from exc
        if not data:
            raise ForkServerGone("the fork server closed its channel")
        return json.loads(data), fds

    @property
    def alive(self) -> bool:
        """Whether the fork server still runs (its pidfd turns readable when it ends)."""
        return self.pidfd is None or not select.select([self.pidfd], [], [], 0)[0]

    def spawn(self, spec: dict[str, Any]) -> ChildProcess:
        """A fresh call process for a call of the tool `spec` describes."""
        reply, fds = self._ask({"spawn": spec})
        if "pid" not in reply or len(fds) != 1:
            for fd in fds:
                os.close(fd)
            raise OSError(reply.get("error") or "the fork server could not fork")
        return ChildProcess(int(reply["pid"]), socket.socket(fileno=fds[0]))

    def end(self, child: ChildProcess, status: bool) -> tuple[int | None, float]:
        """Kill a call process and its group; with `status`, (exit code, CPU s) once reaped."""
        for kill in (os.killpg, os.kill):
            with contextlib.suppress(OSError):
                kill(child.pid, signal.SIGKILL)
        child.close()
        reply, _ = self._ask({"wait" if status else "reap": child.pid}, answer=status)
        return reply.get("code"), float(reply.get("cpu") or 0.0)


def _fork_call(config: dict[str, Any]) -> tuple[int, socket.socket]:
    """Fork a call process that waits for its first request; (pid, the worker's socket)."""
    ours, theirs = socket.socketpair()
    parent = os.getpid()
    try:
        pid = os.fork()
    except OSError:
        ours.close()
        theirs.close()
        raise
    if pid == 0:
        _serve_call(theirs.detach(), config, parent)
    theirs.close()
    return pid, ours


def _reaped(pid: int, options: int = 0) -> bool:
    """Whether the child `pid` has ended and is now reaped (or was already)."""
    try:
        return os.waitpid(pid, options)[0] != 0
    except ChildProcessError:
        return True


def _serve_forks(ctl: socket.socket, config: dict[str, Any], parent: int) -> NoReturn:
    """The fork server: hand out a call process per `spawn`; reap per `reap` and `wait`."""
    try:
        isolation.close_fds_except({ctl.fileno()})
        isolation.die_with_parent(parent)
        imported: set[str] = set()
        spare: tuple[int, socket.socket] | None = None
        exited: set[int] = set()  # ended by the worker: reaped when they are gone, not waited for
        while data := ctl.recv(1 << 16):
            message = json.loads(data)
            exited = {pid for pid in exited if not _reaped(pid, os.WNOHANG)}
            if "reap" in message:
                exited.add(int(message["reap"]))
            elif "wait" in message:
                try:
                    _, status, usage = os.wait4(int(message["wait"]), 0)
                    code, cpu = os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime
                except ChildProcessError:
                    code, cpu = None, 0.0
                ctl.send(json.dumps({"code": code, "cpu": cpu}).encode())
            elif "spawn" in message:
                if spec_key(message["spawn"]) not in imported:  # import once; later forks have it
                    imported.add(spec_key(message["spawn"]))
                    with contextlib.suppress(Exception):  # the call process reports the error
                        recreate_tool(message["spawn"])
                    if spare is not None:  # forked before the import: replace it
                        os.kill(spare[0], signal.SIGKILL)
                        exited.add(spare[0])
                        spare[1].close()
                        spare = None
                if spare is not None and _reaped(spare[0], os.WNOHANG):
                    spare[1].close()  # killed while it waited: fork another
                    spare = None
                try:
                    handed, spare = spare or _fork_call(config), None
                except OSError as exc:
                    ctl.send(json.dumps({"error": f"{type(exc).__name__}: {exc}"}).encode())
                    continue
                reply = json.dumps({"pid": handed[0]}).encode()
                socket.send_fds(ctl, [reply], [handed[1].fileno()])
                handed[1].close()
                if config.get("warm"):  # ready for the next call (a cold worker has none)
                    with contextlib.suppress(OSError):
                        spare = _fork_call(config)
    finally:
        os._exit(0)


def _warm_up(loop: asyncio.AbstractEventLoop) -> None:
    """Start the tool layer's thread pool while the process waits for its call (that costs a
    few ms, the call's own sync work then does not). Only when the fork server already loaded
    that layer: the sandbox layer never imports it."""
    run_blocking = getattr(sys.modules.get("jianmu_bt.tools.blocking"), "run_blocking", None)
    if run_blocking is not None:
        with contextlib.suppress(Exception):
            loop.run_until_complete(run_blocking(int))


def _serve_call(fd: int, config: dict[str, Any], parent: int) -> NoReturn:
    """A call process: answer one request (or, for a session, each request) on socket `fd`."""
    try:
        isolation.close_fds_except({fd})
        isolation.die_with_parent(parent)
        with contextlib.suppress(OSError):
            os.setpgid(0, 0)  # what the call starts in its group ends with it
        sock = socket.socket(fileno=fd)
        executor = Executor(config)
        executor.loop = asyncio.new_event_loop()
        _warm_up(executor.loop)
        session = False
        for line in sock.makefile("rb"):
            request = json.loads(line)
            session = session or bool(request.get("session"))
            if not session:
                isolation.set_call_rlimits({**executor.limits, **(request.get("limits") or {})})
            raw, restart = executor.execute(request, per_call_cpu=session)
            try:
                sock.sendall(_encode({"raw": raw, "restart": restart}))
            except (TypeError, ValueError) as exc:
                sock.sendall(_encode({"raw": {"ok": False, "error": f"Error: {exc}"}}))
            if not session:
                break
    finally:
        os._exit(0)


class Worker:
    """One worker process: the channel, trusted calls in place, untrusted ones in children."""

    def __init__(self, config: dict[str, Any], out_fd: int, forks: ForkServer) -> None:
        self.config = config
        self.out_fd = out_fd
        self.forks = forks
        self.pid = os.getpid()
        self.executor = Executor(config)
        self.sessions: dict[str, ChildProcess] = {}
        # A container's worker (DockerSandbox: no parent_pid, its parent the namespace's init)
        # sweeps its namespace after each call; LocalSandbox sweeps its cgroup from outside.
        self.in_container = "parent_pid" not in config and os.getppid() == 1

    def send(self, data: bytes) -> None:
        """Write one reply line; a forked copy of the worker exits instead of answering."""
        if os.getpid() != self.pid:
            os._exit(70)
        view = memoryview(data)
        while view:
            view = view[os.write(self.out_fd, view) :]

    def _placement(self, request: dict[str, Any]) -> tuple[bool, str | None]:
        if "isolate" in request:  # LocalSandbox says; DockerSandbox leaves it to the worker
            return bool(request["isolate"]), request.get("session")
        try:
            tool = self.executor.tool(request["tool"])
        except (ToolNotPortableError, KeyError, TypeError):
            return False, None  # the error is reported by running it here
        return isolation.placement(tool, self.config.get("isolate", "untrusted"))

    def serve(self, request: dict[str, Any]) -> bytes:
        """Run one request and encode its reply line."""
        limits = {**self.executor.limits, **(request.get("limits") or {})}
        isolate, session = self._placement(request)
        if isolate:
            try:
                raw = self._in_child(request, session, limits)
                restart = not self.forks.alive  # the call's code killed it: start afresh
            except ForkServerGone as exc:
                raw, restart = sandbox_error(f"the fork server is gone ({exc})"), True
            except OSError as exc:  # no process could be forked (the process limit, memory)
                raw, restart = sandbox_error(f"cannot start a process for the call: {exc}"), False
        else:
            raw, restart = self.executor.execute(request, bool(self.config.get("warm")))
        if self.in_container:
            isolation.sweep_namespace({1, self.pid, self.forks.pid}, parents={self.forks.pid})
        reply = {"id": request.get("id"), "raw": raw, "restart": restart}
        if "nonce" in request:
            reply["nonce"] = request["nonce"]
        reply["keep"] = [self.forks.pid]  # it and its children (spare, sessions) stay
        if self.config.get("report_hits"):
            reply["hits"] = own_cgroup_hits()
        try:
            encoded = _encode(reply)
        except (TypeError, ValueError) as exc:
            return _encode({**reply, "raw": {"ok": False, "error": f"Error: {exc}"}})
        cap = int(limits.get("max_output_bytes") or 0)
        if cap and len(encoded) > cap:
            detail = f"the result is {len(encoded):,} bytes, over the {cap:,}-byte limit"
            if isolate and session in self.sessions:  # a limit restarts the session
                self.forks.end(self.sessions.pop(session), status=False)
            return _encode({**reply, "raw": limit_error("output", detail), "restart": False})
        return encoded

    def _in_child(self, request: dict[str, Any], session: str | None, limits: dict) -> Any:
        """Run a request in a fresh call process (or its session's); returns the raw result."""
        child = self.sessions.pop(session, None) if session else None
        if child is None:
            child = self.forks.spawn(request["tool"])
        cap = int(limits.get("max_output_bytes") or 1 << 30) + _SLACK
        forward = {key: request.get(key) for key in ("tool", "args", "limits")}
        answer = child.ask({**forward, "session": bool(session)}, cap)
        raw = answer.get("raw") if answer is not None else None
        limit_hit = isinstance(raw, dict) and raw.get("limit")
        if session and answer is not None and not answer.get("restart") and not limit_hit:
            self.sessions[session] = child  # kept for the session's next call, and only that
            while len(self.sessions) > MAX_SESSIONS:
                self.forks.end(self.sessions.pop(next(iter(self.sessions))), status=False)
            return raw
        code, cpu = self.forks.end(child, status=answer is None)
        return raw if answer is not None else _ended(code, cpu, limits)


def _ended(code: int | None, cpu: float, limits: dict[str, Any]) -> dict[str, Any]:
    """The result of a call process that ended without answering."""
    sig = -code if code is not None and code < 0 else None
    cpu_limit = limits.get("cpu_seconds")
    if sig == signal.SIGXCPU or (sig == signal.SIGKILL and cpu_limit and cpu >= cpu_limit):
        return limit_error("cpu", f"the call used more than {cpu_limit} s of CPU time")
    if sig == signal.SIGXFSZ:
        return limit_error("files", "a file grew past the size limit")
    how = f"signal {signal.Signals(sig).name}" if sig else f"exit status {code}"
    return sandbox_error(f"the call's process ended without a result ({how})")


def main() -> None:
    """Entry point: configure, isolate, announce readiness, then serve requests until EOF."""
    in_file = os.fdopen(os.dup(0), "rb")  # os.dup: close-on-exec, and away from 0, 1 and 2
    out_fd = os.dup(1)
    config = json.loads(in_file.readline() or b"{}")
    try:
        applied = isolation.apply_config(config)
        for spec in config.get("preload") or []:
            recreate_tool(spec)
        mark_inside_sandbox()
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.close(null)
        isolation.forbid_tracing()
        forks = ForkServer(config)  # now, while this process is clean and single-threaded
    except Exception as exc:
        message = {"ready": False, "error": f"{type(exc).__name__}: {exc}"}
        os.write(out_fd, json.dumps(message).encode() + b"\n")
        sys.exit(2)
    worker = Worker(config, out_fd, forks)
    ready = {"ready": True, "pid": worker.pid, "uid": os.getuid(), "helpers": [forks.pid]}
    ready["applied"] = applied
    if config.get("report_hits"):
        ready["hits"] = own_cgroup_hits()
    worker.send(_encode(ready))
    for line in in_file:
        try:
            request = json.loads(line)
        except ValueError as exc:
            error = {"ok": False, "error": f"Error: bad request: {exc}"}
            worker.send(_encode({"id": None, "raw": error}))
            continue
        worker.send(worker.serve(request))
    os._exit(0)  # no atexit work: threads a tool left behind must not delay the exit


if __name__ == "__main__":
    main()
