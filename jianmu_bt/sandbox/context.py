"""Whether this process is a sandbox worker: tools that must never run unsandboxed ask here."""

from __future__ import annotations

_inside = False


def inside_sandbox() -> bool:
    """True in a LocalSandbox or DockerSandbox worker process, False everywhere else."""
    return _inside


def mark_inside_sandbox() -> None:
    """Called once by the worker entry point, after its isolation steps are applied."""
    global _inside
    _inside = True
