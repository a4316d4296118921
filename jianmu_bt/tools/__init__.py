"""The tool layer: Tool, @tool, ToolCall, ToolResult, ToolSet and tool providers.

This layer knows nothing about trees; tree nodes hold a ToolSet and call into it.
"""

from jianmu_bt.tools.base import Tool
from jianmu_bt.tools.call_context import idempotency_key, progress_sink, report_progress
from jianmu_bt.tools.calls import ToolCall, ToolResult, new_call_id
from jianmu_bt.tools.function_tool import FunctionTool, tool
from jianmu_bt.tools.providers import BaseToolProvider, ToolProvider
from jianmu_bt.tools.registry import (
    BuiltinToolProvider,
    ToolConfigurationError,
    ToolUnavailableError,
    UnknownToolError,
)
from jianmu_bt.tools.retry import RetryPolicy
from jianmu_bt.tools.shapes import (
    DEFAULT_DESCRIPTION,
    merge_call_args,
    normalize_output_schema,
    normalize_parameters,
)
from jianmu_bt.tools.signature import ArgumentError, Injected
from jianmu_bt.tools.toolset import ToolSet

__all__ = [
    "DEFAULT_DESCRIPTION",
    "ArgumentError",
    "BaseToolProvider",
    "BuiltinToolProvider",
    "FunctionTool",
    "Injected",
    "RetryPolicy",
    "Tool",
    "ToolCall",
    "ToolConfigurationError",
    "ToolProvider",
    "ToolResult",
    "ToolSet",
    "ToolUnavailableError",
    "UnknownToolError",
    "idempotency_key",
    "merge_call_args",
    "new_call_id",
    "normalize_output_schema",
    "normalize_parameters",
    "progress_sink",
    "report_progress",
    "tool",
]
