"""An MCP server's prompt as the template of an LLM node (the YAML `prompt:` key).

`prompt_source(client, name, arguments)` gives the async callable an `AgentLLMNode` takes as
`prompt`: each time the node asks its LLM, it fills the arguments from state (`{key}`
templates), gets the prompt (`prompts/get`) and converts its messages
(`jianmu_bt.mcp.prompts.prompt_messages`). A fault (an unknown prompt, a missing argument, a
server that is gone, a prompt larger than `prompt_messages` takes) raises PromptFetchError,
which fails the node with the server's words.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from jianmu_bt.mcp.errors import MCPClientError, MCPContentTooLargeError
from jianmu_bt.mcp.prompts import prompt_messages
from jianmu_bt.runtime.templates import TemplateError, render

if TYPE_CHECKING:
    from jianmu_bt.mcp.client import MCPClient
    from jianmu_bt.nodes.llm_node import Lookup, PromptSource


class PromptFetchError(RuntimeError):
    """An MCP prompt could not be had for an LLM node; the message names server and prompt."""


def argument_text(value: Any) -> str | None:
    """A prompt argument as the text MCP carries (None: left out): JSON for lists and dicts."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def prompt_source(
    client: MCPClient,
    name: str,
    arguments: Mapping[str, Any] | None = None,
    *,
    server: str | None = None,
) -> PromptSource:
    """An async `source(lookup) -> messages` for the prompt `name` of `client`'s server
    (`server`: the name messages give it, by default the client's)."""
    templates = dict(arguments or {})

    async def fetch(lookup: Lookup) -> list[dict[str, Any]]:
        try:
            rendered = render(templates, lookup)
        except TemplateError as exc:
            raise PromptFetchError(f"the arguments of MCP prompt '{name}': {exc}") from None
        values = {
            key: text for key, v in rendered.items() if (text := argument_text(v)) is not None
        }
        try:
            result = await client.get_prompt(name, values)
        except MCPClientError as exc:
            raise PromptFetchError(f"MCP prompt '{name}' could not be had: {exc}") from None
        try:
            what = f"MCP prompt '{name}' of server '{server or client.name}'"
            return prompt_messages(result, what=what)
        except MCPContentTooLargeError as exc:
            raise PromptFetchError(str(exc)) from None

    return fetch


__all__ = ["PromptFetchError", "argument_text", "prompt_source"]
