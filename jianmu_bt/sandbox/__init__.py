"""Execution runners: where a tool call runs (this process, or an isolating sandbox)."""

from jianmu_bt.sandbox.runner import InProcessRunner, RunnableTool, ToolRunner

__all__ = ["InProcessRunner", "RunnableTool", "ToolRunner"]
