"""http_request against real HTTP servers on loopback, and the network policy's SSRF refusals.

The "internal" service in these tests listens on 127.0.0.2; the "public" one on 127.0.0.1 is
made reachable by allowing exactly 127.0.0.1/32, so every refusal below is the policy's doing.
"""

from __future__ import annotations

import ipaddress
import json

import pytest
from conftest import Handler, Servers

from jianmu_bt.tools import ToolSet
from jianmu_bt.tools.builtin.http import HTTPRequestTool
from jianmu_bt.tools.builtin.network_policy import NetworkPolicy, address_category

pytestmark = pytest.mark.anyio

PUBLIC_ONLY = ["127.0.0.1/32"]


def tool_for_public(**kwargs) -> HTTPRequestTool:
    return HTTPRequestTool(allowed_networks=PUBLIC_ONLY, **kwargs)


# -- SSRF: refused by default ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://127.0.0.1:{port}/", "loopback"),
        ("http://localhost:{port}/", "loopback"),
        ("http://127.1:{port}/", "loopback"),
        ("http://2130706433:{port}/", "loopback"),
        ("http://0x7f000001:{port}/", "loopback"),
        ("http://0.0.0.0:{port}/", "unspecified"),
        ("http://[::1]:{port}/", "loopback"),
        ("http://[::ffff:127.0.0.1]:{port}/", "embedded in an IPv6 address"),
        ("http://169.254.169.254/latest/meta-data/", "cloud metadata"),
        ("http://[fd00:ec2::254]/latest/meta-data/", "cloud metadata"),
        ("http://10.0.0.1/", "private network"),
        ("http://192.168.1.1/", "private network"),
        ("http://172.16.0.1/", "private network"),
        ("http://100.100.100.200/", "not globally routable"),
        ("http://224.0.0.1/", "multicast"),
        ("file:///etc/passwd", "scheme 'file'"),
        ("gopher://127.0.0.1:70/", "scheme 'gopher'"),
        ("/relative/path", "not absolute"),
    ],
)
async def test_internal_targets_are_refused_by_default(
    servers: Servers, url: str, reason: str
) -> None:
    server = servers.start()
    server.routes["/"] = lambda h: h.reply(200, b"internal data")
    port = server.server_address[1]
    result = await ToolSet.resolve(["http_request"]).call(
        "http_request", {"url": url.format(port=port), "timeout": 5}
    )
    assert not result.ok
    assert result.error.startswith("Error:") and reason in result.error
    assert server.hits == []


async def test_a_redirect_to_an_internal_service_is_refused(servers: Servers) -> None:
    internal = servers.start("127.0.0.2")
    internal.routes["/admin"] = lambda h: h.reply(200, b"admin secrets")
    public = servers.start("127.0.0.1")
    public.routes["/go"] = lambda h: h.redirect(f"{internal.url}/admin")
    result = await tool_for_public().call({"url": f"{public.url}/go"})
    assert not result.ok
    assert "redirect 1 to" in result.error and "loopback" in result.error
    assert public.hits == [("GET", "/go")] and internal.hits == []


async def test_the_same_redirect_is_followed_when_the_policy_allows_it(servers: Servers) -> None:
    """The control: the refusal above is the policy's, not a broken redirect."""
    internal = servers.start("127.0.0.2")
    internal.routes["/admin"] = lambda h: h.reply(200, b"admin page")
    public = servers.start("127.0.0.1")
    public.routes["/go"] = lambda h: h.redirect(f"{internal.url}/admin")
    result = await HTTPRequestTool(allow_private=True).call({"url": f"{public.url}/go"})
    assert result.ok and result.output["body"] == "admin page"
    assert result.output["redirects"] == [f"{internal.url}/admin"]
    assert internal.hits == [("GET", "/admin")]


