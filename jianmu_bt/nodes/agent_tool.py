"""AgentTool: an agent offered to another agent as a tool.

```python
researcher = AgentTool(
    "researcher", "Answers a research question with sources.",
    goal="Research: {task}", tools=[web_search], max_iterations=5,
    limits=UsageLimits(requests=6),
)
lead = react_agent("Lead", tools=[researcher, calculator], goal="{question}")
```
A call runs the agent as a run of its own inside the caller's run: its own conversation (the
call's arguments fill the goal's `{...}` references), the caller's LLM unless it has its own,
the caller's guard as a floor under its own (`LayeredGuard`: its own can only add refusals), the
caller's runner (sandbox) for its tools, the run's usage limits as well as its own budgets
(`limits`). Its final answer (a typed output's JSON) is the call's result; a failed run is a
failed call whose error says why. Its usage comes back with the result (a `MeteredResult`, kept in
the journal) and is added to the caller's run `usage`, also when a resumed run replays the call;
its LLM turns and tool calls appear among the caller's events, named `<tool>.llm` and
`<tool>.tools`. In a durable run the call is journaled like any other: a call that finished is
answered from the journal; one in flight at a crash runs again when every tool of the agent is
read-only (the agent tool is then read-only), and is otherwise held as in doubt. Its effect tags
are its tools' effects together (`unknown` for a tool that declares none and is not read-only).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from pydantic import create_model

from jianmu_bt.llm.limits import UsageLimits
from jianmu_bt.llm.output import checked_validator
from jianmu_bt.nodes.calling import RUN_KEY, RUNNER_KEY, MeteredResult
from jianmu_bt.nodes.turn_outcome import TurnPolicy
from jianmu_bt.runtime.context import RunContext
from jianmu_bt.runtime.state_schema import AgentState
from jianmu_bt.tools import Tool, ToolResult, ToolSet
from jianmu_bt.tools.effects import counted_effects

FORWARDED = ("llm.request", "llm.response", "llm.delta", "llm.reasoning", "tool.call.")
"""The events of the inner run that reach the caller's run (by type prefix)."""

TASK_SCHEMA = {
    "type": "object",
    "properties": {"task": {"type": "string", "description": "What the agent is asked to do."}},
    "required": ["task"],
}


class AgentTool(Tool):
    """A react agent as a tool (see the module docstring)."""

    needs_run: ClassVar[bool] = True
    blocking = False

    def __init__(
        self,
        name: str,
        description: str,
        *,
        goal: str = "{task}",
        tools: ToolSet | Sequence[Tool] = (),
        provider: Any = None,
        system_prompt: str | None = None,
        max_iterations: int = 10,
        policy: TurnPolicy | None = None,
        limits: UsageLimits | None = None,
        guard: Any = None,
        input_schema: Mapping[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.description = description
        self.goal = goal
        self.toolset = tools if isinstance(tools, ToolSet) else ToolSet.from_tools(list(tools))
        self.provider = provider
        self.system_prompt = system_prompt
        self.max_iterations = max_iterations
        self.policy = policy
        self.limits = limits
        self.guard = guard
        self.input_schema = dict(input_schema or TASK_SCHEMA)
        self._checker = checked_validator(self.input_schema)  # ValueError for a broken schema
        self.effect_tags = tuple(
            sorted({tag for tool in self.toolset for tag in counted_effects(tool)})
        )
        self.read_only = all(getattr(tool, "read_only", False) for tool in self.toolset)

    @functools.cached_property
    def _state_model(self) -> type[AgentState]:
        """The inner run's state: the agent's fields, one per argument, and its answer."""
        fields: dict[str, Any] = {key: (Any, None) for key in self.input_schema["properties"]}
        fields["answer"] = (Any, None)
        return create_model(f"{self.name}_state", __base__=AgentState, **fields)

    async def run(self, input: Any) -> Any:
        """Run the agent on the call's arguments; its answer, or a failed result."""
        from jianmu_bt.nodes.agent import react_agent  # the subtree builder imports this layer
        from jianmu_bt.runtime.runner import TreeRunner
        from jianmu_bt.runtime.state import StateManager

        arguments = dict(input) if isinstance(input, Mapping) else {"task": input}
        caller: RunContext | None = arguments.pop(RUN_KEY, None)
        runner = arguments.pop(RUNNER_KEY, None)
        errors = [error.message for error in self._checker.iter_errors(arguments)]
        if errors:
            return ToolResult.failure(
                self.name, f"Error: invalid arguments for '{self.name}': {'; '.join(errors)}"
            )
        provider = self.provider or (caller.llm if caller is not None else None)
        subtree = react_agent(
            self.name,
            tools=self.toolset,
            provider=provider,
            goal=self.goal,
            system_prompt=self.system_prompt,
            max_iterations=self.max_iterations,
            output_key="answer",
            policy=self.policy,
            limits=self.limits,
        )
        services: dict[str, Any] = {"guard": self._guard(caller), "runner": runner}
        # The run's usage so far starts the inner run's, so the run's limits hold inside it.
        before: dict[str, Any] = {}
        if caller is not None:
            services["limits"] = caller.services.get("limits")
            if "usage" in caller.state.fields:
                before = dict(caller.state.get("usage") or {})
        inner = TreeRunner(subtree, StateManager(self._state_model), services=services)
        if caller is not None:
            inner.context.events.subscribe(functools.partial(_forward, caller, self.name))
        result = await inner.arun({**arguments, "usage": before} if before else arguments)
        after = result.state.get("usage") or {}
        spent = {name: value - before.get(name, 0) for name, value in after.items()}
        spent = {name: value for name, value in spent.items() if value}
        if not result.ok:
            reason = f"Error: the agent '{self.name}' did not answer: {result.reason}"
            return MeteredResult(self.name, False, None, reason, usage=spent)
        answer = result.state.get("answer")
        dump = getattr(answer, "model_dump", None)
        output = dump(mode="json") if callable(dump) else answer
        return MeteredResult(self.name, True, output, None, usage=spent)

    def _guard(self, caller: RunContext | None) -> Any:
        """The caller's guard as a floor under the agent's own."""
        outer = caller.guard if caller is not None else None
        if self.guard is None:
            return outer
        from jianmu_bt.guard import LayeredGuard

        return LayeredGuard(outer, self.guard)  # type: ignore[arg-type]  # a run's guard is one


def _forward(caller: RunContext, agent: str, event: Any) -> None:
    """Pass an inner run's LLM and tool events on to the caller's run, naming the agent."""
    if event.type.startswith(FORWARDED):
        caller.events.emit(event.type, event.node, **{**event.data, "agent": agent})
