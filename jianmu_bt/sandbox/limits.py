"""SandboxLimits: what one sandboxed call may use (the errors naming an exceeded limit: `failures`).

Limits are an explicit object with sensible defaults (never numbers buried in code). Sizes accept
bytes or a string with a unit (`"512MiB"`, `"1g"`, `"64k"`), so they read well in YAML.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

# The failures live in `failures` (no pydantic, for the worker); importable from here as before.
from jianmu_bt.sandbox.failures import (
    LimitName as LimitName,
    format_size as format_size,
    limit_error as limit_error,
    sandbox_error as sandbox_error,
)

#: Tasks (processes and threads) a sandbox itself needs on top of `max_processes`: the worker
#: and its threads, its fork server, a spare call process and the running call's own process with
#: their threads (and, in a container, the init). LocalSandbox's pids cgroup and RLIMIT_NPROC and
#: DockerSandbox's pids limit all add this margin.
WORKER_TASKS = 16

_UNITS = {
    "": 1,
    "b": 1,
    "k": 1024,
    "kb": 1000,
    "kib": 1024,
    "m": 1024**2,
    "mb": 1000**2,
    "mib": 1024**2,
    "g": 1024**3,
    "gb": 1000**3,
    "gib": 1024**3,
}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")


def parse_size(value: int | float | str) -> int:
    """Bytes from an int or a string such as "512MiB", "1g", "64k" (k/m/g are binary units)."""
    if isinstance(value, bool):
        raise ValueError(f"a size must be a number of bytes or a string like '512MiB', got {value}")
    if isinstance(value, (int, float)):
        return int(value)
    match = _SIZE.match(str(value))
    unit = match.group(2).lower() if match else None
    if match is None or unit not in _UNITS:
        raise ValueError(f"cannot read size {value!r}: use bytes or a string like '512MiB', '1g'")
    return int(float(match.group(1)) * _UNITS[unit])


class SandboxLimits(BaseModel):
    """Resource limits for one sandboxed call.

    | field              | default | enforced by (LocalSandbox / DockerSandbox)               |
    |--------------------|---------|----------------------------------------------------------|
    | `timeout`          | 30 s    | wall clock: the process group / container is killed      |
    | `cpu_seconds`      | 30      | RLIMIT_CPU (SIGXCPU) in both                             |
    | `memory_bytes`     | 512 MiB | RLIMIT_AS + memory cgroup / container memory limit       |
    | `max_processes`    | 64      | pids cgroup (or RLIMIT_NPROC when unprivileged) / pids   |
    | `max_open_files`   | 256     | RLIMIT_NOFILE in both                                    |
    | `max_file_bytes`   | 64 MiB  | RLIMIT_FSIZE: the largest file the call may write        |
    | `max_output_bytes` | 1 MiB   | the size of the JSON result that comes back              |
    | `cpus`             | 1.0     | DockerSandbox only: CPU share of the container           |
    | `network`          | None    | False cuts the call off the network (see below)          |

    `max_processes` counts processes and threads the code starts (a cgroup counts threads too);
    the sandbox adds a few for its own worker. `None` switches a limit off (except `timeout`).

    `network` is the call's side of network access: `None` leaves it to the sandbox's own
    `network` option, `False` asks for no network, `True` asks for it. A call is online only when
    the sandbox allows it *and* the limits do not say False. Code-running tools (`bash`,
    `python_repl`) ask for False unless they were built with `network=True`.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    timeout: float = Field(30.0, gt=0, description="wall-clock seconds per call")
    cpu_seconds: int | None = Field(30, gt=0, description="CPU seconds per call")
    memory_bytes: int | None = Field(512 * 1024**2, gt=0, description="address space / memory")
    max_processes: int | None = Field(64, gt=0, description="processes and threads")
    max_open_files: int | None = Field(256, gt=0, description="open file descriptors")
    max_file_bytes: int | None = Field(64 * 1024**2, gt=0, description="largest file written")
    max_output_bytes: int = Field(1024**2, gt=0, description="size of the returned result")
    cpus: float | None = Field(1.0, gt=0, description="DockerSandbox CPU share")
    network: bool | None = Field(
        None, description="False: no network for the call; None: as the sandbox's option says"
    )

    @field_validator("memory_bytes", "max_file_bytes", "max_output_bytes", mode="before")
    @classmethod
    def _sizes(cls, value: Any) -> Any:
        return None if value is None else parse_size(value)

    def tightened(self, overrides: Mapping[str, Any] | None) -> SandboxLimits:
        """These limits with `overrides` applied where they are tighter (the sandbox stays the
        ceiling: a tool may ask for less time than the sandbox allows, never more)."""
        if not overrides:
            return self
        changes: dict[str, Any] = {}
        for key, value in overrides.items():
            if key not in type(self).model_fields:
                raise ValueError(f"unknown sandbox limit {key!r} in a tool's sandbox_limits")
            if value is None:
                continue
            current = getattr(self, key)
            changes[key] = value if current is None else min(current, value)
        return self.model_copy(update=changes) if changes else self

    def allows_network(self, sandbox_network: bool) -> bool:
        """Whether a call with these limits is online in a sandbox whose option is
        `sandbox_network`: both must allow it (the limits allow unless they say False)."""
        return bool(sandbox_network) and self.network is not False