async def test_a_redirect_to_a_name_for_an_internal_address_is_refused(servers: Servers) -> None:
    """The host is not an IP literal, so only the check of the resolved address can stop it."""
    internal = servers.start("127.0.0.2")
    internal.routes["/admin"] = lambda h: h.reply(200, b"admin secrets")
    public = servers.start("127.0.0.1")
    port = internal.server_address[1]
    public.routes["/go"] = lambda h: h.redirect(f"http://2130706434:{port}/admin")  # 127.0.0.2
    result = await tool_for_public().call({"url": f"{public.url}/go"})
    assert not result.ok
    assert "resolves only to refused addresses: 127.0.0.2 (loopback)" in result.error
    assert internal.hits == []


async def test_a_redirect_to_the_metadata_service_is_refused(servers: Servers) -> None:
    public = servers.start()
    public.routes["/go"] = lambda h: h.redirect("http://169.254.169.254/latest/meta-data/")
    result = await tool_for_public().call({"url": f"{public.url}/go"})
    assert not result.ok and "cloud metadata" in result.error


async def test_a_redirect_to_a_name_resolving_to_loopback_is_refused(servers: Servers) -> None:
    public = servers.start()
    port = public.server_address[1]
    public.routes["/go"] = lambda h: h.redirect(f"http://localhost:{port}/inner")
    public.routes["/inner"] = lambda h: h.reply(200, b"inner")
    result = await HTTPRequestTool(allowed_networks=PUBLIC_ONLY, allowed_hosts=["127.0.0.1"]).call(
        {"url": f"{public.url}/go"}
    )
    assert not result.ok and "host 'localhost' is not in the allowed hosts" in result.error
    assert public.hits == [("GET", "/go")]


async def test_allowed_hosts_refuse_other_hosts(servers: Servers) -> None:
    server = servers.start()
    tool = HTTPRequestTool(allowed_hosts=["*.example.com"], allow_private=True)
    result = await tool.call({"url": f"{server.url}/"})
    assert not result.ok and "not in the allowed hosts" in result.error
    assert server.hits == []


async def test_redirects_are_bounded(servers: Servers) -> None:
    server = servers.start()
    server.routes["/loop"] = lambda h: h.redirect("/loop")
    result = await tool_for_public(max_redirects=3).call({"url": f"{server.url}/loop"})
    assert not result.ok and "too many redirects: more than 3" in result.error
    assert len(server.hits) == 4


