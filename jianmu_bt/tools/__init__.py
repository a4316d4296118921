"""The tool layer: Tool, @tool, ToolCall, ToolResult, ToolSet and tool providers.

This layer knows nothing about trees; tree nodes hold a ToolSet and call into it.

Each name is imported from its module on first use (`jianmu_bt._lazy`), so a module that needs
one piece (`from jianmu_bt.tools.references import resolve_reference`) does not pay for the rest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jianmu_bt._lazy import lazy_exports

if TYPE_CHECKING:  # what type checkers and IDEs see
    from jianmu_bt.tools.base import Tool as Tool
    from jianmu_bt.tools.call_context import (
        idempotency_key as idempotency_key,
        progress_sink as progress_sink,
        report_progress as report_progress,
    )
    from jianmu_bt.tools.calls import (
        ToolCall as ToolCall,
        ToolResult as ToolResult,
        new_call_id as new_call_id,
    )
    from jianmu_bt.tools.effects import (
        UNKNOWN_EFFECT as UNKNOWN_EFFECT,
        EffectDeclarationError as EffectDeclarationError,
        counted_effects as counted_effects,
    )
    from jianmu_bt.tools.external import ExternalTool as ExternalTool
    from jianmu_bt.tools.function_tool import FunctionTool as FunctionTool, tool as tool
    from jianmu_bt.tools.providers import (
        BaseToolProvider as BaseToolProvider,
        ToolProvider as ToolProvider,
    )
    from jianmu_bt.tools.registry import (
        BuiltinToolProvider as BuiltinToolProvider,
        ToolConfigurationError as ToolConfigurationError,
        ToolUnavailableError as ToolUnavailableError,
        UnknownToolError as UnknownToolError,
    )
    from jianmu_bt.tools.retry import RetryPolicy as RetryPolicy
    from jianmu_bt.tools.shapes import (
        DEFAULT_DESCRIPTION as DEFAULT_DESCRIPTION,
        merge_call_args as merge_call_args,
        normalize_output_schema as normalize_output_schema,
        normalize_parameters as normalize_parameters,
    )
    from jianmu_bt.tools.signature import ArgumentError as ArgumentError, Injected as Injected
    from jianmu_bt.tools.toolset import ToolSet as ToolSet

__getattr__, __dir__ = lazy_exports(__name__, globals())
