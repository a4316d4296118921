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
that session only (python_repl's variables). The fork server and its call processes are in
`forkserver`; running one request in a process, in `executor`.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from typing import Any

from jianmu_bt.sandbox import isolation
from jianmu_bt.sandbox.call_process import ChildProcess
from jianmu_bt.sandbox.cgroups import own_cgroup_hits
from jianmu_bt.sandbox.context import mark_inside_sandbox
from jianmu_bt.sandbox.executor import Executor, encode
from jianmu_bt.sandbox.failures import limit_error, sandbox_error
from jianmu_bt.sandbox.forkserver import ForkServer, ForkServerGone
from jianmu_bt.sandbox.toolspec import ToolNotPortableError, recreate_tool

#: Bootstrap run as `python -I -B -c BOOTSTRAP '<json sys.path>'`: isolated mode ignores PYTHON*
#: variables and the working directory; the parent's import path is added explicitly.
BOOTSTRAP = (
    "import json, sys; sys.path[:0] = [p for p in json.loads(sys.argv[1]) if p not in sys.path]; "
    "from jianmu_bt.sandbox.worker import main; main()"
)
#: Session processes one worker keeps; the least recently used one is ended beyond this.
MAX_SESSIONS = 8
_SLACK = 1 << 16  # bytes a child's reply may carry beyond the output cap (its JSON framing)


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
            encoded = encode(reply)
        except (TypeError, ValueError) as exc:
            return encode({**reply, "raw": {"ok": False, "error": f"Error: {exc}"}})
        cap = int(limits.get("max_output_bytes") or 0)
        if cap and len(encoded) > cap:
            detail = f"the result is {len(encoded):,} bytes, over the {cap:,}-byte limit"
            if isolate and session in self.sessions:  # a limit restarts the session
                self.forks.end(self.sessions.pop(session), status=False)
            return encode({**reply, "raw": limit_error("output", detail), "restart": False})
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
    worker.send(encode(ready))
    for line in in_file:
        try:
            request = json.loads(line)
        except ValueError as exc:
            error = {"ok": False, "error": f"Error: bad request: {exc}"}
            worker.send(encode({"id": None, "raw": error}))
            continue
        worker.send(worker.serve(request))
    os._exit(0)  # no atexit work: threads a tool left behind must not delay the exit


if __name__ == "__main__":
    main()
