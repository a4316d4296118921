"""SandboxedTool: the base of tools whose `run` must never happen in the caller's process.

`bash` and `python_repl` run arbitrary commands and code, so every call goes to a sandbox
runner: the one passed to the call, else the tool's own `runner`, else a LocalSandbox the tool
starts for itself (removed by `aclose()`). An in-process runner is refused, and `execute_local`
refuses to run outside a sandbox worker, so the work cannot end up in the caller by mistake.

Network access is off unless the tool is built with `network=True` (or `limits={"network": True}`,
the form that reaches a tool whose constructor has no `network` option). The tool's wish travels
with every call as `sandbox_limits["network"]`: the sandbox the tool starts for itself has no
network, and a runner passed in keeps the call offline where it honours the call's limits
(LocalSandbox and DockerSandbox do). A runner's own `network=False` always wins over the tool's
`True`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Self

from jianmu_bt.sandbox.context import inside_sandbox
from jianmu_bt.sandbox.limits import SandboxLimits
from jianmu_bt.sandbox.local import LocalSandbox
from jianmu_bt.tools.base import Tool
from jianmu_bt.tools.runners import InProcessRunner, ToolRunner


class SandboxedTool(Tool):
    """A tool that runs only inside a sandbox worker; subclasses write `run` as usual.

    `work` names what the tool runs ("commands", "code") in its refusals. `refuse(args)` may
    turn a call down in the caller's process, before anything is sent to a sandbox. Such a tool
    is not parallel-safe and has the effect tag "exec" unless a subclass says otherwise.
    """

    work: ClassVar[str] = "work"
    # Commands and code have effects nobody can see in advance: never run two at once.
    parallel_safe = False
    effect_tags = ("exec",)
    #: Whether calls may use the network; off unless the tool is built with `network=True`.
    network: bool = False

    def __init__(
        self,
        *,
        runner: ToolRunner | None,
        limits: SandboxLimits | Mapping[str, Any] | None,
        workspace: Any,
        warm: bool = False,
        network: bool | None = None,
    ) -> None:
        self.runner = runner
        self.workspace = getattr(workspace, "root", workspace)
        self.limits = limits
        if network is None:  # `limits={"network": True}` is the other way to opt in
            asked = limits.get("network") if isinstance(limits, Mapping) else None
            asked = limits.network if isinstance(limits, SandboxLimits) else asked
            network = asked is True
        self.network = bool(network)
        self._warm = warm
        self._owned: LocalSandbox | None = None
        self._limits_asked: dict[str, Any] = {}

    @property
    def sandbox_limits(self) -> dict[str, Any]:
        """The limits this tool asks of any sandbox: what the subclass set, plus `network`."""
        return {**self._limits_asked, "network": self.network}

    @sandbox_limits.setter
    def sandbox_limits(self, value: Mapping[str, Any]) -> None:
        self._limits_asked = {k: v for k, v in dict(value).items() if k != "network"}

    def refuse(self, args: Any) -> str | None:
        """An error for a call that must not run (checked before sending it), else None."""
        return None

    def sandbox_runner(self, runner: ToolRunner | None = None) -> ToolRunner:
        """The runner a call goes to: `runner`, else the tool's own, else a LocalSandbox."""
        if runner is not None:
            return runner
        if self.runner is not None:
            return self.runner
        if self._owned is None:
            # A warm sandbox keeps one long-lived worker; otherwise a fresh process per call.
            self._owned = LocalSandbox(
                self.limits, warm=self._warm, workspace=self.workspace, network=self.network
            )
        return self._owned

    async def _dispatch(self, merged: Any, runner: ToolRunner | None) -> Any:
        """Check `refuse`, then send the call to a sandbox runner (never in-process)."""
        refused = self.refuse(merged)
        if refused:
            return refused
        return await self.run_in_sandbox(merged, runner)

    async def run_in_sandbox(self, args: Any, runner: ToolRunner | None = None) -> Any:
        """The raw result of the call from its sandbox runner (an error for an in-process one)."""
        chosen = self.sandbox_runner(runner)
        if isinstance(chosen, InProcessRunner):
            return (
                f"Error: {type(self).name} never runs {self.work} in-process; "
                "give it a sandbox runner"
            )
        return await chosen.run(self, args)

    async def execute_local(self, args: Any) -> Any:
        """Run here, which is allowed only inside a sandbox worker."""
        if not inside_sandbox():
            return (
                f"Error: {type(self).name} runs {self.work} only inside a sandbox worker "
                "(LocalSandbox/Docker)"
            )
        return await super().execute_local(args)

    async def aclose(self) -> None:
        """Stop the sandbox this tool started for itself (its workspace, its warm worker)."""
        if self._owned is not None:
            await self._owned.aclose()
            self._owned = None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
