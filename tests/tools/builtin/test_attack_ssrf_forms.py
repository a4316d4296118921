"""Adversarial corpus for the network policy: every spelling of an internal address, against a
policy that allows private ranges but lists them under `blocked_networks` (always refused).

Unit cases check the policy on addresses; end-to-end cases run http_request against a real server
on 127.0.0.1 (the blocked target) and assert it never received a request. A resolver stub plays
hostile DNS: answers in IPv6 forms, answers mixing allowed and blocked addresses, and answers
that change between lookups (rebinding).
"""

from __future__ import annotations

import ipaddress
import threading
from collections.abc import Sequence
from http.server import ThreadingHTTPServer
from typing import Any

import httpcore
import httpx
import pytest
from conftest import Handler, LocalHTTPServer, Servers

from jianmu_bt.tools.builtin.address_forms import (
    embedded_ipv4s,
    parse_legacy_ipv4,
    reached_addresses,
)
from jianmu_bt.tools.builtin.http import HTTPRequestTool, PolicyNetworkBackend
from jianmu_bt.tools.builtin.network_policy import (
    NetworkPolicy,
    NetworkPolicyError,
    address_category,
)

pytestmark = pytest.mark.anyio

BLOCKED = ["127.0.0.0/8", "169.254.0.0/16", "10.0.0.0/8"]
LOOSE = NetworkPolicy(allow_private=True, blocked_networks=BLOCKED)
IP = ipaddress.ip_address

# Every way below reaches 127.0.0.1 (loopback), 10.0.0.1 or 169.254.169.254 (metadata).
FORMS = [
    "127.0.0.1",
    "127.255.255.254",
    "::ffff:127.0.0.1",  # IPv4-mapped
    "::ffff:7f00:1",  # the same, in hex
    "::ffff:0:127.0.0.1",  # IPv4-translated (SIIT)
    "::127.0.0.1",  # IPv4-compatible (deprecated)
    "64:ff9b::127.0.0.1",  # NAT64, well-known prefix
    "64:ff9b::7f00:1",
    "64:ff9b:1::7f00:1",  # NAT64, local-use prefix, /96 layout
    "64:ff9b:1:7f00:0:100::",  # local-use prefix, /48 layout
    "64:ff9b:1:7f:0:1::",  # local-use prefix, /56 layout
    "64:ff9b:1:0:7f:0:100:0",  # local-use prefix, /64 layout
    "2002:7f00:1::",  # 6to4
    "2002:7f00:1:1234::abcd",
    "2001:0:4136:e378:8000:63bf:80ff:fffe",  # Teredo, client 127.0.0.1 (obfuscated)
    "2001:0:7f00:1:8000:63bf:3fff:fdd2",  # Teredo, server 127.0.0.1
    "fe80::5efe:127.0.0.1",  # ISATAP, link-local prefix
    "2001:db8:1::200:5efe:127.0.0.1",  # ISATAP, any prefix, universal/local bit set
    "0.0.0.0",  # reaches this host
    "::",
    "::ffff:0.0.0.0",
    "::1",  # the local host's other family
    "::ffff:10.0.0.1",
    "64:ff9b::a00:1",
    "2002:a00:1::",
    "::ffff:169.254.169.254",
    "64:ff9b::169.254.169.254",
    "2002:a9fe:a9fe::",
]


@pytest.mark.parametrize("form", FORMS)
def test_blocked_networks_refuse_every_form(form: str) -> None:
    refusal = LOOSE.address_refusal(IP(form))
    assert refusal is not None and refusal.startswith("a blocked network"), refusal


@pytest.mark.parametrize("form", FORMS)
def test_the_default_policy_refuses_every_form(form: str) -> None:
    assert address_category(IP(form)) is not None
    assert NetworkPolicy().address_refusal(IP(form)) is not None


@pytest.mark.parametrize("form", [f for f in FORMS if embedded_ipv4s(IP(f))])
@pytest.mark.parametrize("allowed", [["::/0"], ["2000::/3", "64:ff9b::/32", "::/8", "fe80::/10"]])
def test_allowing_ipv6_ranges_does_not_let_embedded_ipv4_in(form: str, allowed: list[str]) -> None:
    """An allow list is judged on the address reached, not on the IPv6 wrapping it."""
    assert NetworkPolicy(allowed_networks=allowed).address_refusal(IP(form)) is not None


