"""The `prompt:` key of `llm` and `agent` nodes: an MCP server's prompt as the node's template.

```yaml
- llm: {prompt: {mcp: docs, name: args-prompt, arguments: {city: "{city}"}}, output: answer}
```
The prompt is fetched from the server (`prompts/get`) each time the node asks its LLM, with its
arguments filled from state, and its messages go to the LLM after the system prompt, before the
conversation (`jianmu_bt.mcp.prompt_source`). This module imports nothing of the loader, so the
file model (`model`) can use it.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

_Name = Annotated[str, StringConstraints(min_length=1)]


class MCPPromptRef(BaseModel):
    """An MCP server's prompt: `{mcp: docs, name: args-prompt, arguments: {city: "{city}"}}`."""

    model_config = ConfigDict(extra="forbid")

    mcp: _Name = Field(description="The server: the `name:` or `prefix:` of an `mcp:` tools entry.")
    name: _Name = Field(description="The prompt's name on the server.")
    arguments: dict[_Name, Any] = Field(
        default_factory=dict,
        description="The prompt's arguments; strings may hold {key} references to state.",
    )


def prompt_field() -> Any:
    """The `prompt` field of a node config (a fresh FieldInfo for each model that has one)."""
    return Field(
        None,
        description="An MCP server's prompt whose messages the LLM gets before the conversation.",
    )


__all__ = ["MCPPromptRef", "prompt_field"]
