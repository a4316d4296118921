"""A local Ray for this process: loopback only, and gone with this process however it ends.

`start_local_ray()` starts Ray (`ray.init`) with no dashboard, usage statistics off, its files
under a short temporary folder, and every socket bound to 127.0.0.1: Ray binds its servers to
the node's address, which is the loopback address only when Ray thinks clusters are off
(`RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`, read when Ray is imported and by the processes it
starts; `_node_ip_address` alone leaves the GCS and the raylet on every interface). A watchdog
process (`ray_watchdog.py`) ends that Ray's processes and removes its folder when this process
dies without `stop()` (`kill -9`).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

__all__ = ["LOOPBACK", "RAY_EXTRA", "RayUnavailableError", "require_ray", "start_local_ray"]

RAY_EXTRA = "pip install 'jianmu-bt[ray]'"

LOOPBACK = "127.0.0.1"
#: Ray's switch for "clusters on this OS"; off, a local Ray uses the loopback address only.
CLUSTERS_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


class RayUnavailableError(RuntimeError):
    """Ray is not installed (the message names the extra to install)."""


def require_ray() -> Any:
    """The `ray` module, or RayUnavailableError naming the extra that installs it."""
    try:
        import ray
    except ImportError as exc:
        raise RayUnavailableError(
            f"Ray is not installed ({exc}); install it with: {RAY_EXTRA}"
        ) from None
    return ray


@contextlib.contextmanager
def loopback_only() -> Iterator[None]:
    """While starting Ray: its node address is the loopback one (for this process's Ray
    modules, already imported, and for the processes Ray starts, through the environment)."""
    constants = importlib.import_module("ray._private.ray_constants")
    env_before = os.environ.get(CLUSTERS_ENV)
    flag_before = getattr(constants, "ENABLE_RAY_CLUSTER", True)
    os.environ[CLUSTERS_ENV] = "0"
    setattr(constants, "ENABLE_RAY_CLUSTER", False)  # noqa: B010 - a private flag of Ray's
    try:
        yield
    finally:
        setattr(constants, "ENABLE_RAY_CLUSTER", flag_before)  # noqa: B010
        if env_before is None:
            os.environ.pop(CLUSTERS_ENV, None)
        else:
            os.environ[CLUSTERS_ENV] = env_before


def watchdog(folder: str) -> subprocess.Popen[bytes]:
    """The watchdog that ends this process's Ray (in `folder`) when this process dies."""
    script = Path(__file__).with_name("ray_watchdog.py")
    return subprocess.Popen(
        [sys.executable, "-S", str(script), str(os.getpid()), folder],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # a Ctrl-C to this process group must not end it first
    )


def start_local_ray(num_cpus: int | None = None) -> Callable[[], None]:
    """Start a local Ray for this process and return a `stop()` that shuts it down.

    Usage statistics off, no dashboard, every socket on 127.0.0.1, its files under a short
    temporary folder (Ray's socket paths must stay short) that `stop()` removes; a watchdog
    ends it if this process dies first. When `RAY_ADDRESS` is set, `ray.init` connects to that
    cluster instead (it refuses `num_cpus` then): this says so on stderr and connects without
    it; `stop()` then disconnects.
    """

    ray = require_ray()
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    address = os.environ.get("RAY_ADDRESS", "").strip()
    if address:
        print(
            f"RAY_ADDRESS is set: connecting to the Ray at {address} instead of starting a "
            "local one (its CPUs, not num_cpus)",
            file=sys.stderr,
        )
        ray.init(address=address, log_to_driver=False, logging_level="WARNING")
        return ray.shutdown
    temp_dir = tempfile.mkdtemp(prefix="jr", dir="/tmp" if Path("/tmp").is_dir() else None)
    try:
        with loopback_only():
            ray.init(
                num_cpus=num_cpus or os.cpu_count() or 1,
                include_dashboard=False,
                dashboard_host=LOOPBACK,
                _node_ip_address=LOOPBACK,
                _temp_dir=temp_dir,
                log_to_driver=False,
                logging_level="WARNING",
            )
    except BaseException:
        shutil.rmtree(temp_dir, ignore_errors=True)
        raise
    guard: Any = watchdog(temp_dir) if sys.platform.startswith("linux") else None

    def stop() -> None:
        try:
            ray.shutdown()
        finally:
            shutil.rmtree(temp_dir, ignore_errors=True)
            if guard is not None:
                with contextlib.suppress(OSError):
                    guard.communicate(b"bye", timeout=10)

    return stop
