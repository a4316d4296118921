"""The fork server: a clean copy of the sandbox worker that forks one process per untrusted call.

The worker forks it right after isolating itself, before it ran any tool, so what it forks is
clean. For each untrusted call it forks a *call process* that closes every descriptor but its own
socket to the worker, dies with the fork server, joins a process group of its own, tightens the
call's rlimits, answers one request (or, for a python_repl session, each request of that
session) and is then killed with its group by the worker (`ForkServer.end`). One call process is
forked ahead (the spare), so a call does not wait for a fork. The fork server also reaps the call
processes the worker is done with.

Protocol on the SOCK_SEQPACKET control socket (one JSON message per packet): `{"spawn": spec}` is
answered with `{"pid"}` and the call process's socket (SCM_RIGHTS) or `{"error"}`; `{"wait": pid}`
with `{"code", "cpu"}` once that process is reaped; `{"reap": pid}` gets no answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import select
import signal
import socket
import sys
from typing import Any, NoReturn

from jianmu_bt.sandbox import isolation
from jianmu_bt.sandbox.call_process import ChildProcess, pidfd_open
from jianmu_bt.sandbox.executor import Executor, encode
from jianmu_bt.sandbox.toolspec import recreate_tool, spec_key


class ForkServerGone(Exception):
    """The fork server stopped answering (the call's code may have killed it)."""


class ForkServer:
    """The worker's handle on its fork server (see the module doc)."""

    def __init__(self, config: dict[str, Any]) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:
            ours.close()
            _serve_forks(theirs, config, parent)
        theirs.close()
        self.pid, self.ctl, self.pidfd = pid, ours, pidfd_open(pid)

    def _ask(
        self, message: dict[str, Any], answer: bool = True
    ) -> tuple[dict[str, Any], list[int]]:
        try:
            self.ctl.send(encode(message))
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
                sock.sendall(encode({"raw": raw, "restart": restart}))
            except (TypeError, ValueError) as exc:
                sock.sendall(encode({"raw": {"ok": False, "error": f"Error: {exc}"}}))
            if not session:
                break
    finally:
        os._exit(0)
