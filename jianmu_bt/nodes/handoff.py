"""Hand-offs: agents that pass one conversation between them until one of them answers.

```
Sequence "<name>"
├── AddMessage "<name>.goal"          the goal, once
└── HandoffGroup "<name>.agents"      ticks the active agent's loop; on a hand-off, the next
    ├── AgentLoop "Triage.loop"       (each: LLM turn -> ToolExecutor, as in `react_agent`)
    ├── AgentLoop "Billing.loop"
    └── AgentLoop "Tech.loop"
```
Each agent is offered a `transfer_to_<agent>` tool for each agent it may hand off to. When its
reply calls one, the call is answered ("Transferred to Billing.") so the conversation stays
whole, the agent's loop ends, and the group starts the named agent on the same conversation
(with its own system prompt, tools and LLM). The agent that answers without tools ends the group;
its answer is written to the output. More than `max_handoffs` hand-offs fail the group. The
choice of agent comes from the replies alone, so a durable run replays it from the journal.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import py_trees
from py_trees.common import Status

from jianmu_bt.llm import LLMProvider
from jianmu_bt.llm.limits import UsageLimits
from jianmu_bt.nodes.llm_node import AgentLLMNode
from jianmu_bt.tools import Tool, ToolSet
from jianmu_bt.tools.calls import ERROR_PREFIX

HANDOFF_PREFIX = "transfer_to_"


class HandoffTool(Tool):
    """Hands the conversation to `target` (answers the call; the group switches agents)."""

    blocking = False
    read_only = True  # it only answers; the group switches agents
    input_schema = {"type": "object", "properties": {}}

    def __init__(self, target: str, description: str = "") -> None:
        self.target = target
        self.name = handoff_tool_name(target)
        about = f": {description}" if description else ""
        self.description = f"Hand the conversation over to the agent {target}{about}"

    async def run(self, input: Any) -> str:
        """The observation the model reads after handing off."""
        return f"Transferred to {self.target}."


def handoff_tool_name(agent: str) -> str:
    """The name of the tool that hands off to `agent`."""
    return HANDOFF_PREFIX + re.sub(r"[^A-Za-z0-9_-]", "_", agent).lower()


@dataclass
class HandoffAgent:
    """One agent of a hand-off group: its tools, prompt, LLM, and whom it may hand off to
    (`handoffs`: None for every other agent of the group)."""

    name: str
    description: str = ""
    system_prompt: str | None = None
    tools: Sequence[Tool] = ()
    provider: LLMProvider | None = None
    handoffs: Sequence[str] | None = None
    max_iterations: int = 10
    limits: UsageLimits | None = None
    options: Any = None


class HandoffGroup(py_trees.composites.Composite):
    """Ticks the active agent's loop; switches agents on a hand-off (see the module)."""

    def __init__(
        self,
        name: str,
        loops: Sequence[py_trees.behaviour.Behaviour],
        targets: Sequence[Callable[[], str | None]],
        names: Sequence[str],
        *,
        start: int = 0,
        max_handoffs: int = 10,
    ) -> None:
        super().__init__(name=name, children=list(loops))
        self.targets = list(targets)
        self.names = list(names)
        self.start = start
        self.max_handoffs = max_handoffs
        self.active = start
        self.handoffs = 0

    def tick(self) -> Iterator[py_trees.behaviour.Behaviour]:
        """Tick the active agent; on its hand-off, make the named one active."""
        if self.status != Status.RUNNING:
            for child in self.children:
                if child.status != Status.INVALID:
                    child.stop(Status.INVALID)
            self.active, self.handoffs = self.start, 0
            self.feedback_message = ""
            self.initialise()
        child = self.children[self.active]
        self.current_child = child
        yield from child.tick()
        if child.status == Status.RUNNING:
            self.status = Status.RUNNING
        elif child.status == Status.FAILURE:
            self.feedback_message = f"{self.names[self.active]}: {child.feedback_message}"
            self.stop(Status.FAILURE)
        else:
            target = self.targets[self.active]()
            if target is None:
                self.feedback_message = f"answered by {self.names[self.active]}"
                self.stop(Status.SUCCESS)
            elif self.handoffs >= self.max_handoffs:
                self.feedback_message = f"more than {self.max_handoffs} hand-offs (max_handoffs)"
                self.stop(Status.FAILURE)
            else:
                self.handoffs += 1
                child.stop(Status.INVALID)
                self.active = self.names.index(target)
                self.status = Status.RUNNING  # the next tick starts the new agent
        yield self


