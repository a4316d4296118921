"""An MCP server (the official SDK's MCPServer, over stdio) with resources and prompts.

| resource / prompt / tool       | what                                                           |
|--------------------------------|----------------------------------------------------------------|
| `notes://readme`               | static text resource (text/markdown)                           |
| `notes://logo`                 | static blob resource (image/png, 4 bytes)                      |
| `notes://big`                  | static text resource of 300,000 characters                     |
| `notes://slow`                 | text, answered after 30 s (for timeouts)                       |
| `notes://item/{index}`         | template: `item <index>`                                       |
| prompt `greet(name)`           | one user message: `Say hello to <name>.`                       |
| prompt `review(uri)`           | a user text message and an embedded resource (`uri`'s text)    |
| tool `touch(uri)`              | announces that `uri` was updated (both protocol eras)          |

Enough distinct pages of resources for pagination are not needed: the SDK lists in one page.
"""

from __future__ import annotations

import anyio
import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts.base import AssistantMessage, Message, UserMessage

server = MCPServer("notes")

README = "# Notes\nThe notes server keeps a readme, a logo and numbered items."


@server.resource("notes://readme", name="readme", mime_type="text/markdown")
def readme() -> str:
    """The readme of the notes."""
    return README


@server.resource("notes://logo", name="logo", mime_type="image/png")
def logo() -> bytes:
    """A logo (not really a PNG: four bytes)."""
    return b"\x89PNG"


@server.resource("notes://big", name="big", mime_type="text/plain")
def big() -> str:
    """A large text."""
    return "x" * 300_000


@server.resource("notes://slow", name="slow", mime_type="text/plain")
async def slow() -> str:
    """Answers after 30 seconds."""
    await anyio.sleep(30)
    return "finally"


@server.resource("notes://item/{index}", name="item", mime_type="text/plain")
def item(index: str) -> str:
    """A numbered item."""
    return f"item {index}"


@server.prompt()
def greet(name: str) -> str:
    """Ask the model to greet someone."""
    return f"Say hello to {name}."


@server.prompt()
def review(uri: str) -> list[Message]:
    """Review a resource: a question and the resource itself."""
    resource = types.EmbeddedResource(
        type="resource",
        resource=types.TextResourceContents(uri=uri, mime_type="text/plain", text=f"text of {uri}"),
    )
    return [
        UserMessage(content=f"Please review {uri}."),
        UserMessage(content=resource),
        AssistantMessage(content="Reviewing."),
    ]


@server.tool()
async def touch(uri: str, ctx: Context) -> str:
    """Announce that the resource at `uri` changed."""
    if ctx.protocol_version in ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"):
        await ctx.session.send_resource_updated(uri)
    else:
        await ctx.notify_resource_updated(uri)
    return f"touched {uri}"


if __name__ == "__main__":
    server.run()
