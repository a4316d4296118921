"""Execution runners: where a tool call runs (this process, or an isolating sandbox).

`InProcessRunner` runs a call here; `LocalSandbox` runs it in an isolated child process;
`DockerSandbox` in a container. Each name is imported from its module on first use
(`jianmu_bt._lazy`): the sandbox worker, started as `jianmu_bt.sandbox.worker`, loads only the
modules it runs, and the docker SDK loads only with DockerSandbox.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jianmu_bt._lazy import lazy_exports

if TYPE_CHECKING:  # what type checkers and IDEs see
    from jianmu_bt.sandbox.base import SandboxUnavailableError as SandboxUnavailableError
    from jianmu_bt.sandbox.context import inside_sandbox as inside_sandbox
    from jianmu_bt.sandbox.docker import DockerSandbox as DockerSandbox
    from jianmu_bt.sandbox.factory import (
        RUNNER_KINDS as RUNNER_KINDS,
        create_runner as create_runner,
    )
    from jianmu_bt.sandbox.limits import SandboxLimits as SandboxLimits
    from jianmu_bt.sandbox.local import LocalSandbox as LocalSandbox
    from jianmu_bt.sandbox.plan import IsolationReport as IsolationReport
    from jianmu_bt.sandbox.ray_runner import RayRunner as RayRunner
    from jianmu_bt.sandbox.toolspec import ToolNotPortableError as ToolNotPortableError
    from jianmu_bt.tools.runners import (
        InProcessRunner as InProcessRunner,
        RunnableTool as RunnableTool,
        ToolRunner as ToolRunner,
    )


__getattr__, __dir__ = lazy_exports(__name__, globals())
