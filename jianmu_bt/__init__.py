"""jianmu_bt: behaviour-tree-first orchestration for LLM agents.

Import the public names from here or from a layer package (`jianmu_bt.tools`, ...).
"""

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

__all__ = [
    "BaseToolProvider",
    "BuiltinToolProvider",
    "FunctionTool",
    "Injected",
    "Tool",
    "ToolCall",
    "ToolProvider",
    "ToolResult",
    "ToolSet",
    "__version__",
    "tool",
]
