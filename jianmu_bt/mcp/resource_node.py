"""MCPResourceNode: a tree step that reads an MCP server's resource into state.

The YAML kind `mcp_resource` builds it (`jianmu_bt.loader.kinds_mcp`):

```yaml
- mcp_resource: {server: docs, uri: "demo://resource/dynamic/text/{index}", output: text}
- mcp_resource: {server: docs, uri: "notes://readme", until: updated, wait: 30, output: text}
```
The URI is a template over state (`{index}`; `{{`/`}}` for literal braces). The contents are
turned into text (`jianmu_bt.mcp.resources.contents_text`: a binary blob becomes a one-line
stand-in) and written to `output`, as text or parsed as JSON (`parse="json"`). A text longer
than `max_chars` is cut, ending with a note of how much was kept; a JSON resource that long is
refused (a cut document would not parse), the parse always sees the whole text. With
`until_updated`, the node subscribes to the resource, stays RUNNING until the server announces
an update of it (`notifications/resources/updated`) or `wait` seconds pass, then reads it; it
unsubscribes however it ends (halted included). Events: `mcp.resource.subscribed`, `.updated`,
`.unsubscribed`, `.read` (with `server`, `uri`; `chars` written and whether the text was
`cut`). A fault (an unknown URI, a server that offers no resources or no subscriptions, a
timeout, JSON over `max_chars`) is FAILURE with the server's words, also emitted as an
`mcp.resource.failed` event.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any, Literal

import anyio

from jianmu_bt.mcp.errors import MCPClientError
from jianmu_bt.mcp.resources import contents_text, resource_text
from jianmu_bt.runtime.async_node import AsyncNode
from jianmu_bt.runtime.templates import TemplateError, render

if TYPE_CHECKING:
    from jianmu_bt.mcp.client import MCPClient

logger = logging.getLogger(__name__)

Parse = Literal["text", "json"]
"""How the contents go to state: `text` as they are, `json` parsed."""

#: Seconds `until_updated` waits for an update by default.
DEFAULT_WAIT = 60.0
#: Characters of a resource written by default: a longer text is cut (and says so), a longer
#: JSON resource is refused (a cut JSON document would not parse).
DEFAULT_MAX_CHARS = 1_000_000
#: Longest wait for `resources/unsubscribe` when the node ends (it runs even when halted).
UNSUBSCRIBE_TIMEOUT = 5.0


class ResourceReadError(Exception):
    """Why a resource step failed (its message is the node's reason)."""


class MCPResourceNode(AsyncNode):
    """Reads the resource at `uri` (a template over state) of `client`'s server into `output_key`.

    `server` names the server in events and messages; `parse` is `text` or `json`;
    `until_updated` waits (at most `wait` seconds, default DEFAULT_WAIT) for the server to
    announce an update of the resource before reading it; `max_chars` (default
    DEFAULT_MAX_CHARS) bounds what is written; `timeout` bounds the whole step.
    """

    def __init__(
        self,
        client: MCPClient,
        uri: str,
        *,
        name: str,
        server: str,
        output_key: str | None = None,
        parse: Parse = "text",
        until_updated: bool = False,
        wait: float | None = None,
        max_chars: int | None = None,
        timeout: float | None = None,
    ) -> None:
        super().__init__(name=name, timeout=timeout)
        self.client = client
        self.uri = uri
        self.server = server
        self.output_key = output_key
        self.parse = parse
        self.until_updated = until_updated
        self.wait = wait if wait is not None else DEFAULT_WAIT
        self.max_chars = max_chars if max_chars is not None else DEFAULT_MAX_CHARS
        if self.wait <= 0 or self.max_chars <= 0:
            raise ValueError(f"wait and max_chars must be positive, got {wait!r}, {max_chars!r}")
        #: The value the last successful entry wrote (or would have written).
        self.last_value: Any = None

    async def run_async(self) -> bool:
        uri = self.uri
        try:
            uri = self._resolved_uri()
            if self.until_updated:
                await self._updated(uri)
            contents = await self.client.read_resource(uri)
            text = contents_text(contents, max_chars=self.max_chars)
            cut = len(text) > self.max_chars  # only a cut text (its note added) is longer
            value = self._parsed(text, uri, contents)
        except (MCPClientError, ResourceReadError, TemplateError) as exc:
            self.feedback_message = str(exc)
            self.emit("mcp.resource.failed", server=self.server, uri=uri, error=str(exc))
            return False
        self.last_value = value
        if self.output_key is not None:
            self.state.write_port(self.output_key, value)
        self.emit("mcp.resource.read", server=self.server, uri=uri, chars=len(text), cut=cut)
        return True

    def _resolved_uri(self) -> str:
        uri = render(self.uri, self.state.get)
        if not isinstance(uri, str) or not uri:
            raise ResourceReadError(
                f"the resource URI '{self.uri}' gave {uri!r}, not a URI: a state value used "
                "alone as the URI must be text"
            )
        return uri

    def _parsed(self, text: str, uri: str, contents: list[Any]) -> Any:
        if self.parse == "text":
            return text
        if len(text) > self.max_chars:  # a cut JSON document would not parse: say why
            size = len("\n\n".join(resource_text(item) for item in contents))
            raise ResourceReadError(
                f"resource '{uri}' of MCP server '{self.server}' is {size:,} characters, over "
                f"max_chars ({self.max_chars:,}); JSON is not cut: raise max_chars to read it"
            )
        try:
            return json.loads(text)
        except ValueError as exc:
            raise ResourceReadError(
                f"resource '{uri}' of MCP server '{self.server}' is not JSON (as: json): {exc}"
            ) from None

    async def _updated(self, uri: str) -> None:
        """Subscribe to `uri`, wait for its update notice, unsubscribe (also when cancelled)."""
        updated = anyio.Event()

        def listener(changed: str) -> None:
            if changed == uri:
                updated.set()

        remove = self.client.on_resource_updated(listener)  # before subscribing: miss nothing
        try:
            await self.client.subscribe_resource(uri)
            try:
                self.emit("mcp.resource.subscribed", server=self.server, uri=uri)
                self.feedback_message = f"waiting for an update of {uri}"
                with anyio.move_on_after(self.wait):
                    await updated.wait()
                if not updated.is_set():
                    raise ResourceReadError(
                        f"MCP server '{self.server}' announced no update of '{uri}' within "
                        f"{self.wait:g}s (wait)"
                    )
                self.feedback_message = ""
                self.emit("mcp.resource.updated", server=self.server, uri=uri)
            finally:
                await self._unsubscribe(uri)
        finally:
            remove()

    async def _unsubscribe(self, uri: str) -> None:
        # Shielded: a halted node still takes its subscription back, within a bound.
        with anyio.CancelScope(shield=True), anyio.move_on_after(UNSUBSCRIBE_TIMEOUT):
            try:
                await self.client.unsubscribe_resource(uri)
            except MCPClientError as exc:  # the server may be gone: nothing to take back
                logger.debug("unsubscribing from %s failed: %s", uri, exc)
            else:
                self.emit("mcp.resource.unsubscribed", server=self.server, uri=uri)


__all__ = ["DEFAULT_MAX_CHARS", "DEFAULT_WAIT", "MCPResourceNode", "Parse", "ResourceReadError"]