@pytest.mark.parametrize("form", FORMS)
def test_check_url_refuses_every_literal_form(form: str) -> None:
    host = f"[{form}]" if ":" in form else form
    with pytest.raises(NetworkPolicyError, match="blocked network"):
        LOOSE.check_url(httpx.URL(f"http://{host}:8080/x"))


@pytest.mark.parametrize(
    "form",
    ["::ffff:192.168.1.1", "64:ff9b::c0a8:101", "2002:c0a8:101::", "192.168.1.1", "fd00::1"],
)
def test_forms_of_allowed_private_addresses_stay_allowed(form: str) -> None:
    """The control: the refusals above are the blocked networks', not a blanket IPv6 ban."""
    assert LOOSE.address_refusal(IP(form)) is None


@pytest.mark.parametrize(
    "form", ["8.8.8.8", "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1", "2606:4700::1111"]
)
def test_forms_of_public_addresses_stay_public(form: str) -> None:
    assert address_category(IP(form)) is None


def test_mapped_networks_in_the_policy_mean_their_ipv4_networks() -> None:
    policy = NetworkPolicy(allow_private=True, blocked_networks=["::ffff:127.0.0.0/104"])
    assert policy.blocked_networks == (ipaddress.ip_network("127.0.0.0/8"),)
    assert policy.address_refusal(IP("127.0.0.1")) == "a blocked network"


