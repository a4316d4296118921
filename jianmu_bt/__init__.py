"""jianmu_bt: behaviour-tree-first orchestration for LLM agents.

The common names are importable from here; each layer package (`jianmu_bt.tools`,
`jianmu_bt.runtime`, `jianmu_bt.nodes`, `jianmu_bt.guard`, `jianmu_bt.llm`, `jianmu_bt.loader`,
...) exports the rest.
"""

from typing import Any

from jianmu_bt.guard import Decision, GuardEnforcer
from jianmu_bt.nodes import AgentLLMNode, ToolExecutor, ToolNode, react_agent
from jianmu_bt.runtime import AgentState, AsyncNode, RunResult, StateManager, TreeRunner
from jianmu_bt.tools import (
    BaseToolProvider,
    BuiltinToolProvider,
    FunctionTool,
    Injected,
    Tool,
    ToolCall,
    ToolProvider,
    ToolResult,
    ToolSet,
    tool,
)

__version__ = "0.1.0"

_LAZY = {
    "load_tree": "jianmu_bt.loader",
    "Tree": "jianmu_bt.loader",
    "TreeLoadError": "jianmu_bt.loader",
}


def __getattr__(name: str) -> Any:
    # The loader pulls in YAML and networkx; load it on first use.
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'jianmu_bt' has no attribute {name!r}")


__all__ = [
    "AgentLLMNode",
    "AgentState",
    "AsyncNode",
    "BaseToolProvider",
    "BuiltinToolProvider",
    "Decision",
    "FunctionTool",
    "GuardEnforcer",
    "Injected",
    "RunResult",
    "StateManager",
    "Tool",
    "ToolCall",
    "ToolExecutor",
    "ToolNode",
    "ToolProvider",
    "ToolResult",
    "ToolSet",
    "Tree",
    "TreeLoadError",
    "TreeRunner",
    "__version__",
    "load_tree",
    "react_agent",
    "tool",
]
