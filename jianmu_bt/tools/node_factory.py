"""How `Tool.as_node` reaches the tree layer without the tools layer importing it.

The tools layer never imports the layers above it (docs/architecture.md). The tree layer registers
its ToolNode factory with `set_node_factory` when it is imported; until then, `tool_node_factory`
loads the factory jianmu-bt declares as a package entry point (group "jianmu.node_factories",
name "tool" in pyproject.toml), the way the registry finds the built-in tools. So `as_node()`
works however the tool was made: `from jianmu_bt import tool`, `from jianmu_bt.tools import tool`,
or a `Tool` subclass.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

NODE_FACTORY_GROUP = "jianmu.node_factories"
TOOL_NODE = "tool"
DISTRIBUTION = "jianmu-bt"

# Set by the tree layer (jianmu_bt/nodes/tool_node.py) when it is imported.
_node_factory: Callable[..., Any] | None = None


def set_node_factory(factory: Callable[..., Any]) -> None:
    """Register the callable `Tool.as_node` uses (the tree layer registers ToolNode)."""
    global _node_factory
    _node_factory = factory


def tool_node_factory() -> Callable[..., Any]:
    """The callable that builds a ToolNode from `(tool, name=..., input_key=..., ...)`: the one
    registered, else the one jianmu-bt's entry point names (loading it registers it)."""
    factory = _node_factory or load_tool_node_factory()
    if factory is None:
        raise RuntimeError(
            "Tool.as_node needs the tree layer, and jianmu-bt's entry points are missing "
            "(`pip install -e .` in a source checkout, or import jianmu_bt.nodes first)"
        )
    return factory


def load_tool_node_factory() -> Callable[..., Any] | None:
    """The factory named by jianmu-bt's entry point; None when the package's metadata (a source
    checkout that is not installed) or the entry point is missing."""
    from importlib import metadata  # only on the first `as_node` without a registered factory

    try:
        found = metadata.distribution(DISTRIBUTION).entry_points.select(group=NODE_FACTORY_GROUP)
    except metadata.PackageNotFoundError:
        return None
    for entry in found:
        if entry.name == TOOL_NODE:
            factory: Callable[..., Any] = entry.load()
            return factory
    return None
