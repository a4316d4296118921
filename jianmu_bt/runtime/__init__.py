"""The tree runtime: run state, async nodes, the event-driven runner and run events.

Each name is imported from its module on first use (`jianmu_bt._lazy`), so a module that needs
one part (`jianmu_bt.runtime.templates`, `jianmu_bt.runtime.expressions`) does not load py_trees,
the runner and the state machinery with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jianmu_bt._lazy import lazy_exports

if TYPE_CHECKING:  # what type checkers and IDEs see
    from jianmu_bt.runtime.async_node import AsyncNode as AsyncNode, ContextNode as ContextNode
    from jianmu_bt.runtime.context import (
        NodeTimeoutError as NodeTimeoutError,
        RunContext as RunContext,
        TaskHandle as TaskHandle,
    )
    from jianmu_bt.runtime.durable import DurableRunError as DurableRunError
    from jianmu_bt.runtime.events import (
        Event as Event,
        EventBus as EventBus,
        TraceWriter as TraceWriter,
        read_trace as read_trace,
    )
    from jianmu_bt.runtime.journal import StoreFaultError as StoreFaultError
    from jianmu_bt.runtime.python_tree import PythonTree as PythonTree
    from jianmu_bt.runtime.reducers import Reducer as Reducer, ReducerSpec as ReducerSpec
    from jianmu_bt.runtime.runner import RunResult as RunResult, TreeRunner as TreeRunner
    from jianmu_bt.runtime.services import RunGuard as RunGuard
    from jianmu_bt.runtime.state import AgentState as AgentState, StateManager as StateManager
    from jianmu_bt.runtime.state_schema import (
        StateClosedError as StateClosedError,
        StateToolCall as StateToolCall,
        StateValidationError as StateValidationError,
        UnknownStateKeyError as UnknownStateKeyError,
    )
    from jianmu_bt.runtime.templates import (
        TemplateError as TemplateError,
        references as references,
        render as render,
    )
    from jianmu_bt.runtime.tree_desk import EditRefusedError as EditRefusedError

__getattr__, __dir__ = lazy_exports(__name__, globals())
