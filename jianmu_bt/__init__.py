"""jianmu_bt: behaviour-tree-first orchestration for LLM agents.

The common names are importable from here; each layer package (`jianmu_bt.tools`,
`jianmu_bt.runtime`, `jianmu_bt.nodes`, `jianmu_bt.guard`, `jianmu_bt.llm`, `jianmu_bt.loader`,
...) exports the rest.

Importing the package costs almost nothing: each name is imported from its layer on first use
(PEP 562), so `from jianmu_bt import tool` loads the tool layer only, and `load_tree` the loader.
The layer packages are reachable as attributes too (`jianmu_bt.guard`), also loaded on first use.
No module of the package imports this facade (the version is in `jianmu_bt._version`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jianmu_bt._lazy import lazy_exports
from jianmu_bt._version import __version__ as __version__

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time `__getattr__` imports these
    from jianmu_bt import (
        cli as cli,
        guard as guard,
        llm as llm,
        loader as loader,
        mcp as mcp,
        nodes as nodes,
        runtime as runtime,
        sandbox as sandbox,
        store as store,
        tools as tools,
        viz as viz,
    )
    from jianmu_bt.guard import Decision as Decision, GuardEnforcer as GuardEnforcer
    from jianmu_bt.loader import (
        Tree as Tree,
        TreeLoadError as TreeLoadError,
        load_tree as load_tree,
    )
    from jianmu_bt.nodes import (
        AgentLLMNode as AgentLLMNode,
        ToolExecutor as ToolExecutor,
        ToolNode as ToolNode,
        react_agent as react_agent,
    )
    from jianmu_bt.runtime import (
        AgentState as AgentState,
        AsyncNode as AsyncNode,
        PythonTree as PythonTree,
        RunResult as RunResult,
        StateManager as StateManager,
        TreeRunner as TreeRunner,
    )
    from jianmu_bt.tools import (
        BaseToolProvider as BaseToolProvider,
        BuiltinToolProvider as BuiltinToolProvider,
        FunctionTool as FunctionTool,
        Injected as Injected,
        Tool as Tool,
        ToolCall as ToolCall,
        ToolProvider as ToolProvider,
        ToolResult as ToolResult,
        ToolSet as ToolSet,
        tool as tool,
    )

_load, __dir__ = lazy_exports(__name__, globals())


def __getattr__(name: str) -> Any:
    """Import a public name (or a layer package) on first use and keep it (PEP 562)."""
    value = _load(name)
    if name == "__all__":
        value = globals()["__all__"] = ["__version__", *value]
    return value
