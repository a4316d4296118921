"""The `{agent: ...}` entry of a tree file's `tools:`: an agent offered to other agents as a tool
(built as a `jianmu_bt.nodes.agent_tool.AgentTool` by `jianmu_bt.loader.tools_config`)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from jianmu_bt.guard import GuardConfig
from jianmu_bt.llm import LLMConfig
from jianmu_bt.llm.limits import UsageLimits

_Text = Annotated[str, StringConstraints(min_length=1)]


class AgentToolConfig(BaseModel):
    """An agent offered to other agents as a tool (`jianmu_bt.nodes.agent_tool.AgentTool`)."""

    model_config = ConfigDict(extra="forbid")

    name: Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_-]*$")] = Field(
        description="The tool's name, as other agents call it."
    )
    description: _Text = Field(description="What the agent does, for the calling model.")
    goal: _Text = Field("{task}", description="Its task; {name}s are the call's arguments.")
    input: dict[str, Any] | None = Field(
        None, description="JSON Schema of the arguments (default: one string `task`)."
    )
    tools: list[_Text] = Field(default_factory=list, description="The tools it may use.")
    system_prompt: str | None = Field(None, description="Its system prompt.")
    max_iterations: int = Field(10, ge=1, description="Its most LLM turns per call.")
    llm: LLMConfig | None = Field(None, description="Its own LLM (default: the caller's).")
    guard: GuardConfig | None = Field(None, description="Its own guard, under the caller's.")
    limits: UsageLimits | None = Field(None, description="Its budgets for one call.")
    output_schema: dict[str, Any] | None = Field(None, description="A typed answer's schema.")


class AgentToolEntry(BaseModel):
    """`{agent: {name: researcher, description: ..., goal: ..., tools: [...]}}`."""

    model_config = ConfigDict(extra="forbid")

    agent: AgentToolConfig
