"""An MCP server's resources as two tools an agent can call (`resources: true` of an `mcp:` entry).

- `<prefix>_list_resources` (no arguments): one JSON object a line per resource (`uri`) and
  template (`uri_template`), with name, MIME type and a short description;
- `<prefix>_read_resource` (`uri`): the resource's text (a blob as a stand-in unless it is
  text-ish), cut at 100,000 characters.

Both are read-only (parallel safe, no effect tags). Every fault (an unknown URI, a timeout, a
server gone) is a failed ToolResult whose error the model can read and act on, never an exception.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from jianmu_bt.mcp.errors import MCPClientError
from jianmu_bt.mcp.faults import METHOD_NOT_FOUND
from jianmu_bt.mcp.resources import DEFAULT_MAX_CHARS, contents_text, resource_listing
from jianmu_bt.tools.base import Tool
from jianmu_bt.tools.calls import ToolResult

if TYPE_CHECKING:
    from jianmu_bt.mcp.client import MCPClient

#: An unfilled `{placeholder}` of a URI template.
_PLACEHOLDER = re.compile(r"\{[^{}]*\}")


class ListResourcesTool(Tool):
    """Lists an MCP server's resources and resource templates for a model."""

    blocking = False
    parallel_safe = True
    read_only = True
    effect_tags = ()
    input_schema = {"type": "object", "properties": {}, "additionalProperties": False}
    output_schema = {"type": "string"}

    def __init__(self, client: MCPClient, name: str) -> None:
        self.client = client
        self.name = name
        self.description = (
            f"List the resources of MCP server '{client.name}': one JSON object a line, with "
            "`uri` (read it with the read tool) or `uri_template` (fill in each {placeholder} "
            "first), and its name, MIME type and description."
        )

    async def run(self, input: Any) -> ToolResult:
        """The listing as text; a failed result when the server cannot list."""
        try:
            resources = await self.client.list_resources()
            try:
                templates = await self.client.list_resource_templates()
            except MCPClientError as exc:
                if exc.code != METHOD_NOT_FOUND:
                    raise
                templates = []  # a server may list resources without offering templates
        except MCPClientError as exc:
            return ToolResult.failure(self.name, f"Error: {exc}")
        return ToolResult(tool=self.name, ok=True, output=resource_listing(resources, templates))

    def __repr__(self) -> str:
        return f"<ListResourcesTool {self.name!r} of {self.client.name!r}>"


class ReadResourceTool(Tool):
    """Reads one resource of an MCP server (a listed URI or a filled-in template) as text."""

    blocking = False
    parallel_safe = True
    read_only = True
    effect_tags = ()
    output_schema = {"type": "string"}

    def __init__(self, client: MCPClient, name: str, *, max_chars: int = DEFAULT_MAX_CHARS) -> None:
        self.client = client
        self.name = name
        self.max_chars = max_chars
        self.description = (
            f"Read a resource of MCP server '{client.name}' by its URI (from the list tool; "
            "for a template, the URI with every {placeholder} filled in). Answers its text; "
            f"binary content is described, not sent; at most {max_chars} characters."
        )
        self.input_schema = {
            "type": "object",
            "properties": {
                "uri": {"type": "string", "description": "the resource's URI, e.g. demo://x/1"}
            },
            "required": ["uri"],
            "additionalProperties": False,
        }

    async def run(self, input: Any) -> ToolResult:
        """The resource's text; a failed result for a bad `uri` or a server fault."""
        uri = input.get("uri") if isinstance(input, dict) else None
        if not isinstance(uri, str) or not uri.strip():
            return ToolResult.failure(
                self.name, "Error: the argument `uri` (a resource URI, a string) is required"
            )
        unfilled = _PLACEHOLDER.findall(uri)
        if unfilled:
            return ToolResult.failure(
                self.name,
                f"Error: {uri!r} is a URI template: replace {', '.join(unfilled)} with "
                "values before reading it",
            )
        try:
            contents = await self.client.read_resource(uri.strip())
        except MCPClientError as exc:
            return ToolResult.failure(self.name, f"Error: {exc}")
        text = contents_text(contents, max_chars=self.max_chars)
        return ToolResult(tool=self.name, ok=True, output=text)

    def __repr__(self) -> str:
        return f"<ReadResourceTool {self.name!r} of {self.client.name!r}>"


__all__ = ["ListResourcesTool", "ReadResourceTool"]
