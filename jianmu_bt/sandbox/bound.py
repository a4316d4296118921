"""Runners named in a tree file: `runner: ray` (or `local`, `docker`) on a tool entry binds the
tool to a runner of its own; on a `subtree` node it is where every call inside runs.

`bind_runner(tool, {"kind": "ray", "num_cpus": 2})` returns a Tool with the same name, schema,
effect tags and idempotence whose calls always go to that runner: the tool's own choice beats
the tree's default runner. The runner is built when the tree loads, so a bad option value is a
load error (building one connects to nothing: RayRunner connects to Ray at its first call).
The loaded tree owns its bound tools: the end of a run (and `tree.close()`) closes their
runners (a local Ray a RayRunner started, a sandbox's workers); the next call builds one again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import anyio

from jianmu_bt.tools.base import Tool
from jianmu_bt.tools.runners import ToolRunner


def runner_options(spec: str | Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The (kind, options) of a `runner:` value: a name, or a mapping with `kind` and options.

    ValueError names an unknown kind or option (checked when the tree loads, not at a call).
    """
    from jianmu_bt.sandbox.factory import RUNNER_KINDS

    if isinstance(spec, str):
        kind, options = spec, {}
    elif isinstance(spec, Mapping):
        options = {k: v for k, v in spec.items() if k != "kind"}
        kind = str(spec.get("kind", ""))
    else:
        raise ValueError(f"runner: expected a name or a mapping with 'kind', got {spec!r}")
    kind = kind.strip().lower().replace("-", "").replace("_", "")
    kind = "inprocess" if kind == "none" else kind
    if kind not in RUNNER_KINDS:
        raise ValueError(f"unknown runner {kind!r}: use one of {', '.join(RUNNER_KINDS)}")
    if kind == "ray":
        from jianmu_bt.sandbox.ray_runner import RAY_OPTIONS

        unknown = sorted(set(options) - set(RAY_OPTIONS))
        if unknown:
            raise ValueError(
                f"runner ray: unknown option(s) {', '.join(unknown)}; "
                f"its options are {', '.join(RAY_OPTIONS)}"
            )
    return kind, options


class NamedRunner:
    """The runner `kind` with `options` (a ToolRunner): built when made, so a bad option value
    fails when the tree loads; `aclose()` closes it and the next call builds it again (a tree
    closes its runners after every run)."""

    def __init__(self, kind: str, options: Mapping[str, Any]) -> None:
        self.kind = kind
        self.options = dict(options)
        self._runner: ToolRunner | None = None
        self._runner = self._build()

    def _build(self) -> ToolRunner:
        from jianmu_bt.sandbox.factory import create_runner

        try:
            return create_runner(self.kind, **self.options)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"runner {self.kind}: {exc}") from None

    @property
    def runner(self) -> ToolRunner:
        """The runner (built again after a `close()`)."""
        if self._runner is None:
            self._runner = self._build()
        return self._runner

    async def run(self, tool: Any, args: Any) -> Any:
        """Run `tool` with `args` in the runner (the ToolRunner protocol)."""
        return await self.runner.run(tool, args)

    def close(self) -> None:
        """Close the runner when it has a `close()` (a RayRunner's local Ray)."""
        runner, self._runner = self._runner, None
        close = getattr(runner, "close", None)
        if callable(close):
            close()

    async def aclose(self) -> None:
        """Close the runner (`aclose()` of a sandbox, `close()` in a thread otherwise)."""
        runner, self._runner = self._runner, None
        aclose = getattr(runner, "aclose", None)
        if callable(aclose):
            await aclose()
            return
        close = getattr(runner, "close", None)
        if callable(close):
            await anyio.to_thread.run_sync(close)

    def __repr__(self) -> str:
        return f"NamedRunner({self.kind!r}, {self.options!r})"


def named_runner(spec: str | Mapping[str, Any]) -> NamedRunner | None:
    """The runner a `runner:` value names (None for the in-process one); ValueError for an
    unknown kind or option, or an option value the runner refuses."""
    kind, options = runner_options(spec)
    if kind == "inprocess" and not options:
        return None
    return NamedRunner(kind, options)


class RunnerBoundTool(Tool):
    """`inner` whose every call goes to the runner built from `kind` and `options`."""

    def __init__(self, inner: Tool, kind: str, options: Mapping[str, Any]) -> None:
        self.inner = inner
        self.kind = kind
        self.runner_options = dict(options)
        self.bound = NamedRunner(kind, options)  # a bad option value fails here, at load
        self.name = inner.name
        self.description = inner.get_description()
        self.input_schema = inner.input_schema
        self.output_schema = inner.output_schema
        self.parallel_safe = inner.parallel_safe
        self.effect_tags = inner.effect_tags
        self.idempotent = inner.idempotent
        self.read_only = inner.read_only
        self.timeout = inner.timeout

    @property
    def runner(self) -> ToolRunner:
        """The bound runner (built again after a `close()`)."""
        return self.bound.runner

    def run(self, input: Any) -> Any:
        """Not used: every call goes to the bound runner (see `_dispatch`)."""
        raise RuntimeError(f"tool '{self.name}' runs only through its {self.kind} runner")

    async def execute_local(self, args: Any) -> Any:
        """Run the inner tool here (what the bound runner's worker does)."""
        return await self.inner.execute_local(args)

    async def _dispatch(self, merged: Any, runner: ToolRunner | None) -> Any:
        # The tool's own runner wins over the one the caller passes (the tree's default).
        return await self.runner.run(self.inner, merged)

    def close(self) -> None:
        """Close the bound runner when it has a `close()` (a RayRunner's local Ray)."""
        self.bound.close()

    async def aclose(self) -> None:
        """Close the bound runner (`aclose()` of a sandbox, `close()` in a thread otherwise)."""
        await self.bound.aclose()

    def __repr__(self) -> str:
        return f"RunnerBoundTool({self.inner!r}, {self.kind})"


def bind_runner(tool: Tool, spec: str | Mapping[str, Any]) -> Tool:
    """`tool` bound to the runner `spec` names (`"ray"`, `{"kind": "ray", "num_cpus": 2}`)."""
    kind, options = runner_options(spec)
    if kind == "inprocess" and not options:
        return tool
    return RunnerBoundTool(tool, kind, options)
