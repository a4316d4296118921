"""ToolNode: one tool as an explicit step of a behaviour tree.

The node reads its input from state (`input_key`, or `arguments` with `{key}` references), runs
the tool (through a runner when one is set), normalises the result with `ToolResult.from_raw`,
writes the output to `output_key` and succeeds; a failed result (including an "Error: ..." string)
is FAILURE with the error in `feedback_message`. The run's guard, when there is one, is asked
first: a refused call is FAILURE with the guard's reason, a PENDING one waits for approval.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jianmu_bt.nodes.calling import RetryPolicy, run_tool_call
from jianmu_bt.nodes.guarding import verdicts_when_decided
from jianmu_bt.runtime.async_node import AsyncNode
from jianmu_bt.runtime.templates import render
from jianmu_bt.tools import Tool, ToolCall, ToolResult, new_call_id
from jianmu_bt.tools.base import set_node_factory


class ToolNode(AsyncNode):
    """Runs `tool` once per entry; SUCCESS when the tool succeeded, FAILURE otherwise.

    Input: `arguments` (a value or dict whose strings may hold `{key}` references to state) when
    given, else the state value at `input_key`, else no arguments. A dict input is passed as
    keyword arguments; `None` becomes `{}`; any other value is the tool's bare input (a tool with a
    string input schema, or a one-parameter function tool, takes it as is).
    """

    def __init__(
        self,
        tool: Tool,
        name: str | None = None,
        input_key: str | None = None,
        output_key: str | None = None,
        *,
        arguments: Any = None,
        injected: Mapping[str, Any] | None = None,
        runner: Any = None,
        call_timeout: float | None = None,
        max_retries: int = 0,
        retry_backoff: float = 0.5,
        timeout: float | None = None,
    ) -> None:
        super().__init__(name=name or tool.name, timeout=timeout)
        self.tool = tool
        self.input_key = input_key
        self.output_key = output_key
        self.arguments = arguments
        self.injected = dict(injected) if injected else None
        self.runner = runner
        self.call_timeout = call_timeout
        self.retry = RetryPolicy(max_retries=max_retries, backoff=retry_backoff)
        self.last_result: ToolResult | None = None

    def resolve_input(self) -> Any:
        """The arguments for this entry, from `arguments` or `input_key`."""
        if self.arguments is not None:
            return render(self.arguments, self.state.get)
        if self.input_key is not None:
            value = self.state.read_port(self.input_key)
            return {} if value is None else value
        return {}

    async def run_async(self) -> bool:
        call = ToolCall(self.tool.name, self.resolve_input(), new_call_id())
        guard = self.context.services.get("guard") if self.context else None
        if guard is not None:
            refusal = await self._ask_guard(guard, call)
            if refusal is not None:
                self.last_result = refusal
                self.feedback_message = refusal.error or ""
                self.emit("tool.call.failed", tool=call.name, call_id=call.id, error=refusal.error)
                return False
        result = await run_tool_call(
            self.context,
            self.name,
            self.tool,
            call,
            retry=self.retry,
            timeout=self.call_timeout,
            injected=self.injected,
            runner=self.runner,
            guard=guard,
        )
        self.last_result = result
        if not result.ok:
            self.feedback_message = result.error or "the tool failed"
            return False
        if self.output_key is not None:
            self.state.write_port(self.output_key, result.output)
        return True

    async def _ask_guard(self, guard: Any, call: ToolCall) -> ToolResult | None:
        def held(pending: list[Any]) -> None:
            self.feedback_message = "waiting for approval"
            for verdict in pending:
                self.emit(
                    "guard.decision",
                    tool=call.name,
                    call_id=call.id,
                    decision="pending",
                    reason=verdict.reason,
                )

        (verdict,) = await verdicts_when_decided(
            guard, lambda: [guard.check(call, self.tool)], held
        )
        self.feedback_message = ""
        if verdict.allowed:
            return None
        self.emit(
            "guard.decision",
            tool=call.name,
            call_id=call.id,
            decision=verdict.decision.value,
            reason=verdict.reason,
        )
        return verdict.to_result()


def _tool_node_factory(tool: Tool, **kwargs: Any) -> ToolNode:
    return ToolNode(tool, **kwargs)


set_node_factory(_tool_node_factory)
