"""create_runner: a runner by name, as YAML writes it (`runner: local | docker | inprocess`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jianmu_bt.tools.runners import InProcessRunner, ToolRunner

RUNNER_KINDS = ("inprocess", "local", "docker", "ray")


def create_runner(kind: str | Mapping[str, Any] = "inprocess", **options: Any) -> ToolRunner:
    """Build a runner by name; options go to its constructor.

    `kind` is "inprocess", "local" (LocalSandbox) or "docker" (DockerSandbox), or a mapping with a
    `kind` key and the options (the YAML form `runner: {kind: docker, image: ...}`).

    Both sandboxes built here have no network unless the options say `network: true` (the same
    default as DockerSandbox's; LocalSandbox's own constructor default is not relied on).
    """
    if isinstance(kind, Mapping):
        options = {**{k: v for k, v in kind.items() if k != "kind"}, **options}
        kind = str(kind.get("kind", "inprocess"))
    name = kind.strip().lower().replace("-", "").replace("_", "")
    if name in ("inprocess", "none"):
        if options:
            raise ValueError(f"runner 'inprocess' takes no options, got {sorted(options)}")
        return InProcessRunner()
    if name == "local":
        from jianmu_bt.sandbox.local import LocalSandbox

        return LocalSandbox(**{"network": False, **options})
    if name == "docker":
        from jianmu_bt.sandbox.docker import DockerSandbox

        return DockerSandbox(**{"network": False, **options})
    if name == "ray":
        from jianmu_bt.sandbox.ray_runner import RayRunner

        return RayRunner(**options)
    raise ValueError(f"unknown runner {kind!r}: use one of {', '.join(RUNNER_KINDS)}")