async def test_environment_proxies_are_ignored(
    servers: Servers, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A proxy would make the connection to itself, not to the checked address."""
    proxy = servers.start("127.0.0.2")
    target = servers.start("127.0.0.1")
    target.routes["/"] = lambda h: h.reply(200, b"direct")
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    monkeypatch.setenv("ALL_PROXY", proxy.url)
    result = await tool_for_public().call({"url": f"{target.url}/"})
    assert result.ok and result.output["body"] == "direct" and proxy.hits == []


# -- requests and responses ------------------------------------------------------------------


async def test_get_returns_status_headers_and_body(servers: Servers) -> None:
    server = servers.start()
    server.routes["/hello"] = lambda h: h.reply(200, "héllo".encode(), X_Demo="1")
    result = await tool_for_public().call({"url": f"{server.url}/hello", "params": {"q": "a b"}})
    assert result.ok
    out = result.output
    assert out["status"] == 200 and out["reason"] == "OK"
    assert out["body"] == "héllo" and out["headers"]["x-demo"] == "1"
    assert out["truncated"] is False and out["redirects"] == []
    assert server.hits == [("GET", "/hello?q=a+b")]


async def test_post_json_and_text_bodies_with_headers(servers: Servers) -> None:
    server = servers.start()

    def echo(h: Handler) -> None:
        h.reply_json(
            {
                "method": h.command,
                "type": h.headers.get("Content-Type"),
                "token": h.headers.get("X-Token"),
                "body": h.body.decode(),
            }
        )

    server.routes["/echo"] = echo
    tool = tool_for_public()
    posted = await tool.call(
        {
            "url": f"{server.url}/echo",
            "method": "POST",
            "json": {"a": [1, 2]},
            "headers": {"X-Token": "t"},
        }
    )
    put = await tool.call({"url": f"{server.url}/echo", "method": "PUT", "body": "plain"})
    assert json.loads(posted.output["body"]) == {
        "method": "POST",
        "type": "application/json",
        "token": "t",
        "body": '{"a":[1,2]}',
    }
    assert json.loads(put.output["body"])["body"] == "plain"
    assert json.loads(put.output["body"])["method"] == "PUT"


async def test_json_and_body_together_are_refused() -> None:
    result = await HTTPRequestTool().call({"url": "http://x.test/", "json": 1, "body": "b"})
    assert not result.ok and "either json or body" in result.error


async def test_error_statuses_are_results_not_failures(servers: Servers) -> None:
    server = servers.start()
    result = await tool_for_public().call({"url": f"{server.url}/missing"})
    assert result.ok and result.output["status"] == 404


async def test_head_has_no_body(servers: Servers) -> None:
    server = servers.start()
    server.routes["/"] = lambda h: h.reply(200, b"abc")
    result = await tool_for_public().call({"url": f"{server.url}/", "method": "HEAD"})
    assert result.ok and result.output["body"] == "" and result.output["status"] == 200


async def test_the_response_is_cut_at_the_size_cap(servers: Servers) -> None:
    server = servers.start()
    server.routes["/big"] = lambda h: h.reply(200, b"x" * 100_000)
    result = await tool_for_public(max_response_bytes=1000).call({"url": f"{server.url}/big"})
    assert result.output["body"] == "x" * 1000 and result.output["truncated"] is True
    assert "cut at 1000 bytes" in result.output["note"]


async def test_binary_bodies_are_described_not_shown(servers: Servers) -> None:
    server = servers.start()
    server.routes["/img"] = lambda h: h.reply(200, b"\x89PNG\x00\x00\x01", "image/png")
    result = await tool_for_public().call({"url": f"{server.url}/img"})
    assert result.output["body"] is None and "image/png" in result.output["body_note"]


async def test_a_slow_server_hits_the_timeout(servers: Servers) -> None:
    server = servers.start()

    def slow(h: Handler) -> None:
        h.server.release.wait(30)
        h.reply(200, b"late")

    server.routes["/slow"] = slow
    result = await tool_for_public().call({"url": f"{server.url}/slow", "timeout": 0.5})
    assert not result.ok and "timed out" in result.error  # not the "late" reply 30 s on


async def test_a_closed_port_is_a_clear_error(servers: Servers) -> None:
    server = servers.start()
    port = server.server_address[1]
    server.shutdown()
    server.server_close()
    result = await tool_for_public().call({"url": f"http://127.0.0.1:{port}/", "timeout": 5})
    assert not result.ok and "ConnectError" in result.error


# -- the policy ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "category"),
    [
        ("8.8.8.8", None),
        ("2001:4860:4860::8888", None),
        ("127.0.0.1", "loopback"),
        ("10.1.2.3", "private network"),
        ("169.254.169.254", "cloud metadata service"),
        ("169.254.1.1", "link-local"),
        ("::ffff:10.0.0.1", "private network, embedded in an IPv6 address"),
        ("64:ff9b::7f00:1", "loopback, embedded in an IPv6 address"),
        ("2002:7f00:1::1", "loopback, embedded in an IPv6 address"),
        ("fe80::1", "link-local"),
        ("ff02::1", "multicast"),
        ("240.0.0.1", "reserved"),
    ],
)
def test_address_categories(address: str, category: str | None) -> None:
    assert address_category(ipaddress.ip_address(address)) == category


def test_blocked_networks_win_over_allow_private() -> None:
    policy = NetworkPolicy(allow_private=True, blocked_networks=["10.0.0.0/8"])
    assert policy.address_refusal(ipaddress.ip_address("10.1.1.1")) == "a blocked network"
    assert policy.address_refusal(ipaddress.ip_address("192.168.0.1")) is None


def test_a_bad_policy_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="allowed_networks"):
        NetworkPolicy(allowed_networks=["not-a-network"])


def test_the_schema_names_every_argument() -> None:
    params = HTTPRequestTool().to_schema()["parameters"]
    assert params["required"] == ["url"]
    assert {"url", "method", "headers", "params", "json", "body", "timeout"} <= set(
        params["properties"]
    )
    assert all(p.get("description") for p in params["properties"].values())
    assert HTTPRequestTool.effect_tags == ("http",)