def handoff_target(llm: AgentLLMNode) -> Callable[[], str | None]:
    """Whom `llm`'s last reply hands off to (None: nobody). A hand-off whose call was refused
    (the guard denied it: its tool message is an error) does not happen."""

    def target() -> str | None:
        response = llm.last_response
        if response is None:
            return None
        for call in response.tool_calls:
            tool = llm.toolset.get(call.name)
            if isinstance(tool, HandoffTool) and _answered(llm, call.id):
                return tool.target
        return None

    return target


def _answered(llm: AgentLLMNode, call_id: str | None) -> bool:
    """True when the conversation holds a successful answer to the call `call_id`."""
    for message in reversed(llm.state.read_port(llm.messages_key) or []):
        if message.get("role") == "tool" and message.get("tool_call_id") == call_id:
            return not str(message.get("content", "")).startswith(ERROR_PREFIX)
    return False


def handoff_tools(agent: HandoffAgent, group: Sequence[HandoffAgent]) -> ToolSet:
    """The agent's own tools and a hand-off tool for each agent it may hand off to."""
    names = [a.name for a in group]
    allowed = agent.handoffs if agent.handoffs is not None else names
    unknown = [name for name in allowed if name not in names]
    if unknown:
        raise ValueError(
            f"agent '{agent.name}' hands off to unknown agent(s) {', '.join(unknown)} "
            f"(the group has {', '.join(names)})"
        )
    about = {a.name: a.description for a in group}
    transfers = [HandoffTool(name, about[name]) for name in allowed if name != agent.name]
    return ToolSet.from_tools([*agent.tools, *transfers])


def _done(llm: AgentLLMNode, target: Callable[[], str | None]) -> Callable[[], bool]:
    """An agent's loop ends when it answered or handed off."""
    return lambda: llm.finished or target() is not None


def handoff_agents(
    name: str,
    agents: Sequence[HandoffAgent],
    *,
    goal: str | None = None,
    start: str | None = None,
    max_handoffs: int = 10,
    output_key: str | None = "final_answer",
    messages_key: str = "messages",
    actions_key: str = "actions",
) -> py_trees.behaviour.Behaviour:
    """A hand-off group as a subtree (see the module docstring); `start` names the first agent
    (default: the first of `agents`)."""
    from jianmu_bt.nodes.agent import AddMessage, AgentLoop
    from jianmu_bt.nodes.options import ExecutorOptions
    from jianmu_bt.nodes.tool_executor import ToolExecutor

    names = [agent.name for agent in agents]
    if not agents or len(set(names)) != len(names):
        raise ValueError(f"a hand-off group needs agents with distinct names, got {names}")
    if start is not None and start not in names:
        raise ValueError(f"start: no agent '{start}' in the group ({', '.join(names)})")
    loops, targets = [], []
    for agent in agents:
        tools = handoff_tools(agent, agents)
        llm = AgentLLMNode(
            agent.provider,
            tools,
            name=f"{agent.name}.llm",
            system_prompt=agent.system_prompt,
            messages_key=messages_key,
            actions_key=actions_key,
            answer_key=output_key,
            options=agent.options,
            limits=agent.limits,
        )
        executor = ToolExecutor(
            tools,
            name=f"{agent.name}.tools",
            options=ExecutorOptions(actions_key=actions_key, messages_key=messages_key),
        )
        turn = py_trees.composites.Sequence(f"{agent.name}.turn", memory=True,
                                            children=[llm, executor])  # fmt: skip
        target = handoff_target(llm)
        loops.append(
            AgentLoop(
                f"{agent.name}.loop",
                turn,
                done=_done(llm, target),
                max_iterations=agent.max_iterations,
            )
        )
        targets.append(target)
    group = HandoffGroup(
        f"{name}.agents",
        loops,
        targets,
        names,
        start=names.index(start) if start else 0,
        max_handoffs=max_handoffs,
    )
    children: list[py_trees.behaviour.Behaviour] = []
    if goal:
        children.append(AddMessage(f"{name}.goal", goal, messages_key=messages_key))
    children.append(group)
    return py_trees.composites.Sequence(name, memory=True, children=children)
