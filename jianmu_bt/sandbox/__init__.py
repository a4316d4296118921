"""Execution runners: where a tool call runs (this process, or an isolating sandbox).

`InProcessRunner` runs a call here; `LocalSandbox` runs it in an isolated child process;
`DockerSandbox` in a container (its module, and the docker SDK, load only when first used).
"""

from __future__ import annotations

from typing import Any

from jianmu_bt.sandbox.context import inside_sandbox
from jianmu_bt.sandbox.factory import RUNNER_KINDS, create_runner
from jianmu_bt.sandbox.limits import SandboxLimits
from jianmu_bt.sandbox.local import LocalSandbox
from jianmu_bt.sandbox.plan import IsolationReport
from jianmu_bt.tools.runners import InProcessRunner, RunnableTool, ToolRunner
from jianmu_bt.sandbox.toolspec import ToolNotPortableError

_LAZY = {
    "DockerSandbox": "jianmu_bt.sandbox.docker",
    "SandboxUnavailableError": "jianmu_bt.sandbox.docker",
}

__all__ = [
    "RUNNER_KINDS",
    "DockerSandbox",
    "InProcessRunner",
    "IsolationReport",
    "LocalSandbox",
    "RunnableTool",
    "SandboxLimits",
    "SandboxUnavailableError",
    "ToolNotPortableError",
    "ToolRunner",
    "create_runner",
    "inside_sandbox",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'jianmu_bt.sandbox' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
