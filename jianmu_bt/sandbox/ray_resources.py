"""Whether a Ray cluster has the resources a RayRunner asks for, checked before anything waits.

Ray keeps a task whose resources no node has pending forever, without a word: a `num_gpus: 1`
tool on a machine without a GPU hangs its run. `missing_resources` compares a runner's options
(`num_cpus`, `num_gpus`, `memory`) with `ray.cluster_resources()` and names what is short; a
RayRunner fails its calls with that text, and a `--ray` batch refuses to start with it. (A
cluster that autoscales may add such a node later: connect a RayRunner with enough resources
already there, or leave the resource out.)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["missing_resources", "ray_requests"]

#: A runner option -> the Ray resource it reserves.
RESOURCES = {"num_cpus": "CPU", "num_gpus": "GPU", "memory": "memory"}
DEFAULTS = {"num_cpus": 1.0}


def _amount(value: float) -> str:
    return f"{value:g}" if value < 1e6 else f"{value / 2**30:.3g} GiB"


def missing_resources(available: Mapping[str, float], options: Mapping[str, Any]) -> str:
    """What of `options` the cluster (`available`: `ray.cluster_resources()`) does not have,
    as one line ("" when it has everything), e.g. `num_gpus=1 (the Ray cluster has GPU 0)`."""
    short = []
    for option, resource in RESOURCES.items():
        wanted = options.get(option, DEFAULTS.get(option, 0)) or 0
        has = float(available.get(resource, 0) or 0)
        if wanted and float(wanted) > has:
            short.append(
                f"{option}={_amount(float(wanted))} (the Ray cluster has {resource} {_amount(has)})"
            )
    return ", ".join(short)


def ray_requests(owned: list[Any]) -> list[tuple[str, dict[str, Any]]]:
    """The `runner: ray` options of a loaded tree's owned objects (bound tools and subtrees'
    runners): (what asks, its options)."""
    found = []
    for item in owned:
        if getattr(item, "kind", None) != "ray":
            continue
        options = getattr(item, "runner_options", None)
        if options is not None:  # a tool bound to its runner
            found.append((f"tool '{item.name}'", dict(options)))
        elif isinstance(getattr(item, "options", None), Mapping):  # a subtree's runner
            found.append(("a subtree's runner: ray", dict(item.options)))
    return found
