"""A low-level MCP server (the SDK's `Server`, over stdio) that misbehaves on purpose.

| request / tool                | what                                                            |
|-------------------------------|-----------------------------------------------------------------|
| `tools/list`                  | the tools below, or, after `paginate_forever(tools)`, endless   |
|                               | pages of one tool and a next cursor each                        |
| `resources/list`              | one page (`odd://a`), or, after `paginate_forever(resources)`,  |
|                               | endless pages each answered after 50 ms                         |
| `resources/templates/list`    | not served: "method not found" (-32601)                         |
| `resources/read`              | `text of <uri>`                                                 |
| `subscriptions/listen`        | honours every URI except those starting `refused://`; a stream  |
|                               | ends gracefully on `end_streams`                                |
| tool `paginate_forever(kind, on)` | switches endless pages of `kind` (tools, resources) on, off |
| tool `flood(uri, n)`          | waits (10 s at most) until a listen stream carries `uri`, then  |
|                               | announces `n` updates of it as fast as it can                   |
| tool `touch(uri)`             | announces an update of `uri` on every open listen stream        |
| tool `end_streams()`          | ends every open listen stream (the client must open it again)   |
"""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.subscriptions import SUBSCRIPTION_ID_META_KEY

ENDLESS = {"tools": False, "resources": False}
TOOLS = [
    types.Tool(
        name=name,
        input_schema={"type": "object", "properties": properties},
    )
    for name, properties in {
        "paginate_forever": {"kind": {"type": "string"}, "on": {"type": "boolean"}},
        "touch": {"uri": {"type": "string"}},
        "flood": {"uri": {"type": "string"}, "n": {"type": "integer"}},
        "end_streams": {},
    }.items()
]
#: Open listen streams: (session, subscription id, honoured URIs).
STREAMS: list[tuple[Any, Any, frozenset[str]]] = []
END = {"event": anyio.Event()}


async def list_tools(
    ctx: Any, params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    if not ENDLESS["tools"]:
        return types.ListToolsResult(tools=TOOLS)
    page = int(params.cursor) if params and params.cursor else 0
    tool = types.Tool(name=f"t{page}", input_schema={"type": "object"})
    return types.ListToolsResult(tools=[tool], next_cursor=str(page + 1))


async def list_resources(
    ctx: Any, params: types.PaginatedRequestParams | None
) -> types.ListResourcesResult:
    if not ENDLESS["resources"]:
        return types.ListResourcesResult(resources=[types.Resource(uri="odd://a", name="a")])
    await anyio.sleep(0.05)
    page = int(params.cursor) if params and params.cursor else 0
    resource = types.Resource(uri=f"odd://{page}", name=str(page))
    return types.ListResourcesResult(resources=[resource], next_cursor=str(page + 1))


async def read_resource(
    ctx: Any, params: types.ReadResourceRequestParams
) -> types.ReadResourceResult:
    uri = str(params.uri)
    return types.ReadResourceResult(
        contents=[
            types.TextResourceContents(uri=uri, mime_type="text/plain", text=f"text of {uri}")
        ]
    )


async def listen(
    ctx: Any, params: types.SubscriptionsListenRequestParams
) -> types.SubscriptionsListenResult:
    asked = params.notifications.resource_subscriptions or []
    kept = [uri for uri in asked if not uri.startswith("refused://")]
    honored = types.SubscriptionFilter(resource_subscriptions=kept or None)
    meta = {SUBSCRIPTION_ID_META_KEY: ctx.request_id}
    await ctx.session.send_notification(
        types.SubscriptionsAcknowledgedNotification(
            params=types.SubscriptionsAcknowledgedNotificationParams(
                notifications=honored, _meta=meta
            )
        ),
        related_request_id=ctx.request_id,
    )
    entry = (ctx.session, ctx.request_id, frozenset(kept))
    STREAMS.append(entry)
    try:
        await END["event"].wait()
    finally:
        STREAMS.remove(entry)
    return types.SubscriptionsListenResult(_meta=meta)


async def announce(uri: str) -> None:
    """An update of `uri` on every open listen stream that carries it."""
    for session, request_id, uris in list(STREAMS):
        if uri in uris:
            meta = {SUBSCRIPTION_ID_META_KEY: request_id}
            notice = types.ResourceUpdatedNotification(
                params=types.ResourceUpdatedNotificationParams(uri=uri, _meta=meta)
            )
            await session.send_notification(notice, related_request_id=request_id)


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    args = params.arguments or {}
    if params.name == "paginate_forever":
        ENDLESS[str(args["kind"])] = bool(args.get("on"))
    elif params.name == "touch":
        await announce(str(args["uri"]))
    elif params.name == "flood":
        uri = str(args["uri"])
        with anyio.move_on_after(10):
            while not any(uri in uris for _, _, uris in STREAMS):
                await anyio.sleep(0.01)
        for _ in range(int(args["n"])):
            await announce(uri)
    elif params.name == "end_streams":
        END["event"].set()
        END["event"] = anyio.Event()
    else:
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=f"no tool {params.name}")], is_error=True
        )
    return types.CallToolResult(content=[types.TextContent(type="text", text="done")])


server = Server(
    "odd",
    on_list_tools=list_tools,
    on_call_tool=call_tool,
    on_list_resources=list_resources,
    on_read_resource=read_resource,
    on_subscriptions_listen=listen,
)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