@pytest.mark.parametrize(
    ("text", "address"),
    [
        ("2130706433", "127.0.0.1"),
        ("0x7f.1", "127.0.0.1"),
        ("0x7F.0.0.1", "127.0.0.1"),
        ("017700000001", "127.0.0.1"),
        ("0177.0.0.01", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("127.0.1", "127.0.0.1"),
        ("127.0.0.1.", "127.0.0.1"),
        ("0x7f000001", "127.0.0.1"),
        ("0xa9.0xfe.0xa9.0xfe", "169.254.169.254"),
        ("2852039166", "169.254.169.254"),
        ("0", "0.0.0.0"),
        ("example.com", None),
        ("1.2.3.4.5", None),
        ("08.0.0.1", None),
        ("4294967296", None),
        ("256.1.1.1", None),
        ("1_0.0.0.1", None),
        ("+1.2.3.4", None),
    ],
)
def test_legacy_ipv4_spellings_are_read_like_inet_aton(text: str, address: str | None) -> None:
    parsed = parse_legacy_ipv4(text)
    assert (str(parsed) if parsed else None) == address


def test_reached_addresses_name_the_target() -> None:
    assert reached_addresses(IP("::ffff:127.0.0.1")) == (IP("127.0.0.1"),)
    assert reached_addresses(IP("0.0.0.0")) == (IP("0.0.0.0"), IP("127.0.0.1"))
    assert IP("127.0.0.1") in reached_addresses(IP("64:ff9b:1:7f00:0:100::"))


# -- end to end: a real server on 127.0.0.1 that must receive nothing ------------------------


def start_on(servers: Servers, host: str, port: int) -> LocalHTTPServer:
    """A conftest server bound to a chosen port (two hosts, one port: for DNS answers)."""
    server = LocalHTTPServer.__new__(LocalHTTPServer)
    ThreadingHTTPServer.__init__(server, (host, port), Handler)
    server.routes, server.hits, server.release = {}, [], threading.Event()
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    servers.started.append((server, thread))
    return server


def stub(answers: dict[str, Sequence[str] | list[Sequence[str]]], calls: list[str] | None = None):
    """A resolver: host -> addresses; a list of answers is handed out one lookup at a time."""
    counters: dict[str, int] = {}

    async def resolve(host: str, port: int) -> Sequence[str]:
        if calls is not None:
            calls.append(host)
        answer = answers[host]
        if answer and isinstance(answer[0], list):
            index = counters.get(host, 0)
            counters[host] = index + 1
            return answer[min(index, len(answer) - 1)]  # type: ignore[return-value]
        return answer  # type: ignore[return-value]

    return resolve


URL_FORMS = [
    "127.0.0.1",
    "[::ffff:127.0.0.1]",
    "[::ffff:7f00:1]",
    "[::ffff:127.0.0.1%25lo]",
    "0.0.0.0",
    "[::]",
    "[::1]",
    "2130706433",
    "0x7f.1",
    "0x7f000001",
    "017700000001",
    "127.1",
    "127.0.0.1.",
    "LOCALHOST",
    "localhost",
    "evil@127.0.0.1",
    "evil:pass@127.0.0.1",
    "[64:ff9b::7f00:1]",
    "[2002:7f00:1::1]",
    "[fe80::5efe:127.0.0.1%25lo]",
]


@pytest.mark.parametrize("host", URL_FORMS)
async def test_no_url_form_reaches_a_blocked_server(servers: Servers, host: str) -> None:
    server = servers.start("127.0.0.1")
    server.routes["/"] = lambda h: h.reply(200, b"internal secret")
    port = server.server_address[1]
    result = await HTTPRequestTool(network_policy=LOOSE).call(
        {"url": f"http://{host}:{port}/", "timeout": 5}
    )
    assert not result.ok and "blocked network" in result.error, result.error
    assert server.hits == []


@pytest.mark.parametrize(
    "host",
    [
        "[::ffff:127.0.0.1]",
        "0.0.0.0",
        "2130706433",
        "0x7f.1",
        "017700000001",
        "127.0.0.1.",
        "evil@127.0.0.1",
    ],
)
async def test_the_same_forms_do_reach_the_server_when_allowed(servers: Servers, host: str) -> None:
    """The control: these spellings really lead to 127.0.0.1, so the refusals above matter."""
    server = servers.start("127.0.0.1")
    server.routes["/"] = lambda h: h.reply(200, b"internal secret")
    port = server.server_address[1]
    result = await HTTPRequestTool(allow_private=True).call({"url": f"http://{host}:{port}/"})
    assert result.ok and result.output["body"] == "internal secret"
    assert server.hits == [("GET", "/")]


@pytest.mark.parametrize(
    "answer",
    [
        ["::ffff:127.0.0.1"],
        ["64:ff9b::7f00:1"],
        ["2002:7f00:1::1"],
        ["2001:0:4136:e378:8000:63bf:80ff:fffe"],
        ["::127.0.0.1"],
        ["fe80::5efe:7f00:1%lo"],
        ["0.0.0.0"],
        ["::1", "127.0.0.1"],
        ["::ffff:169.254.169.254"],
        ["not-an-address"],
    ],
)
async def test_hostile_dns_answers_are_refused(servers: Servers, answer: list[str]) -> None:
    server = servers.start("127.0.0.1")
    port = server.server_address[1]
    tool = HTTPRequestTool(network_policy=LOOSE, resolver=stub({"evil.test": answer}))
    result = await tool.call({"url": f"http://evil.test:{port}/", "timeout": 5})
    assert not result.ok and "resolves only to refused addresses" in result.error
    assert server.hits == []


async def test_the_resolver_stub_is_what_connects(servers: Servers) -> None:
    """The control: an IPv4-mapped answer does reach the server when nothing blocks it."""
    server = servers.start("127.0.0.1")
    server.routes["/"] = lambda h: h.reply(200, b"via stub")
    port = server.server_address[1]
    tool = HTTPRequestTool(allow_private=True, resolver=stub({"evil.test": ["::ffff:127.0.0.1"]}))
    result = await tool.call({"url": f"http://evil.test:{port}/"})
    assert result.ok and result.output["body"] == "via stub" and len(server.hits) == 1


@pytest.mark.parametrize(
    "answer",
    [
        ["127.0.0.1", "127.0.0.2"],
        ["127.0.0.2", "127.0.0.1"],
        ["::ffff:127.0.0.1", "127.0.0.2", "0.0.0.0"],
    ],
)
async def test_mixed_dns_answers_are_pinned_to_the_checked_address(
    servers: Servers, answer: list[str]
) -> None:
    blocked = servers.start("127.0.0.1")
    port = blocked.server_address[1]
    allowed = start_on(servers, "127.0.0.2", port)
    for server, body in ((blocked, b"internal"), (allowed, b"public")):
        server.routes["/"] = lambda h, body=body: h.reply(200, body)
    policy = NetworkPolicy(allow_private=True, blocked_networks=["127.0.0.1/32"])
    tool = HTTPRequestTool(network_policy=policy, resolver=stub({"mixed.test": answer}))
    for _ in range(3):
        result = await tool.call({"url": f"http://mixed.test:{port}/"})
        assert result.ok and result.output["body"] == "public"
    assert blocked.hits == [] and len(allowed.hits) == 3


async def test_rebinding_between_lookups_cannot_reach_the_blocked_server(servers: Servers) -> None:
    """The first lookup says 127.0.0.2 (allowed), every later one 127.0.0.1 (blocked): the
    redirect to a new connection is looked up again, checked again and refused."""
    blocked = servers.start("127.0.0.1")
    port = blocked.server_address[1]
    allowed = start_on(servers, "127.0.0.2", port)
    other = start_on(servers, "127.0.0.1", 0)
    allowed.routes["/"] = lambda h: h.redirect(f"http://rebind.test:{other.server_address[1]}/")
    calls: list[str] = []
    resolver = stub({"rebind.test": [["127.0.0.2"], ["127.0.0.1"]]}, calls)
    policy = NetworkPolicy(allow_private=True, blocked_networks=["127.0.0.1/32"])
    result = await HTTPRequestTool(network_policy=policy, resolver=resolver).call(
        {"url": f"http://rebind.test:{port}/"}
    )
    assert not result.ok and "redirect 1 to" in result.error and "blocked network" in result.error
    assert allowed.hits == [("GET", "/")] and blocked.hits == [] and other.hits == []
    assert calls == ["rebind.test", "rebind.test"]  # one lookup per connection, no second one


class SpyBackend(httpcore.AsyncNetworkBackend):
    """Records what the policy backend asks the real backend to connect to."""

    def __init__(self) -> None:
        self.inner = httpcore.AnyIOBackend()
        self.hosts: list[str] = []

    async def connect_tcp(self, host: str, port: int, *args: Any, **kwargs: Any) -> Any:
        self.hosts.append(host)
        return await self.inner.connect_tcp(host, port, *args, **kwargs)


async def test_the_connection_goes_to_the_checked_address_not_the_name(servers: Servers) -> None:
    server = servers.start("127.0.0.1")
    port = server.server_address[1]
    spy = SpyBackend()
    calls: list[str] = []
    backend = PolicyNetworkBackend(
        NetworkPolicy(allowed_networks=["127.0.0.1/32"]),
        inner=spy,
        resolver=stub({"pinned.test": [["10.9.9.9", "127.0.0.1"], ["127.0.0.2"]]}, calls),
    )
    stream = await backend.connect_tcp("pinned.test", port)
    await stream.aclose()
    assert spy.hosts == ["127.0.0.1"] and calls == ["pinned.test"]
    with pytest.raises(
        NetworkPolicyError, match=r"resolves only to refused addresses: 127\.0\.0\.2"
    ):
        await backend.connect_tcp("pinned.test", port)
    assert spy.hosts == ["127.0.0.1"]


@pytest.mark.parametrize(
    "target",
    [
        "http://[::ffff:127.0.0.1]:{port}/",
        "http://0x7f.1:{port}/",
        "http://2130706433:{port}/",
        "http://0.0.0.0:{port}/",
        "http://[::1]:{port}/",
        "http://evil@127.0.0.1:{port}/",
        "http://LOCALHOST:{port}/",
        "http://name.test:{port}/",
    ],
)
async def test_every_redirect_hop_is_normalised_and_checked(servers: Servers, target: str) -> None:
    blocked = servers.start("127.0.0.1")
    blocked.routes["/"] = lambda h: h.reply(200, b"internal secret")
    public = servers.start("127.0.0.2")
    public.routes["/go"] = lambda h: h.redirect(target.format(port=blocked.server_address[1]))
    policy = NetworkPolicy(allow_private=True, blocked_networks=["127.0.0.1/32"])
    resolver = stub({"name.test": ["::ffff:127.0.0.1"], "localhost": ["127.0.0.1", "::1"]})
    result = await HTTPRequestTool(network_policy=policy, resolver=resolver).call(
        {"url": f"{public.url}/go"}
    )
    assert not result.ok and "redirect 1 to" in result.error and "blocked" in result.error
    assert public.hits == [("GET", "/go")] and blocked.hits == []


def test_allowed_hosts_match_any_spelling_of_a_listed_address_only() -> None:
    policy = NetworkPolicy(allowed_hosts=["127.0.0.1", "*.example.com"], allow_private=True)
    assert policy.host_allowed("2130706433") and policy.host_allowed("0x7f.1")
    assert policy.host_allowed("API.Example.com.")
    assert not policy.host_allowed("127.0.0.2") and not policy.host_allowed("0x7f.2")
    assert not policy.host_allowed("example.com.evil.test")
