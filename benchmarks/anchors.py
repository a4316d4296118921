"""Anchors shared by several areas: LangGraph's prebuilt ToolNode, and the jianmu side of a batch.

`LangGraphBatch` runs a batch of tool calls through LangGraph's `ToolNode` (bare, and as the only
node of a compiled graph); `executor_batch` runs the same batch the way a jianmu tree does (calls
written to `actions`, a `TreeRunner` run of a `ToolExecutor`, one tool message per call).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from benchmarks.harness import optional
from jianmu_bt.nodes import ExecutorOptions, ToolExecutor
from jianmu_bt.runtime import AgentState, StateManager, TreeRunner


def executor_batch(
    name: str, tools: list, count: int, **options: Any
) -> Callable[[], Awaitable[None]]:
    """One batch as a user sees it: `count` actions written to state, a run, the tool messages."""
    state = StateManager(AgentState)
    runner = TreeRunner(ToolExecutor(tools, options=ExecutorOptions(**options)), state)

    async def batch() -> None:
        calls = [{"id": f"call_{i}", "name": name, "arguments": {"x": i}} for i in range(count)]
        state.set("messages", [])  # the ids repeat: earlier answers would mark them done
        state.set("actions", calls)
        result = await runner.arun()
        assert result.ok and len(result.state["messages"]) == count, result.reason

    return batch


def executor_node_batch(
    name: str, tools: list, count: int, options: ExecutorOptions | None = None
) -> Callable[[], Awaitable[None]]:
    """The same batch through the ToolExecutor node's own work (`run_async`), without a run."""
    state = StateManager(AgentState)
    node = ToolExecutor(tools, options=options)
    TreeRunner(node, state)  # binds the node to the state; run_async is then called directly

    async def batch() -> None:
        calls = [{"id": f"call_{i}", "name": name, "arguments": {"x": i}} for i in range(count)]
        state.set("messages", [])
        state.set("actions", calls)
        await node.run_async()
        assert len(state.get("messages")) == count

    return batch


class LangGraphBatch:
    """LangGraph's prebuilt ToolNode on the given functions: bare, and as a one-node graph.

    `LangGraphBatch.load(functions)` returns None and the reason when LangGraph is missing.
    """

    @classmethod
    def load(cls, functions: list[Callable[..., Any]]) -> tuple[LangGraphBatch | None, str]:
        """The anchor, or None and why it cannot run here."""
        for module in ("langchain_core", "langgraph"):
            _, missing = optional(module)
            if missing:
                return None, missing
        return cls(functions), ""

    def __init__(self, functions: list[Callable[..., Any]]) -> None:
        from langchain_core.messages import AIMessage
        from langchain_core.tools import tool as lc_tool
        from langgraph.graph import END, START, MessagesState, StateGraph
        from langgraph.prebuilt import ToolNode as LangGraphToolNode
        from langgraph.runtime import Runtime

        self.message = AIMessage
        self.node = LangGraphToolNode([lc_tool(fn) for fn in functions])
        # Outside a graph the node asks for a runtime in its config (FIELD-NOTES.md).
        self.config = {"configurable": {"__pregel_runtime": Runtime()}}
        builder = StateGraph(MessagesState)
        builder.add_node("tools", self.node)
        builder.add_edge(START, "tools")
        builder.add_edge("tools", END)
        self.graph = builder.compile()

    def _input(self, name: str, count: int) -> dict[str, Any]:
        calls = [{"id": f"call_{i}", "name": name, "args": {"x": i}} for i in range(count)]
        return {"messages": [self.message(content="", tool_calls=calls)]}

    def node_batch(
        self, name: str, count: int, sync: bool = False
    ) -> Callable[[], Awaitable[None]]:
        """One batch through the bare ToolNode (`invoke` when `sync`, else `ainvoke`)."""

        async def batch() -> None:
            data = self._input(name, count)  # as ours writes its calls to state in each batch
            if sync:
                out = self.node.invoke(data, self.config)
            else:
                out = await self.node.ainvoke(data, self.config)
            assert len(out["messages"]) == count

        return batch

    def graph_batch(
        self, name: str, count: int, sync: bool = False
    ) -> Callable[[], Awaitable[None]]:
        """One batch through a compiled graph whose only node is the ToolNode."""

        async def batch() -> None:
            data = self._input(name, count)
            out = self.graph.invoke(data) if sync else await self.graph.ainvoke(data)
            assert len(out["messages"]) == count + 1  # the AI message and one answer per call

        return batch
