"""Resources and prompts of an MCP server through MCPClient, against real servers.

Two servers, one process each for the module: `mcp_resources_server.py` (the official SDK's
MCPServer, protocol 2026-07-28: subscriptions ride a `subscriptions/listen` stream) and the
reference `server-everything` (protocol 2025-11-25: `resources/subscribe`). The faulty fixture
server (tools only) stands for a server without resources or prompts.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator
from types import SimpleNamespace

import anyio
import mcp_types as types
import pytest
from mcp_test_support import FAULTY_SERVER, HERE, PYTHON, everything_command

from jianmu_bt.mcp import MCPClient, MCPClientError, MCPTimeoutError, MCPToolProvider
from jianmu_bt.mcp.errors import MCPContentTooLargeError
from jianmu_bt.mcp.prompts import prompt_messages
from jianmu_bt.mcp.resources import contents_text, is_textual, resource_listing, resource_text
from jianmu_bt.tools import ToolSet

pytestmark = pytest.mark.anyio

NOTES = str(HERE / "mcp_resources_server.py")
#: Bound on anything a test waits for, so a broken server fails the test instead of hanging it.
HANG_GUARD = 20


def listen_tasks() -> list[asyncio.Task[object]]:
    """The resource-subscription tasks still running."""
    return [
        t for t in asyncio.all_tasks() if t.get_name().startswith("mcp-resources:") and not t.done()
    ]


@pytest.fixture(scope="module")
async def notes() -> AsyncIterator[MCPClient]:
    async with MCPClient(command=PYTHON, args=[NOTES], name="notes", timeout=10) as client:
        yield client
    # A subscription stream lives in the connection's task group: closing ends it, at once.
    assert listen_tasks() == []


@pytest.fixture(scope="module")
async def everything() -> AsyncIterator[MCPClient]:
    command = everything_command()
    async with MCPClient(command=command, args=["stdio"], name="everything", timeout=10) as client:
        yield client


# -- our SDK server ---------------------------------------------------------------------------


async def test_lists_and_reads_resources_and_templates(notes: MCPClient) -> None:
    resources = {str(r.uri): r for r in await notes.list_resources()}
    assert set(resources) == {"notes://readme", "notes://logo", "notes://big", "notes://slow"}
    assert resources["notes://readme"].mime_type == "text/markdown"
    templates = await notes.list_resource_templates()
    assert [t.uri_template for t in templates] == ["notes://item/{index}"]

    readme = await notes.read_resource("notes://readme")
    assert contents_text(readme).startswith("# Notes\n")
    item = await notes.read_resource("notes://item/7")  # a filled-in template
    assert contents_text(item) == "item 7"
    # A binary blob is never handed over as base64: a stand-in names type, size and URI.
    logo = await notes.read_resource("notes://logo")
    assert isinstance(logo[0], types.BlobResourceContents)
    assert contents_text(logo) == "[blob image/png, 4 bytes, notes://logo]"
    big = contents_text(await notes.read_resource("notes://big"), max_chars=1000)
    assert big.startswith("x" * 1000) and big.endswith("[... cut: 1000 of 300000 characters shown]")

    listing = resource_listing(list(resources.values()), templates).splitlines()
    assert '"uri": "notes://readme"' in listing[0] and '"uri_template"' in listing[-1]


async def test_prompts_become_llm_messages(notes: MCPClient) -> None:
    prompts = {p.name: p for p in await notes.list_prompts()}
    assert set(prompts) == {"greet", "review"}
    assert [a.name for a in prompts["greet"].arguments or []] == ["name"]

    greet = await notes.get_prompt("greet", {"name": "Ada"})
    assert prompt_messages(greet) == [{"role": "user", "content": "Say hello to Ada."}]
    review = await notes.get_prompt("review", {"uri": "notes://readme"})
    assert prompt_messages(review) == [
        {"role": "user", "content": "Please review notes://readme."},
        {"role": "user", "content": "text of notes://readme"},  # the embedded resource's text
        {"role": "assistant", "content": "Reviewing."},
    ]


async def test_a_subscription_on_a_listen_stream_reaches_the_listener(notes: MCPClient) -> None:
    updated: list[str] = []
    arrived = anyio.Event()

    async def listener(uri: str) -> None:
        updated.append(uri)
        arrived.set()

    remove = notes.on_resource_updated(listener)
    try:
        await notes.subscribe_resource("notes://readme")
        assert len(listen_tasks()) == 1
        await notes.call_tool("touch", {"uri": "notes://readme"})
        with anyio.fail_after(HANG_GUARD):
            await arrived.wait()
        assert updated == ["notes://readme"]

        await notes.unsubscribe_resource("notes://readme")
        assert listen_tasks() == []  # nothing subscribed: no stream held open
        await notes.call_tool("touch", {"uri": "notes://readme"})
        await notes.list_resources()  # a round trip after the touch: a notice would be here
        assert updated == ["notes://readme"]
        # Left subscribed: closing the client must end the stream's task too (the fixture checks).
        await notes.subscribe_resource("notes://logo")
        assert len(listen_tasks()) == 1
    finally:
        remove()


async def test_faults_name_the_server_and_the_request(notes: MCPClient) -> None:
    with pytest.raises(MCPClientError, match=r"'notes' rejected resources/read 'notes://nope'"):
        await notes.read_resource("notes://nope")
    with pytest.raises(MCPClientError, match=r"'notes' rejected prompts/get 'nope'"):
        await notes.get_prompt("nope")
    with pytest.raises(MCPClientError, match=r"'notes' rejected prompts/get 'greet'"):
        await notes.get_prompt("greet")  # the required argument is missing
    with pytest.raises(MCPTimeoutError, match=r"did not answer resources/read 'notes://slow'"):
        await notes.read_resource("notes://slow", timeout=0.5)
    # The connection is still good after a timeout.
    assert contents_text(await notes.read_resource("notes://item/1")) == "item 1"


async def test_a_server_without_resources_or_prompts_is_refused_clearly() -> None:
    async with MCPClient(command=PYTHON, args=[FAULTY_SERVER], name="tools-only") as client:
        with pytest.raises(MCPClientError, match="'tools-only' offers no resources"):
            await client.list_resources()
        with pytest.raises(MCPClientError, match="'tools-only' offers no resources"):
            await client.read_resource("x://y")
        with pytest.raises(MCPClientError, match="'tools-only' offers no resources"):
            await client.subscribe_resource("x://y")
        with pytest.raises(MCPClientError, match="'tools-only' offers no prompts"):
            await client.get_prompt("any")


# -- the reference server-everything ----------------------------------------------------------


async def test_everything_static_documents_templates_and_blobs(everything: MCPClient) -> None:
    uris = [str(r.uri) for r in await everything.list_resources()]
    assert "demo://resource/static/document/features.md" in uris
    templates = [t.uri_template for t in await everything.list_resource_templates()]
    assert "demo://resource/dynamic/text/{resourceId}" in templates
    features = contents_text(
        await everything.read_resource("demo://resource/static/document/features.md")
    )
    assert "## Resources" in features
    text = contents_text(await everything.read_resource("demo://resource/dynamic/text/3"))
    assert text.startswith("Resource 3:")
    # Its blobs are text/plain: decoded, not a stand-in.
    blob = await everything.read_resource("demo://resource/dynamic/blob/2")
    assert isinstance(blob[0], types.BlobResourceContents)
    assert base64.b64decode(blob[0].blob).decode().startswith("Resource 2:")
    assert contents_text(blob).startswith("Resource 2: This is a base64 blob")


async def test_everything_prompts(everything: MCPClient) -> None:
    names = {p.name for p in await everything.list_prompts()}
    assert {"simple-prompt", "args-prompt", "resource-prompt"} <= names
    simple = prompt_messages(await everything.get_prompt("simple-prompt"))
    assert simple[0]["role"] == "user" and isinstance(simple[0]["content"], str)
    args = prompt_messages(await everything.get_prompt("args-prompt", {"city": "Oslo"}))
    assert args == [{"role": "user", "content": "What's weather in Oslo?"}]
    embedded = prompt_messages(
        await everything.get_prompt("resource-prompt", {"resourceType": "Text", "resourceId": "4"})
    )
    assert any(str(m["content"]).startswith("Resource 4:") for m in embedded)
    with pytest.raises(MCPClientError, match="'everything' rejected prompts/get 'resource-prompt'"):
        await everything.get_prompt("resource-prompt", {"resourceType": "Nope", "resourceId": "1"})


async def test_everything_subscription_updates_reach_the_listener(everything: MCPClient) -> None:
    uri = "demo://resource/static/document/features.md"
    arrived = anyio.Event()
    seen: list[str] = []
    remove = everything.on_resource_updated(lambda u: (seen.append(u), arrived.set()))
    try:
        await everything.subscribe_resource(uri)
        toggled = await everything.call_tool("toggle-subscriber-updates", {})
        assert "Started" in toggled.content[0].text  # type: ignore[union-attr]
        with anyio.fail_after(HANG_GUARD):
            await arrived.wait()
        assert set(seen) == {uri}
        await everything.unsubscribe_resource(uri)
        await everything.call_tool("toggle-subscriber-updates", {})  # stops them again
    finally:
        remove()


async def test_everything_list_changes_and_a_gzip_blob(everything: MCPClient) -> None:
    changed = anyio.Event()
    remove = everything.on_resources_changed(changed.set)
    try:
        data = "data:text/plain;base64," + base64.b64encode(b"hello world").decode()
        args = {"name": "hello.txt", "data": data}
        await everything.call_tool("gzip-file-as-resource", args)  # adds a session resource
        with anyio.fail_after(HANG_GUARD):
            await changed.wait()
    finally:
        remove()
    uri = "demo://resource/session/hello.txt"
    assert uri in [str(r.uri) for r in await everything.list_resources()]
    gzip = await everything.read_resource(uri)
    size = len(base64.b64decode(gzip[0].blob))  # type: ignore[union-attr]
    assert contents_text(gzip) == f"[blob application/gzip, {size} bytes, {uri}]"


def test_images_in_a_prompt_stay_content_parts() -> None:
    png = base64.b64encode(b"\x89PNG").decode()
    result = SimpleNamespace(
        messages=[
            types.PromptMessage(
                role="user",
                content=types.ImageContent(type="image", data=png, mime_type="image/png"),
            ),
            types.PromptMessage(
                role="assistant",
                content=types.ImageContent(type="image", data=png, mime_type="image/png"),
            ),
        ]
    )
    user, assistant = prompt_messages(result)
    assert user["content"] == [
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png}"}}
    ]
    assert assistant["content"] == "[image: image/png, 4 bytes]"


def test_a_cut_text_decodes_no_more_than_it_keeps() -> None:
    data = b"a" * 1000 + b"\xff\xfe"  # UTF-8 up to its last two bytes
    blob = types.BlobResourceContents(
        uri="x://big", mime_type="text/plain", blob=base64.b64encode(data).decode()
    )
    # Decoded whole it is not UTF-8: a stand-in, its size from the base64 length.
    assert resource_text(blob) == "[blob text/plain, 1002 bytes, x://big]"
    # Cut at 100 characters, only the start is decoded (the bad end is never reached).
    cut = contents_text([blob, blob], max_chars=100)
    assert cut == "a" * 100 + "\n[... cut: the first 100 characters shown]"
    text = types.TextResourceContents(uri="x://t", text="b" * 30)
    assert contents_text([text, text], max_chars=40).endswith(
        "[... cut: 40 of 62 characters shown]"
    )
    assert contents_text([text, text], max_chars=62) == "b" * 30 + "\n\n" + "b" * 30
    assert is_textual("application/x-ndjson") and not is_textual("application/gzip")


def test_a_prompt_larger_than_the_cap_is_refused() -> None:
    embedded = types.EmbeddedResource(
        type="resource", resource=types.TextResourceContents(uri="x://r", text="y" * 60)
    )
    result = SimpleNamespace(
        messages=[
            types.PromptMessage(role="user", content=types.TextContent(type="text", text="x" * 60)),
            types.PromptMessage(role="user", content=embedded),
        ]
    )
    assert [m["content"] for m in prompt_messages(result, max_chars=120)] == ["x" * 60, "y" * 60]
    with pytest.raises(
        MCPContentTooLargeError, match=r"'p' is larger than 100 characters \(after 2"
    ):
        prompt_messages(result, max_chars=100, what="MCP prompt 'p'")
    assert issubclass(MCPContentTooLargeError, MCPClientError)  # a prompt source maps it


# -- the resource tools of a provider (`resources: true`) -------------------------------------


async def test_resource_tools_are_read_only_and_answer_faults_as_results(notes: MCPClient) -> None:
    provider = MCPToolProvider.from_config(
        {"command": PYTHON, "args": [NOTES], "prefix": "n", "include": ["touch"], "resources": True}
    )
    assert provider.resources
    provider = MCPToolProvider(notes, prefix="n", include=["touch"], resources=True)
    await provider.refresh(strict=True)
    tools = ToolSet.from_tools(provider.get_tools())
    assert tools.names() == ["n_touch", "n_list_resources", "n_read_resource"]
    for name in ("n_list_resources", "n_read_resource"):
        assert tools[name].parallel_safe and tools[name].effect_tags == ()
    assert tools["n_read_resource"].to_schema()["parameters"]["required"] == ["uri"]

    listed = await tools.call("n_list_resources", {})
    assert listed.ok and '"uri": "notes://readme"' in listed.output
    read = await tools.call("n_read_resource", {"uri": "notes://item/5"})
    assert (read.ok, read.output) == (True, "item 5")
    unknown = await tools.call("n_read_resource", {"uri": "notes://nope"})
    assert not unknown.ok and "rejected resources/read 'notes://nope'" in (unknown.error or "")
    template = await tools.call("n_read_resource", {"uri": "notes://item/{index}"})
    assert not template.ok and "replace {index}" in (template.error or "")
    missing = await tools.call("n_read_resource", {"uri": " "})
    assert not missing.ok and "`uri`" in (missing.error or "")


async def test_resource_tools_of_a_server_without_resources_are_refused_at_start() -> None:
    provider = MCPToolProvider(
        command=PYTHON, args=[FAULTY_SERVER], server_name="tools-only", resources=True
    )
    try:
        with pytest.raises(
            MCPClientError, match=r"'tools-only' offers no resources.*resources: tr"
        ):
            await provider.initialize()
    finally:
        await provider.close()  # as a tree's provider session does after a failed start
