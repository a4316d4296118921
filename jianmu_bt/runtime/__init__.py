"""The tree runtime: run state, async nodes, the event-driven runner and run events."""

from jianmu_bt.runtime.async_node import AsyncNode, ContextNode
from jianmu_bt.runtime.context import NodeTimeoutError, RunContext, TaskHandle
from jianmu_bt.runtime.events import Event, EventBus, TraceWriter, read_trace
from jianmu_bt.runtime.reducers import Reducer, ReducerSpec
from jianmu_bt.runtime.runner import RunResult, TreeRunner
from jianmu_bt.runtime.services import RunGuard
from jianmu_bt.runtime.state import AgentState, StateManager
from jianmu_bt.runtime.state_schema import (
    StateClosedError,
    StateToolCall,
    StateValidationError,
    UnknownStateKeyError,
)
from jianmu_bt.runtime.templates import TemplateError, references, render

__all__ = [
    "AgentState",
    "AsyncNode",
    "ContextNode",
    "Event",
    "EventBus",
    "NodeTimeoutError",
    "Reducer",
    "ReducerSpec",
    "RunContext",
    "RunGuard",
    "RunResult",
    "StateClosedError",
    "StateManager",
    "StateToolCall",
    "StateValidationError",
    "TaskHandle",
    "TemplateError",
    "TraceWriter",
    "TreeRunner",
    "UnknownStateKeyError",
    "read_trace",
    "references",
    "render",
]
