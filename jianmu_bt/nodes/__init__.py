"""Tree nodes: py_trees behaviours that run tools and LLM turns over a run's state."""

from jianmu_bt.nodes.agent import AddMessage, AgentLoop, react_agent
from jianmu_bt.nodes.calling import run_tool_call
from jianmu_bt.nodes.condition import Condition, ExpressionError, SafeExpression
from jianmu_bt.nodes.llm_node import AgentLLMNode
from jianmu_bt.nodes.options import CallOptions, ExecutionMode, ExecutorOptions
from jianmu_bt.nodes.set_values import SetValues
from jianmu_bt.nodes.tool_executor import ToolExecutor
from jianmu_bt.nodes.tool_node import ToolNode
from jianmu_bt.tools.retry import RetryPolicy

__all__ = [
    "AddMessage",
    "AgentLLMNode",
    "AgentLoop",
    "CallOptions",
    "Condition",
    "ExecutionMode",
    "ExecutorOptions",
    "ExpressionError",
    "RetryPolicy",
    "SafeExpression",
    "SetValues",
    "ToolExecutor",
    "ToolNode",
    "react_agent",
    "run_tool_call",
]
