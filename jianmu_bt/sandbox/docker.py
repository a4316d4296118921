"""DockerSandbox: the LocalSandbox contract in a container, through the docker SDK.

```python
async with DockerSandbox("python:3.11-slim", SandboxLimits(timeout=10)) as sandbox:
    result = await my_tool.call({"x": 1}, runner=sandbox)
```

Each call (or, with `warm=True`, each worker) is a container created with: the configured image,
no network (`network_mode="none"`) unless `network=True` and the call does not ask for none (its
limits' `network`: bash and python_repl ask for none unless built with `network=True`), memory
(no swap), CPU and pids limits, a read-only root file system with a private /tmp and the workspace
mounted writable at /workspace, a non-root user, all capabilities dropped and no-new-privileges.
The worker inside is the same JSON-lines worker as LocalSandbox's, spoken to over the container's
attached stdin and stdout. The container is removed after the call, also when the call times out
or is cancelled.

The init (PID 1) holds those pipes too, open to its user through `/proc/1/fd`: with a numeric
`user` (the default) the container starts as root with only CAP_SETUID and CAP_SETGID and the
worker switches to `user` before it runs anything, so the init stays out of reach. A reply
without its request's id and fresh random nonce, or output beyond it, replaces the container.

The image needs Python with jianmu-bt's dependencies. With `share_code=True` (the default) the
top-level packages and modules this process has imported from outside its Python installation
(jianmu_bt, your tool modules; not the project directory around them) are mounted read-only at
the same paths, so the container runs the same version of the tools. Secret files
(`plan.SECRET_PATTERNS`: .env, keys, credential files, .ssh/, .aws/, ...) inside anything
mounted, the workspace included, are covered with empty read-only ones (see `plan.MountPlan`).
The docker SDK is imported lazily; without it, or without a reachable engine, every call returns
an error that says so.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import weakref
from collections.abc import Iterable, Mapping
from typing import Any

import anyio
import anyio.to_thread

from jianmu_bt.sandbox.base import Sandbox, SandboxCall, SandboxUnavailableError
from jianmu_bt.sandbox.docker_channel import AttachChannel
from jianmu_bt.sandbox.failures import format_size, limit_error, sandbox_error
from jianmu_bt.sandbox.limits import WORKER_TASKS, SandboxLimits
from jianmu_bt.sandbox.plan import SECRET_PATTERNS, MountPlan, SecretScanError, shared_code_roots
from jianmu_bt.sandbox.worker import BOOTSTRAP

WORKSPACE = "/workspace"


def _numeric_user(user: str) -> tuple[int, int] | None:
    """(uid, gid) of a "uid[:gid]" user other than root, which the worker switches to; else None."""
    uid, _, gid = user.partition(":")
    if uid.isdigit() and int(uid) != 0 and (gid.isdigit() or not gid):
        return int(uid), int(gid or uid)
    return None


def _docker_module() -> Any:
    try:
        import docker
    except ImportError as exc:
        raise SandboxUnavailableError(
            "DockerSandbox needs the docker SDK: pip install 'jianmu-bt[docker]'"
        ) from exc
    return docker


class DockerSandbox(Sandbox[AttachChannel]):
    """A ToolRunner that runs every call in a Docker container (see the module doc).

    Args:
        image: the image to run (must contain Python with jianmu-bt's dependencies).
        limits: a SandboxLimits (or a dict of its fields).
        workspace: host directory mounted at /workspace; a private temporary one when None.
        warm: keep one container for many calls (replaced after a limit is hit).
        network: True gives the container the default bridge network; off by default. A call
            whose limits say `network=False` (bash, python_repl by default) stays offline.
        user: the sandbox user ("uid:gid"), never root by default. Numbers: the worker switches
            to it from root (see the module doc); a name: the whole container runs as it.
        python: the interpreter inside the image.
        share_code: mount the imported code read-only (see the module doc).
        secret_patterns: names never shared (`plan.SECRET_PATTERNS`); `()` shares them.
        env: environment variables for the container (nothing else is passed).
        tmp_size: size of the container's private /tmp.
        docker_host: the engine's URL; DOCKER_HOST or the default socket when None.
        start_timeout: seconds a container may take to start, on top of each call's timeout.
    """

    worker_noun = "container"

    def __init__(
        self,
        image: str = "python:3.11-slim",
        limits: SandboxLimits | Mapping[str, Any] | None = None,
        *,
        workspace: str | os.PathLike[str] | None = None,
        warm: bool = False,
        network: bool = False,
        user: str = "65534:65534",
        python: str = "python3",
        share_code: bool = True,
        secret_patterns: Iterable[str] = SECRET_PATTERNS,
        env: Mapping[str, str] | None = None,
        tmp_size: str = "64m",
        docker_host: str | None = None,
        start_timeout: float = 60.0,
    ) -> None:
        super().__init__(limits, warm=warm, network=network)
        self.image = image
        self.user = user
        self.python = python
        self.share_code = share_code
        self.secret_patterns = tuple(secret_patterns)
        self.env = {
            "HOME": WORKSPACE,
            "TMPDIR": "/tmp",
            **{k: str(v) for k, v in (env or {}).items()},
        }
        self.tmp_size = tmp_size
        self._switch_to = _numeric_user(user)
        self.docker_host = docker_host
        self.start_timeout = start_timeout
        self._owned_workspace = workspace is None
        self.workspace = (
            tempfile.mkdtemp(prefix="jianmu-dws-") if workspace is None else str(workspace)
        )
        os.makedirs(self.workspace, exist_ok=True)
        if self._owned_workspace:  # removed by aclose, or when the sandbox is collected
            self._cleanup = weakref.finalize(self, shutil.rmtree, self.workspace, True)
        self._prepare_workspace()
        self._client: Any = None

    # -- public API -------------------------------------------------------------------------

    async def check(self) -> str:
        """The engine's version; raises SandboxUnavailableError when it cannot be used."""
        client = await self._get_client()
        version = await anyio.to_thread.run_sync(client.version)
        return str(version.get("Version"))

    def __repr__(self) -> str:
        return f"DockerSandbox({self.image!r}, warm={self.warm}, network={self.network})"

    # -- containers -------------------------------------------------------------------------

    def _prepare_workspace(self) -> None:
        uid, _, gid = self.user.partition(":")
        if os.geteuid() == 0 and uid.isdigit():
            os.chown(self.workspace, int(uid), int(gid or uid))
        else:
            os.chmod(self.workspace, 0o777)  # the container user is not us

    async def _get_client(self) -> Any:
        if self._client is not None:
            return self._client
        docker = _docker_module()
        where = self.docker_host or os.environ.get("DOCKER_HOST") or "the default socket"

        def connect() -> Any:
            if self.docker_host:
                client = docker.DockerClient(base_url=self.docker_host, timeout=30)
            else:
                client = docker.from_env(timeout=30)
            client.ping()
            return client

        try:
            self._client = await anyio.to_thread.run_sync(connect)
        except Exception as exc:
            raise SandboxUnavailableError(
                f"no Docker engine is reachable at {where}: {type(exc).__name__}: {exc}"
            ) from exc
        return self._client

    def mount_plan(self) -> MountPlan:
        """What a container of this sandbox sees of the host (code, workspace, covered secrets).

        Raises SecretScanError when the workspace is itself a secret place or too large to check.
        """
        code = shared_code_roots() if self.share_code else []
        return MountPlan.build(
            self.workspace, target=WORKSPACE, code=code, patterns=self.secret_patterns
        )

    def _create_kwargs(self, limits: SandboxLimits, network: bool = False) -> dict[str, Any]:
        plan = self.mount_plan()
        kwargs: dict[str, Any] = {
            "command": [self.python, "-I", "-B", "-c", BOOTSTRAP, json.dumps(plan.python_path)],
            "stdin_open": True,
            # Not PID 1: a namespace's init ignores signals it has no handler for (SIGXCPU).
            "init": True,
            "tty": False,
            "user": "0:0" if self._switch_to else self.user,
            "working_dir": WORKSPACE,
            "environment": self.env,
            "network_mode": "bridge" if network else "none",
            "read_only": True,
            "tmpfs": {"/tmp": f"rw,nosuid,nodev,size={self.tmp_size},mode=1777"},
            "mounts": [mount.to_docker() for mount in plan.mounts],
            "cap_drop": ["ALL"],
            "cap_add": ["SETUID", "SETGID"] if self._switch_to else [],
            "security_opt": ["no-new-privileges"],
            "labels": {"jianmu.sandbox": self.id},
            "log_config": {"type": "none", "config": {}},
        }
        if limits.memory_bytes:
            kwargs.update(mem_limit=limits.memory_bytes, memswap_limit=limits.memory_bytes)
        if limits.max_processes:
            kwargs["pids_limit"] = limits.max_processes + WORKER_TASKS
        if limits.cpus:
            kwargs["nano_cpus"] = int(limits.cpus * 1e9)
        return kwargs

    async def _start_worker(
        self, limits: SandboxLimits, *, warm: bool, online: bool
    ) -> AttachChannel:
        client = await self._get_client()
        try:  # walking the mounted directories for secrets may take a moment: not on the loop
            kwargs = await anyio.to_thread.run_sync(self._create_kwargs, limits, online)
        except SecretScanError as exc:
            raise SandboxUnavailableError(f"cannot plan the container's mounts: {exc}") from exc
        docker = _docker_module()

        def create() -> Any:
            try:
                return client.containers.create(self.image, **kwargs)
            except docker.errors.ImageNotFound as exc:
                raise SandboxUnavailableError(
                    f"image {self.image!r} is not on the engine (DockerSandbox never pulls; "
                    f"run `docker pull {self.image}` or build it): {exc}"
                ) from exc

        try:
            with anyio.fail_after(self.start_timeout):
                container = await anyio.to_thread.run_sync(create)
        except TimeoutError as exc:
            raise SandboxUnavailableError(
                f"creating a container took over {self.start_timeout}s"
            ) from exc
        config = {
            "limits": limits.model_dump(),
            "warm": warm,
            "workspace": WORKSPACE,
            "report_hits": True,
        }
        if self._switch_to:
            config["user"] = dict(zip(("uid", "gid"), self._switch_to, strict=True))
        channel = AttachChannel(client, container)
        try:
            with anyio.fail_after(self.start_timeout):
                ready = await channel.start(config)
            if self._switch_to and ready.get("uid") != self._switch_to[0]:
                raise RuntimeError(f"the worker did not switch to the user {self.user}")
        except BaseException as exc:
            with anyio.CancelScope(shield=True):
                await channel.remove()
            if isinstance(exc, (TimeoutError, RuntimeError)):
                raise SandboxUnavailableError(str(exc) or "the container did not start") from exc
            raise
        return channel

    async def _dispatch(self, call: SandboxCall) -> Any:
        # Cold calls too, one at a time: they share the engine client, and `aclose` removes
        # whatever containers this sandbox left.
        async with self._lock:
            return await (self._run_warm(call) if self.warm else self._run_cold(call))

    async def _retire(self, worker: AttachChannel) -> None:
        worker.usable = False  # removed once the call is over (its state explains a death)
        worker.refresh_hits()

    async def _close(self, worker: AttachChannel) -> None:
        with anyio.CancelScope(shield=True):
            await worker.remove()

    async def _release(self) -> None:
        if self._client is not None:
            await anyio.to_thread.run_sync(self._remove_leftovers)
            self._client.close()
            self._client = None
        if self._owned_workspace:
            self._cleanup()

    async def _died(
        self, worker: AttachChannel, before: Mapping[str, int], limits: SandboxLimits
    ) -> Any:
        state = await worker.state()
        if state.get("OOMKilled"):
            size = format_size(limits.memory_bytes or 0)
            return limit_error("memory", f"the container ran out of its {size} and was killed")
        code = state.get("ExitCode")
        if code == 128 + 24:  # SIGXCPU
            return limit_error("cpu", f"the call used more than {limits.cpu_seconds} s of CPU time")
        raw = sandbox_error(f"the container's worker died unexpectedly (exit code {code})")
        return self._with_hits(raw, worker, before, limits)

    def _remove_leftovers(self) -> None:
        with contextlib.suppress(Exception):
            for container in self._client.containers.list(
                all=True, filters={"label": f"jianmu.sandbox={self.id}"}
            ):
                container.remove(force=True)
