"""LocalSandbox: runs each tool call in an isolated child process on this machine.

```python
async with LocalSandbox(SandboxLimits(timeout=5), warm=True) as sandbox:
    result = await my_tool.call({"x": 1}, runner=sandbox)
```

The child re-creates the tool by import path (`toolspec`), runs `await tool.execute_local(args)`
and answers in JSON. It has its own working directory (the workspace), an allow-listed
environment, rlimits, its own session and process group, a private cgroup where the machine
offers one, and no network unless `network=True`. A wall-clock timeout or a cancellation kills
the whole group; every failure comes back as a result whose error names the limit that was hit.

`warm=True` keeps one worker for many calls (calls are serialised); it is replaced after a limit
is hit and killed by `aclose()`. The default starts a fresh worker per call. Untrusted calls
(python_repl, bash, tools marked `sandbox_untrusted`; see `isolate_calls`) never run in the
worker itself: each gets a fresh process forked from a clean copy of it, which cannot reach the
channel, so no call can forge another's result or leave anything running into the next one.
Every reply must carry its call's id and a fresh random nonce, or the worker is replaced.
`isolation` states what holds on this machine; see docs/sandboxes.md.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import sys
import tempfile
import weakref
from collections.abc import Iterable, Mapping
from typing import Any

import anyio
import anyio.to_thread

from jianmu_bt.sandbox.base import Sandbox, SandboxCall, SandboxUnavailableError
from jianmu_bt.sandbox.cgroups import CgroupSet
from jianmu_bt.sandbox.failures import limit_error, sandbox_error
from jianmu_bt.sandbox.isolation import ISOLATE_POLICIES, count_user_tasks, placement
from jianmu_bt.sandbox.limits import WORKER_TASKS, SandboxLimits
from jianmu_bt.sandbox.plan import SECRET_PATTERNS, IsolationPlan, IsolationReport
from jianmu_bt.sandbox.process import WorkerProcess
from jianmu_bt.sandbox.worker import BOOTSTRAP

logger = logging.getLogger(__name__)

#: Environment variables passed through by default; everything else is dropped.
DEFAULT_ENV_ALLOW: tuple[str, ...] = ("LANG", "LC_ALL", "LC_CTYPE", "TZ", "TERM")


class _Holder:
    """What the finaliser needs without keeping the sandbox alive."""

    def __init__(self, workers: dict[bool, WorkerProcess]) -> None:
        self.workers = workers  # the sandbox's warm workers
        self.workspace_owned: str | None = None

    def close(self) -> None:
        while self.workers:
            self.workers.popitem()[1].kill()
        if self.workspace_owned:
            shutil.rmtree(self.workspace_owned, ignore_errors=True)
            self.workspace_owned = None


class LocalSandbox(Sandbox[WorkerProcess]):
    """A ToolRunner that runs every call in a sandboxed child process (see the module doc).

    Args:
        limits: a SandboxLimits (or a dict of its fields); defaults apply otherwise.
        workspace: the child's working directory; a private temporary one when None (removed
            by `aclose`). A given directory is made writable for the sandbox user, not emptied.
        warm: keep one long-lived worker for many calls instead of one process per call.
        network: True shares the host's network; by default (False) the child runs in a new
            network namespace with no interfaces.
        user: the user the child runs as: "auto" (nobody when we are root, else ourselves), a
            name or uid (root only), or None to keep the current user.
        env: extra environment variables for the child (values given here are visible to it).
        env_allow: names of this process's variables passed through (secrets never should be).
        tmp_size: size of the private /tmp, /var/tmp and /dev/shm (when we are root).
        start_timeout: seconds a worker may take to start, on top of each call's timeout.
        python: the interpreter for the child; this one by default.
        isolate_calls: which calls run in a fresh process of their own instead of the worker:
            "untrusted" (the default: tools marked `sandbox_untrusted = True`, else those with
            the "exec" effect tag, such as python_repl and bash), "all", or "none" (every call
            runs in the worker; only for code you trust, since a call can then tamper with the
            worker and forge the results of later calls).
        secret_patterns: files never readable in the code directories bound in as root
            (`plan.SECRET_PATTERNS`: .env, keys, ...; covered with empty ones); `()` shows them.
    """

    # A worker's private cgroup counts both limits (DockerSandbox learns of an out-of-memory
    # kill from the container's state instead).
    watched_hits = ("memory", "processes")

    def __init__(
        self,
        limits: SandboxLimits | Mapping[str, Any] | None = None,
        *,
        workspace: str | os.PathLike[str] | None = None,
        warm: bool = False,
        network: bool = False,
        user: str | int | None = "auto",
        env: Mapping[str, str] | None = None,
        env_allow: Iterable[str] = DEFAULT_ENV_ALLOW,
        tmp_size: str = "64m",
        start_timeout: float = 30.0,
        python: str | None = None,
        isolate_calls: str = "untrusted",
        secret_patterns: Iterable[str] = SECRET_PATTERNS,
    ) -> None:
        if isolate_calls not in ISOLATE_POLICIES:
            raise ValueError(
                f"LocalSandbox(isolate_calls={isolate_calls!r}): choose one of {ISOLATE_POLICIES}"
            )
        super().__init__(limits, warm=warm, network=network)
        self.isolate_calls = isolate_calls
        self.secret_patterns = tuple(secret_patterns)
        self.plan = IsolationPlan.for_machine(user, network)
        self.python = python or sys.executable
        self.tmp_size = tmp_size
        self.start_timeout = start_timeout
        self._holder = _Holder(self._workers)
        self._finalizer = weakref.finalize(self, _Holder.close, self._holder)
        if workspace is None:
            self.workspace = tempfile.mkdtemp(prefix="jianmu-ws-")
            self._holder.workspace_owned = self.workspace
        else:
            self.workspace = os.path.realpath(workspace)
            os.makedirs(self.workspace, exist_ok=True)
        if self.plan.user is not None:
            os.chown(self.workspace, self.plan.user[0], self.plan.user[1])
        self._env = self._child_env(env or {}, env_allow)
        self._report: IsolationReport | None = None
        self._warned = False

    # -- public API -------------------------------------------------------------------------

    async def start(self) -> IsolationReport:
        """Start the warm worker now (instead of on the first call); returns the isolation report.

        Raises SandboxUnavailableError (a RuntimeError) when the worker cannot start.
        """
        async with self._lock:
            current = self._workers.get(self.network)
            if current is None or not current.usable:
                if current is not None:
                    await current.akill()
                worker = await self._start_worker(self.limits, warm=self.warm, online=self.network)
                if not self.warm:
                    await worker.akill()
                    return self.isolation
                self._workers[self.network] = worker
        return self.isolation

    @property
    def isolation(self) -> IsolationReport:
        """What this sandbox isolates here (what was planned, until a worker has started)."""
        if self._report is None:
            planned: dict[str, Any] = {"network": "isolated" if not self.network else None}
            if self.plan.user:
                planned.update(user=self.plan.user[0], mount=[], cgroup=True)
            return IsolationReport.build(self.plan, planned, None)
        return self._report

    @property
    def worker_pid(self) -> int | None:
        """The pid of the warm worker (of the sandbox's own network setting), when one runs."""
        worker = self._workers.get(self.network)
        return worker.pid if worker is not None and worker.usable else None

    def __repr__(self) -> str:
        mode = "warm" if self.warm else "cold"
        return f"LocalSandbox({mode}, workspace={self.workspace!r}, limits={self.limits!r})"

    # -- workers ----------------------------------------------------------------------------

    def _child_env(self, extra: Mapping[str, str], allow: Iterable[str]) -> dict[str, str]:
        path = [
            os.path.dirname(os.path.realpath(self.python)),
            "/usr/local/bin",
            "/usr/bin",
            "/bin",
        ]
        env = {name: os.environ[name] for name in allow if name in os.environ}
        env.update(
            PATH=":".join(dict.fromkeys(path)),
            HOME=self.workspace,
            TMPDIR="/tmp" if self.plan.private_mounts else self.workspace,
            PYTHONDONTWRITEBYTECODE="1",
        )
        env.update({str(k): str(v) for k, v in extra.items()})
        return env

    def _config(
        self, limits: SandboxLimits, warm: bool, cgroup: CgroupSet | None, network: bool
    ) -> dict[str, Any]:
        plan = self.plan
        nproc = None
        if cgroup is None and limits.max_processes and (plan.user or not plan.as_root):
            uid = plan.user[0] if plan.user else os.geteuid()
            nproc = count_user_tasks(uid) + limits.max_processes + WORKER_TASKS
        mount = plan.mount_config(self.workspace, self.tmp_size, self.secret_patterns)
        return {
            "limits": limits.model_dump(),
            "warm": warm,
            "cgroup_procs": cgroup.procs_files if cgroup else [],
            "network": network,
            "mount": mount,
            "user": {"uid": plan.user[0], "gid": plan.user[1]} if plan.user else None,
            "nproc": nproc,
            "workspace": self.workspace,
            "parent_pid": os.getpid(),
        }

    async def _start_worker(
        self, limits: SandboxLimits, *, warm: bool, online: bool
    ) -> WorkerProcess:
        pids_max = limits.max_processes + WORKER_TASKS if limits.max_processes else None
        cgroup, reason = CgroupSet.create(pids_max, limits.memory_bytes, tag=self.id)
        argv = [self.python, "-I", "-B", "-c", BOOTSTRAP, json.dumps(sys.path)]
        try:
            config = self._config(limits, warm, cgroup, online)
            worker = WorkerProcess(argv, self._env, config, cgroup)
        except OSError as exc:
            detail = f"cannot start the worker {self.python!r}: {exc}"
            raise SandboxUnavailableError(detail) from exc
        try:
            with anyio.fail_after(self.start_timeout):
                ready = await worker.start()
        except (RuntimeError, TimeoutError) as exc:
            await worker.akill()
            detail = str(exc) or f"the worker did not start in {self.start_timeout}s"
            raise SandboxUnavailableError(detail) from exc
        except BaseException:
            await worker.akill()
            raise
        if online != self.network:  # a call's own offline worker: not what the sandbox gives
            return worker
        self._report = IsolationReport.build(self.plan, ready.get("applied", {}), reason or None)
        if self._report.warnings and not self._warned:
            self._warned = True
            logger.warning("LocalSandbox isolation on this machine:\n%s", self._report.describe())
        return worker

    def _placement(self, call: SandboxCall) -> dict[str, Any]:
        isolate, session = placement(call.tool, self.isolate_calls)
        return {"isolate": isolate, "session": session}

    async def _retire(self, worker: WorkerProcess) -> None:
        await worker.akill()

    async def _close(self, worker: WorkerProcess) -> None:
        await worker.akill()

    async def _settle(self, worker: WorkerProcess, reply: dict[str, Any]) -> None:
        keep = [pid for pid in reply.get("keep") or () if isinstance(pid, int)]
        await worker.asweep(keep)

    async def _release(self) -> None:
        owned, self._holder.workspace_owned = self._holder.workspace_owned, None
        if owned:
            await anyio.to_thread.run_sync(shutil.rmtree, owned, True)

    async def _died(
        self, worker: WorkerProcess, before: Mapping[str, int], limits: SandboxLimits
    ) -> Any:
        sig = worker.exit_signal()
        cpu = limits.cpu_seconds
        if sig == signal.SIGXCPU or (sig == signal.SIGKILL and cpu and worker.cpu_used >= cpu):
            return limit_error("cpu", f"the call used more than {cpu} s of CPU time")
        if sig == signal.SIGXFSZ:
            return limit_error("files", "a file grew past the size limit")
        died = (
            f"signal {signal.Signals(sig).name}" if sig else f"exit status {worker.proc.returncode}"
        )
        raw = sandbox_error(f"the worker died unexpectedly ({died})")
        return self._with_hits(raw, worker, before, limits)
