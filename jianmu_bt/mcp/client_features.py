"""ServerFeatures: an MCP server's resources and prompts, as requests of `MCPClient`.

A mixin of `MCPClient` (which gives it `_live_connection`, `_request`, `name` and `config`), so
these requests share the client's timeouts, reconnection and fault translation:

- `list_resources`, `list_resource_templates`, `read_resource`, `subscribe_resource`,
  `unsubscribe_resource`, `on_resource_updated`, `on_resources_changed`;
- `list_prompts`, `get_prompt`.

A server that does not declare `resources` (or `prompts`) in its capabilities is refused with an
MCPClientError before anything is sent. Subscriptions speak both protocol eras: a 2025-era
server gets `resources/subscribe` and answers with `notifications/resources/updated`; a
2026-07-28 server carries updates only on a `subscriptions/listen` stream, which the connection
holds for the subscribed URIs (`Connection.listen_resources`). Subscriptions are counted per
URI: the server is asked at the first subscriber and told at the last one's unsubscribe. They
belong to one connection: a reconnect after the server went away starts with none.

Listings (`_all_pages`, also `MCPClient.list_tools`) are bounded as a whole: at most
MAX_LIST_PAGES pages, MAX_LISTED items, and the client's `timeout` for all pages together.
Notices are coalesced: while the listeners of one URI's update (or of a list change) run,
further notices of it are folded into one more round, so a flood cannot pile up work.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from jianmu_bt.mcp.errors import MCPClientError, MCPTimeoutError
from jianmu_bt.mcp.notices import Listener, Listeners

if TYPE_CHECKING:
    from mcp_types import (
        BlobResourceContents,
        GetPromptResult,
        Prompt,
        Resource,
        ResourceTemplate,
        TextResourceContents,
    )

    from jianmu_bt.mcp.config import MCPServerConfig
    from jianmu_bt.mcp.connection import Connection

logger = logging.getLogger(__name__)

#: Upper bound on the pages of one listing, so a server that paginates forever cannot hang it.
MAX_LIST_PAGES = 100
#: At most this many resources or templates or prompts are kept from one listing.
MAX_LISTED = 10_000

_Item = TypeVar("_Item")
"""An item of a listing (a Tool, Resource, ResourceTemplate or Prompt)."""
_Result = TypeVar("_Result")
"""What a request answers."""


class _Coalescer:
    """Runs one round of listeners per key at a time; notices that come meanwhile are
    folded into one more round after it (a flood costs at most two rounds)."""

    def __init__(self) -> None:
        self._busy: set[str] = set()
        self._again: set[str] = set()

    async def run(self, key: str, notify: Callable[[], Awaitable[None]]) -> None:
        """Run `notify()` for `key` now, or fold this notice into the round under way."""
        if key in self._busy:
            self._again.add(key)
            return
        self._busy.add(key)
        try:
            self._again.add(key)
            while key in self._again:
                self._again.discard(key)
                await notify()
        finally:
            self._busy.discard(key)
            self._again.discard(key)


class _FeatureState:
    """Per-client state of the features: listeners and the live subscriptions."""

    def __init__(self) -> None:
        self.updated = Listeners("resource-updated")
        self.changed = Listeners("resources-changed")
        self.notices = _Coalescer()
        #: Subscribers per URI subscribed on `connection`.
        self.subscribers: dict[str, int] = {}
        self.connection: Connection | None = None
        #: Subscription changes one at a time (each may replace the listen stream).
        self.changing = anyio.Lock()


class ServerFeatures:
    """Resources and prompts of the server (a mixin of `MCPClient`)."""

    if TYPE_CHECKING:  # what MCPClient provides

        @property
        def name(self) -> str: ...

        config: MCPServerConfig
        _conn: Connection | None

        async def _live_connection(self) -> Connection: ...

        async def _request(
            self,
            conn: Connection,
            what: str,
            send: Callable[[], Awaitable[_Result]],
            timeout: float | None,
        ) -> _Result: ...

    _features_state: _FeatureState | None = None

    @property
    def _features(self) -> _FeatureState:
        if self._features_state is None:
            self._features_state = _FeatureState()
        return self._features_state

    # -- resources ---------------------------------------------------------------------------

    async def list_resources(self) -> list[Resource]:
        """Every resource the server lists (all pages, as the SDK's Resource models)."""
        conn = await self._offering("resources")
        session = conn.require_session()
        return await self._all_pages(
            conn, "resources/list", session.list_resources, lambda page: page.resources
        )

    async def list_resource_templates(self) -> list[ResourceTemplate]:
        """Every resource template the server lists (URI templates such as `x://item/{id}`)."""
        conn = await self._offering("resources")
        session = conn.require_session()
        return await self._all_pages(
            conn,
            "resources/templates/list",
            session.list_resource_templates,
            lambda page: page.resource_templates,
        )

    async def read_resource(
        self, uri: str, *, timeout: float | None = None
    ) -> list[TextResourceContents | BlobResourceContents]:
        """The contents of the resource at `uri` (a listed URI or a filled-in template).

        MCPTimeoutError after `timeout` (default the client's); MCPClientError when the server
        refuses, for example an unknown URI (the message names the server and the URI)."""
        conn = await self._offering("resources")
        send = functools.partial(conn.require_client().read_resource, uri)
        result = await self._request(conn, f"resources/read '{uri}'", send, timeout)
        return list(result.contents)

    async def subscribe_resource(self, uri: str) -> None:
        """Ask the server to announce changes of the resource at `uri`; each announcement
        calls the `on_resource_updated` listeners with the URI. Counted: each call needs its
        own `unsubscribe_resource`, and only the last one ends the server's announcements."""
        conn = await self._subscribable()
        state = self._features
        async with state.changing:
            if state.connection is not conn:  # a new connection has none of the old ones
                state.connection, state.subscribers = conn, {}
            count = state.subscribers.get(uri, 0)
            if count == 0:
                await self._change_subscription(conn, "resources/subscribe", uri)
            state.subscribers[uri] = count + 1

    async def unsubscribe_resource(self, uri: str) -> None:
        """Take back one `subscribe_resource(uri)`; the last one stops the server's
        announcements. Only the current connection is told, and only while it stands: a
        subscription of a lost connection is forgotten (no server is started for it)."""
        state = self._features
        async with state.changing:
            count = state.subscribers.get(uri, 0)
            if count > 1:
                state.subscribers[uri] = count - 1
                return
            state.subscribers.pop(uri, None)
            conn = state.connection
            if count == 0 or conn is None or conn is not self._conn or not conn.usable:
                return
            await self._change_subscription(conn, "resources/unsubscribe", uri)

    def subscribers(self, uri: str) -> int:
        """How many subscriptions to `uri` are held on the current connection."""
        state = self._features
        current = state.connection is not None and state.connection is self._conn
        return state.subscribers.get(uri, 0) if current else 0

    def on_resource_updated(self, listener: Listener) -> Callable[[], None]:
        """Call `listener(uri)` (sync, or async and awaited) whenever the server announces
        that a subscribed resource changed; returns a function that removes it."""
        return self._features.updated.add(listener)

    def on_resources_changed(self, listener: Listener) -> Callable[[], None]:
        """Call `listener()` whenever the server says its resource list changed
        (`notifications/resources/list_changed`); returns a function that removes it."""
        return self._features.changed.add(listener)

    async def resource_notice(self, message: Any) -> bool:
        """Hand a server message to the resource listeners; True when it was one of theirs
        (`notifications/resources/updated` or `notifications/resources/list_changed`)."""
        from mcp_types import ResourceListChangedNotification, ResourceUpdatedNotification

        state = self._features
        if isinstance(message, ResourceUpdatedNotification):
            uri = str(message.params.uri)
            notify = functools.partial(state.updated.notify, self.name, uri)
            await state.notices.run(f"updated:{uri}", notify)
            return True
        if isinstance(message, ResourceListChangedNotification):
            await state.notices.run("changed", functools.partial(state.changed.notify, self.name))
            return True
        return False

    async def resources_may_have_changed(self, uris: frozenset[str]) -> None:
        """Tell the update listeners of `uris`, as an update notice would (a listen stream was
        opened again: updates in between are not replayed)."""
        state = self._features
        for uri in sorted(uris):
            notify = functools.partial(state.updated.notify, self.name, uri)
            await state.notices.run(f"updated:{uri}", notify)

    # -- prompts -----------------------------------------------------------------------------

    async def list_prompts(self) -> list[Prompt]:
        """Every prompt the server lists (all pages), with its arguments."""
        conn = await self._offering("prompts")
        session = conn.require_session()
        return await self._all_pages(
            conn, "prompts/list", session.list_prompts, lambda page: page.prompts
        )

    async def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None
    ) -> GetPromptResult:
        """The prompt `name` filled in with `arguments` (its messages, see
        `jianmu_bt.mcp.prompts.prompt_messages`); MCPClientError for an unknown prompt or
        missing arguments, as the server words it."""
        conn = await self._offering("prompts")
        args = {str(k): str(v) for k, v in arguments.items()} if arguments is not None else None
        send = functools.partial(conn.require_client().get_prompt, name, args)
        return await self._request(conn, f"prompts/get '{name}'", send, None)

    # -- helpers -----------------------------------------------------------------------------

    async def offers(self, kind: str) -> bool:
        """Whether the server declares `kind` (`resources`, `prompts`, `tools`, ...) in its
        capabilities (connecting first when needed)."""
        conn = await self._live_connection()
        return self._declares(conn, kind)

    @staticmethod
    def _declares(conn: Connection, kind: str) -> bool:
        return getattr(conn.require_client().server_capabilities, kind, None) is not None

    async def _offering(self, kind: str) -> Connection:
        """A live connection to a server that declares `kind` (resources, prompts)."""
        conn = await self._live_connection()
        if not self._declares(conn, kind):
            raise MCPClientError(
                f"MCP server '{self.name}' offers no {kind} (its capabilities declare no `{kind}`)"
            )
        return conn

    async def _subscribable(self) -> Connection:
        conn = await self._offering("resources")
        resources = conn.require_client().server_capabilities.resources
        if resources is None or not resources.subscribe:
            raise MCPClientError(
                f"MCP server '{self.name}' offers no resource subscriptions (its capabilities "
                "declare no `resources.subscribe`)"
            )
        return conn

    async def _all_pages(
        self,
        conn: Connection,
        what: str,
        fetch: Callable[..., Awaitable[Any]],
        items: Callable[[Any], list[_Item]],
    ) -> list[_Item]:
        """Every page of a listing, bounded as a whole: MAX_LIST_PAGES pages, MAX_LISTED
        items, and the client's `timeout` for all pages together (not for each)."""
        from mcp_types import PaginatedRequestParams

        found: list[_Item] = []
        cursor: str | None = None
        limit = self.config.timeout
        pages = 0
        with anyio.move_on_after(limit) as deadline:
            while pages < MAX_LIST_PAGES:
                params = PaginatedRequestParams(cursor=cursor) if cursor else None
                send = functools.partial(fetch, params=params)
                page = await self._request(conn, what, send, None)
                pages += 1
                found.extend(items(page))
                if len(found) > MAX_LISTED:
                    raise MCPClientError(
                        f"MCP server '{self.name}' listed more than {MAX_LISTED} items in {what}"
                    )
                cursor = page.next_cursor
                if not cursor:
                    return found
            raise MCPClientError(
                f"MCP server '{self.name}' kept paginating {what} past {MAX_LIST_PAGES} pages"
            )
        assert deadline.cancelled_caught  # the only way out of the scope without a result
        raise MCPTimeoutError(
            f"MCP server '{self.name}' did not finish {what} within {limit}s "
            f"({pages} pages answered, the last with a next cursor)"
        )

    @staticmethod
    def _modern(conn: Connection) -> bool:
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        return conn.require_client().protocol_version in MODERN_PROTOCOL_VERSIONS

    async def _send_subscription(self, conn: Connection, method: str, uri: str) -> None:
        """`resources/subscribe` or `resources/unsubscribe` of a 2025-era connection (sent
        as a plain request: the SDK's wrappers warn that 2026-07-28 removed them)."""
        import mcp_types as types

        session = conn.require_session()
        request: Any
        if method == "resources/subscribe":
            request = types.SubscribeRequest(params=types.SubscribeRequestParams(uri=uri))
        else:
            request = types.UnsubscribeRequest(params=types.UnsubscribeRequestParams(uri=uri))
        send = functools.partial(session.send_request, request, types.EmptyResult)
        await self._request(conn, f"{method} '{uri}'", send, None)

    async def _change_subscription(self, conn: Connection, method: str, uri: str) -> None:
        """Subscribe to or unsubscribe from `uri` on `conn`: a 2025-era request, or the
        2026-07-28 listen stream replaced by one for the new set of URIs."""
        what = f"{method} '{uri}'"
        if not self._modern(conn):
            await self._send_subscription(conn, method, uri)
            return
        uris = set(conn.resource_uris)
        uris = uris | {uri} if method == "resources/subscribe" else uris - {uri}
        await self._request(conn, what, functools.partial(conn.listen_resources, uris), None)


__all__ = ["MAX_LIST_PAGES", "ServerFeatures"]
