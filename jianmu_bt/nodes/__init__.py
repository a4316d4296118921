"""Tree nodes: py_trees behaviours that run tools and LLM turns over a run's state.

Each name is imported from its module on first use (`jianmu_bt._lazy`), so a module that needs
one node (`from jianmu_bt.nodes.condition import Condition`) does not load the LLM layer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jianmu_bt._lazy import lazy_exports
from jianmu_bt.nodes import tool_node as _tool_node  # noqa: F401  (registers Tool.as_node's factory)

if TYPE_CHECKING:  # what type checkers and IDEs see
    from jianmu_bt.nodes.agent import (
        AddMessage as AddMessage,
        AgentLoop as AgentLoop,
        react_agent as react_agent,
    )
    from jianmu_bt.nodes.ask import Ask as Ask, ask_person as ask_person
    from jianmu_bt.nodes.calling import run_tool_call as run_tool_call
    from jianmu_bt.nodes.condition import Condition as Condition
    from jianmu_bt.nodes.llm_node import AgentLLMNode as AgentLLMNode
    from jianmu_bt.nodes.options import (
        CallOptions as CallOptions,
        ExecutionMode as ExecutionMode,
        ExecutorOptions as ExecutorOptions,
    )
    from jianmu_bt.nodes.set_values import SetValues as SetValues
    from jianmu_bt.nodes.tool_executor import ToolExecutor as ToolExecutor
    from jianmu_bt.nodes.tool_node import ToolNode as ToolNode
    from jianmu_bt.runtime.expressions import (
        ExpressionError as ExpressionError,
        SafeExpression as SafeExpression,
    )
    from jianmu_bt.tools.retry import RetryPolicy as RetryPolicy

__getattr__, __dir__ = lazy_exports(__name__, globals())
