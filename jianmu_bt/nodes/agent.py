"""The agent loop as a subtree: LLM turn -> ToolExecutor -> done check, up to N iterations.

```
Sequence "<name>" (memory)
├── AddMessage "<name>.goal"        the goal (a template over state) as a user message, once
└── AgentLoop "<name>.loop"         repeats its child until the LLM answers without tools
    └── Sequence "<name>.turn"
        ├── AgentLLMNode "<name>.llm"
        └── ToolExecutor "<name>.tools"
```
`react_agent(...)` builds it; the YAML `agent` node builds the same thing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import py_trees
from py_trees.common import Status

from jianmu_bt.llm import LLMOptions, LLMProvider
from jianmu_bt.llm.limits import UsageLimits
from jianmu_bt.nodes.attachments import Attachment, content_parts
from jianmu_bt.nodes.llm_node import AgentLLMNode, PromptSource
from jianmu_bt.nodes.options import ExecutorOptions
from jianmu_bt.nodes.tool_executor import ToolExecutor
from jianmu_bt.nodes.turn_outcome import TurnPolicy
from jianmu_bt.runtime.async_node import ContextNode
from jianmu_bt.runtime.services import RunGuard
from jianmu_bt.runtime.templates import render
from jianmu_bt.store import JournalEntry, digest_arguments
from jianmu_bt.tools import Tool, ToolSet


class AddMessage(ContextNode):
    """Appends one message (its content a template over state) to a message list; SUCCESS.

    `attachments` (images and files, `jianmu_bt.nodes.attachments`) go with the text as content
    parts, read from `workspace` when they are paths.
    """

    def __init__(
        self,
        name: str,
        content: str,
        role: str = "user",
        messages_key: str = "messages",
        *,
        attachments: Sequence[Attachment] = (),
        workspace: Path | None = None,
    ) -> None:
        super().__init__(name=name)
        self.content = content
        self.role = role
        self.messages_key = messages_key
        self.attachments = tuple(attachments)
        self.workspace = workspace

    def update(self) -> Status:
        try:
            text = render(self.content, self.state.get)
            text = text if isinstance(text, str) else str(text)
            content: Any = text
            if self.attachments:
                content = [{"type": "text", "text": text}, *self._attachment_parts()]
            message = {"role": self.role, "content": content}
            self.state.append_port_messages(message, key=self.messages_key)
        except Exception as exc:  # a bad reference is this node's failure, not the tree's crash
            self.feedback_message = f"{type(exc).__name__}: {exc}"
            return Status.FAILURE
        return Status.SUCCESS

    def _attachment_parts(self) -> list[dict[str, Any]]:
        """The attachments' content parts; in a durable run read once and kept in the journal,
        so a resumed run sends what the model saw even when the files changed since."""
        journal = self.context.journal if self.context is not None else None
        if journal is None:
            return content_parts(self.attachments, self.state.get, self.workspace)
        key = journal.next_key(self.node_key)
        record = journal.recorded(key)
        if record is not None and record.status == "done":
            return list(record.result["parts"])
        parts = content_parts(self.attachments, self.state.get, self.workspace)
        sources = [a.source for a in self.attachments]
        entry = JournalEntry(key=key, call_id=key, kind="input", node=self.node_key,
                             tool="attachments", arguments={"sources": sources},
                             digest=digest_arguments("attachments", sources), status="done",
                             result={"parts": parts})  # fmt: skip
        journal.record_outcome(entry)
        return parts


class AgentLoop(py_trees.decorators.Decorator):
    """Re-runs its child until `done()` after a successful pass, at most `max_iterations` passes.

    A child FAILURE is the loop's FAILURE (the reason is the child's); running out of iterations
    is FAILURE with a reason that says so.
    """

    def __init__(
        self,
        name: str,
        child: py_trees.behaviour.Behaviour,
        done: Callable[[], bool],
        max_iterations: int = 10,
    ) -> None:
        super().__init__(name=name, child=child)
        if max_iterations < 1:
            raise ValueError(f"max_iterations must be at least 1, got {max_iterations}")
        self.done = done
        self.max_iterations = max_iterations
        self.iterations = 0

    def initialise(self) -> None:
        self.iterations = 0
        self.feedback_message = ""

    def update(self) -> Status:
        status = self.decorated.status
        if status == Status.FAILURE:
            self.feedback_message = self.decorated.feedback_message
            return Status.FAILURE
        if status != Status.SUCCESS:
            return Status.RUNNING
        self.iterations += 1
        if self.done():
            self.feedback_message = f"answered after {self.iterations} iteration(s)"
            return Status.SUCCESS
        if self.iterations >= self.max_iterations:
            self.feedback_message = (
                f"no final answer after {self.max_iterations} iterations (max_iterations)"
            )
            return Status.FAILURE
        self.decorated.stop(Status.INVALID)  # the next tick starts the next iteration
        return Status.RUNNING


def react_agent(
    name: str = "Agent",
    *,
    tools: ToolSet | list[Tool] | None = None,
    provider: LLMProvider | None = None,
    goal: str | None = None,
    system_prompt: str | None = None,
    max_iterations: int = 10,
    output_key: str | None = "final_answer",
    messages_key: str = "messages",
    actions_key: str = "actions",
    options: LLMOptions | Mapping[str, Any] | None = None,
    tool_options: ExecutorOptions | None = None,
    stream: bool = False,
    guard: RunGuard | None = None,
    prompt: PromptSource | None = None,
    policy: TurnPolicy | None = None,
    limits: UsageLimits | None = None,
    attachments: Sequence[Attachment] = (),
    workspace: Path | None = None,
) -> py_trees.behaviour.Behaviour:
    """A ReAct agent subtree: the LLM picks tools, the executor runs them, until an answer.

    `goal` (a template over state, e.g. "Solve: {question}") is added as a user message when the
    subtree starts; the answer lands in `output_key`. `provider` defaults to the run's
    `services["llm"]`; `guard` (a GuardEnforcer) to the run's `services["guard"]`. `options` are
    the LLM's; `tool_options` the executor's (execution mode, retries, timeouts), whose
    `messages_key` and `actions_key` are the agent's own. `prompt` (e.g. an MCP server's
    prompt, `jianmu_bt.mcp.prompt_source`) gives messages that start every turn's request,
    after the system prompt. `policy` says how replies are taken (a typed `output`, refusals,
    cut-off replies: `TurnPolicy`); `limits` are this agent's usage limits (`UsageLimits`).
    `attachments` (images, files) go with the goal, paths read from `workspace`.
    """
    toolset = tools if isinstance(tools, ToolSet) else ToolSet.from_tools(tools or [])
    llm = AgentLLMNode(
        provider,
        toolset,
        name=f"{name}.llm",
        system_prompt=system_prompt,
        messages_key=messages_key,
        actions_key=actions_key,
        answer_key=output_key,
        options=options,
        stream=stream,
        prompt=prompt,
        policy=policy,
        limits=limits,
    )
    executor_options = dataclasses.replace(
        tool_options or ExecutorOptions(), actions_key=actions_key, messages_key=messages_key
    )
    executor = ToolExecutor(toolset, name=f"{name}.tools", options=executor_options, guard=guard)
    turn = py_trees.composites.Sequence(f"{name}.turn", memory=True, children=[llm, executor])
    loop = AgentLoop(f"{name}.loop", turn, done=lambda: llm.finished, max_iterations=max_iterations)
    children: list[py_trees.behaviour.Behaviour] = []
    if goal:
        children.append(
            AddMessage(
                f"{name}.goal",
                goal,
                messages_key=messages_key,
                attachments=attachments,
                workspace=workspace,
            )
        )
    children.append(loop)
    return py_trees.composites.Sequence(name, memory=True, children=children)
