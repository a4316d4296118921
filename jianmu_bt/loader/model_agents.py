"""The tree file's agent node configs: the `llm` turn, the `agent` loop, the `handoff` group,
and the keys they share for taking replies (typed outputs, refusals, cut-off replies, limits).

Split from `jianmu_bt.loader.model` (the file format's other models), whose `NodeConfig` they
extend; the kinds that use them register them (`kinds_work`, `kinds_agent`, `kinds_handoff`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from jianmu_bt.guard import GuardConfig
from jianmu_bt.llm import LLMConfig, LLMOptions
from jianmu_bt.llm.limits import UsageLimits
from jianmu_bt.loader.model import ExecutionMode, NodeConfig, StateKey, Text
from jianmu_bt.loader.prompt_model import MCPPromptRef, prompt_field


class OutputCheck(BaseModel):
    """A condition a typed answer must meet: an expression over the answer's fields (and
    `output`, the whole answer); `message` is what the model is told when it does not."""

    model_config = ConfigDict(extra="forbid")

    check: Text = Field(description="An expression over the answer, e.g. 'len(items) > 0'.")
    message: str | None = Field(None, description="What to tell the model when it fails.")


class AnswerConfig(NodeConfig):
    """How an LLM's replies are taken: typed output, refusals, cut-off replies, usage limits."""

    output_schema: dict[str, Any] | None = Field(
        None, description="JSON Schema of the final answer (a typed object in state)."
    )
    output_retries: int = Field(2, ge=0, description="Re-asks after an answer that does not fit.")
    output_checks: list[OutputCheck] = Field(
        default_factory=list, description="Conditions the typed answer must meet."
    )
    on_refusal: Literal["fail", "answer"] = Field(
        "fail", description="A refusal fails the node, or is the answer."
    )
    on_length: Literal["fail", "continue", "accept"] = Field(
        "fail", description="A reply cut off at max_tokens: fail, continue it, or accept it."
    )
    limits: UsageLimits | None = Field(None, description="Usage limits of this node.")


class LLMStepConfig(AnswerConfig):
    """One LLM turn: messages and tool schemas in, the reply and its tool calls out."""

    tools: list[Text] | None = Field(None, description="Tools offered (default: all).")
    system_prompt: str | None = Field(None, description="System prompt; may hold {key}s.")
    prompt: MCPPromptRef | None = prompt_field()
    output: StateKey | None = Field("final_answer", description="Where a final answer goes.")
    stream: bool = Field(False, description="Stream the reply (llm.delta events).")
    options: LLMOptions | None = Field(None, description="Per-call LLM options.")
    messages_key: StateKey = Field("messages", description="The conversation's field.")
    actions_key: StateKey = Field("actions", description="Where tool calls are written.")
    timeout: float | None = Field(None, gt=0, description="Seconds the turn may take.")


class AttachmentEntry(BaseModel):
    """An image or a file sent with the goal: `{image: ...}` or `{file: ...}`, a template over
    state resolving to bytes, a URL or a path inside the workspace."""

    model_config = ConfigDict(extra="forbid")

    image: Text | None = Field(None, description="An image: bytes, a URL or a path.")
    file: Text | None = Field(None, description="A file (e.g. a PDF): bytes or a path.")

    @model_validator(mode="after")
    def _one(self) -> AttachmentEntry:
        if (self.image is None) == (self.file is None):
            raise ValueError("an attachment is either {image: ...} or {file: ...}")
        return self


class AgentConfig(AnswerConfig):
    """A ReAct agent loop: LLM turn -> tool executor, until an answer or `max_iterations`."""

    goal: str | None = Field(None, description="The task, added as a user message; {key}s.")
    attachments: list[AttachmentEntry] = Field(
        default_factory=list, description="Images and files sent with the goal."
    )
    tools: list[Text] | None = Field(None, description="Tools the agent may use (default: all).")
    system_prompt: str | None = Field(None, description="System prompt; may hold {key}s.")
    prompt: MCPPromptRef | None = prompt_field()
    max_iterations: int = Field(10, ge=1, description="Most LLM turns.")
    output: StateKey | None = Field("final_answer", description="Where the answer goes.")
    execution_mode: ExecutionMode = Field("auto", description="How a batch of calls runs.")
    stream: bool = Field(False, description="Stream replies (llm.delta events).")
    llm: LLMConfig | None = Field(None, description="This agent's own LLM (default: the file's).")
    guard: GuardConfig | None = Field(None, description="This agent's own guard.")
    options: LLMOptions | None = Field(None, description="Per-call LLM options.")
    messages_key: StateKey = Field("messages", description="The conversation's field.")
    max_retries: int = Field(0, ge=0, description="Retries after a failed tool call.")
    call_timeout: float | None = Field(None, gt=0, description="Seconds one tool call may take.")


class HandoffMember(BaseModel):
    """One agent of a hand-off group."""

    model_config = ConfigDict(extra="forbid")

    name: Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_-]*$")] = Field(
        description="The agent's name (its hand-off tool is transfer_to_<name>)."
    )
    description: str = Field("", description="What it does, for the agents handing off to it.")
    system_prompt: str | None = Field(None, description="Its system prompt; may hold {key}s.")
    tools: list[Text] = Field(default_factory=list, description="Its own tools.")
    handoffs: list[str] | None = Field(
        None, description="The agents it may hand off to (default: every other one)."
    )
    llm: LLMConfig | None = Field(None, description="Its own LLM (default: the file's).")
    max_iterations: int = Field(10, ge=1, description="Its most LLM turns each time it is active.")
    limits: UsageLimits | None = Field(None, description="Its usage limits.")
    options: LLMOptions | None = Field(None, description="Per-call LLM options.")


class HandoffConfig(NodeConfig):
    """Agents that pass one conversation between them until one of them answers."""

    goal: str | None = Field(None, description="The task, added as a user message; {key}s.")
    agents: list[HandoffMember] = Field(min_length=2, description="The agents, in order.")
    start: str | None = Field(None, description="The first agent (default: the first listed).")
    max_handoffs: int = Field(10, ge=0, description="Most hand-offs before the group fails.")
    output: StateKey | None = Field("final_answer", description="Where the answer goes.")
    messages_key: StateKey = Field("messages", description="The conversation's field.")
