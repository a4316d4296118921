"""NetworkPolicy: which hosts and addresses `http_request` may reach.

By default any public host may be reached and every address that is not globally routable is
refused: loopback, private networks, link-local (which holds the cloud metadata services such as
169.254.169.254), carrier-grade NAT, multicast, reserved and unspecified addresses.

Every policy check is made on the address a connection *reaches*, not on how it is spelled
(see `address_forms`): an IPv6 address that carries an IPv4 address (IPv4-mapped, NAT64, 6to4,
Teredo, ISATAP, ...) is judged as that IPv4 address, by the allow lists, the blocked networks and
the private/loopback/link-local checks alike; `0.0.0.0` and `::` reach this host; IPv4 written in
decimal, octal or hex (`2130706433`, `0x7f.1`, `017700000001`) is read as the address it names.

The check is made on the address actually connected to, after name resolution, for the first
request and for every redirect, for every address a name resolves to; refused addresses are
dropped and the connection goes to a checked one, so DNS tricks and redirects cannot reach an
internal service. Tests and local setups open it up with `allow_private=True` or with
`allowed_networks` (for example `["127.0.0.1/32"]`); `blocked_networks` stay refused even then.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import anyio
from pydantic import BaseModel, ConfigDict, Field, IPvAnyNetwork, field_validator

from jianmu_bt.tools.builtin.address_forms import (
    IPAddress,
    address_category,
    block_keys,
    embedded_ipv4,
    embedded_ipv4s,
    explain,
    parse_any_ip,
    parse_ip,
    parse_legacy_ipv4,
    plain_category,
    reached_addresses,
)
from jianmu_bt.tools.builtin.faults import ToolFault

__all__ = [
    "IPAddress",
    "NetworkPolicy",
    "NetworkPolicyError",
    "Resolver",
    "address_category",
    "embedded_ipv4",
    "embedded_ipv4s",
    "parse_ip",
    "reached_addresses",
    "system_resolver",
]

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolver = Callable[[str, int], Awaitable[Sequence[str]]]
"""Resolves (host, port) to address strings; `system_resolver` unless a test swaps it."""


class NetworkPolicyError(ToolFault):
    """A URL, host or address the network policy refuses; the message names the reason."""


def _canonical_network(network: IPNetwork) -> IPNetwork:
    """An IPv4-mapped IPv6 network (::ffff:10.0.0.0/104) as the IPv4 network it means."""
    if network.version == 6 and network.prefixlen >= 96:
        mapped = network.network_address.ipv4_mapped
        if mapped is not None:
            return ipaddress.IPv4Network((mapped, network.prefixlen - 96))
    return network


async def system_resolver(host: str, port: int) -> list[str]:
    """The addresses the operating system's resolver gives for (host, port), in its order."""
    infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(sockaddr[0]) for *_, sockaddr in infos]


class NetworkPolicy(BaseModel):
    """Rules for outgoing HTTP requests. Immutable; build a new one to change it.

    | field              | default         | meaning                                            |
    |--------------------|-----------------|----------------------------------------------------|
    | `allowed_hosts`    | None (any)      | host names allowed; "*.example.com" for subdomains |
    | `allow_private`    | False           | also allow non-public addresses (local use, tests) |
    | `allowed_networks` | ()              | address ranges allowed even though not public      |
    | `blocked_networks` | ()              | ranges refused always, even with allow_private     |
    | `allowed_schemes`  | ("http","https")| URL schemes allowed                                |
    | `allowed_ports`    | None (any)      | ports allowed                                      |

    Addresses are judged by what they reach (`reached_addresses`): `::ffff:127.0.0.1` or
    `64:ff9b::7f00:1` is refused by `blocked_networks=["127.0.0.0/8"]` and is not let in by
    `allowed_networks=["::/0"]`.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    allowed_hosts: tuple[str, ...] | None = None
    allow_private: bool = False
    allowed_networks: tuple[IPvAnyNetwork, ...] = ()
    blocked_networks: tuple[IPvAnyNetwork, ...] = ()
    allowed_schemes: tuple[str, ...] = ("http", "https")
    allowed_ports: tuple[int, ...] | None = Field(None)

    @field_validator("allowed_hosts")
    @classmethod
    def _lower_hosts(cls, hosts: tuple[str, ...] | None) -> tuple[str, ...] | None:
        return None if hosts is None else tuple(h.strip().lower().rstrip(".") for h in hosts)

    @field_validator("allowed_networks", "blocked_networks")
    @classmethod
    def _canonical_networks(cls, networks: tuple[IPNetwork, ...]) -> tuple[IPNetwork, ...]:
        return tuple(_canonical_network(net) for net in networks)

    # -- checks ----------------------------------------------------------------------------

    def host_allowed(self, host: str) -> bool:
        """Whether the host passes `allowed_hosts` (always true when it is None). An IP host
        matches an entry naming the same address in any spelling; wildcards match names only."""
        if self.allowed_hosts is None:
            return True
        host = host.lower().rstrip(".")
        literal = parse_any_ip(host)
        for allowed in self.allowed_hosts:
            if allowed.startswith("*."):
                if literal is None and host.endswith(allowed[1:]):
                    return True
            elif host == allowed or (literal is not None and literal == parse_any_ip(allowed)):
                return True
        return False

    def check_url(self, url: Any) -> None:
        """Refuse a URL by scheme, host or port (an `httpx.URL` or anything with those parts).

        An IP-literal host is checked here too; a host name, or IPv4 in a legacy numeric form
        (`2130706433`, `0x7f.1`), is checked when it is resolved.
        """
        scheme, host, port = url.scheme, url.host, url.port
        if not scheme:
            raise NetworkPolicyError(f"URL '{url}' is not absolute; start it with https://")
        if scheme not in self.allowed_schemes:
            raise NetworkPolicyError(
                f"scheme '{scheme}' is not allowed (allowed: {', '.join(self.allowed_schemes)})"
            )
        if not host:
            raise NetworkPolicyError(f"URL '{url}' has no host")
        if not self.host_allowed(host):
            raise NetworkPolicyError(
                f"host '{host}' is not in the allowed hosts ({', '.join(self.allowed_hosts or ())})"
            )
        effective_port = port or (443 if scheme == "https" else 80)
        if self.allowed_ports is not None and effective_port not in self.allowed_ports:
            raise NetworkPolicyError(f"port {effective_port} is not allowed")
        literal = parse_ip(host)
        if literal is not None:
            self.check_address(literal, host)

    def address_refusal(self, address: IPAddress) -> str | None:
        """The reason `address` may not be connected to, or None when it may.

        `blocked_networks` are matched against the address, everything it reaches and, for
        the local host, both families' loopback; then every address it reaches must be allowed
        (`allow_private`, `allowed_networks`, or public).
        """
        reached = reached_addresses(address)
        for key in block_keys(address, reached):
            if any(key in net for net in self.blocked_networks):
                return (
                    "a blocked network"
                    if key == address
                    else (f"a blocked network ({address} reaches {key})")
                )
        for target in reached:
            if self.allow_private or any(target in net for net in self.allowed_networks):
                continue
            reason = plain_category(target)
            if reason:
                return explain(reason, address, target)
        return None

    def check_address(self, address: IPAddress, host: str) -> None:
        """Refuse an address that is not allowed, naming the host and the reason."""
        reason = self.address_refusal(address)
        if reason:
            same = str(address) == host.strip("[]")
            shown = f"'{host}'" if same else f"'{host}' ({address})"
            raise NetworkPolicyError(
                f"address {shown} is refused by the network policy: {reason}; requests to "
                "internal addresses are blocked"
            )

    async def allowed_addresses(
        self, host: str, port: int, resolver: Resolver | None = None
    ) -> list[str]:
        """Resolve `host` (once) and keep the addresses the policy allows, in resolver order.

        The caller connects only to the returned addresses, so the address checked is the
        address used; an answer mixing allowed and refused addresses is pinned to the allowed
        ones. IPv4 in a legacy numeric form is read here, the way inet_aton would, and never
        sent to a resolver. Raises NetworkPolicyError when every address is refused, OSError
        when resolution fails.
        """
        literal = parse_ip(host)
        if literal is not None:
            self.check_address(literal, host)
            return [str(literal)]
        numeric = parse_legacy_ipv4(host)
        if numeric is not None:
            answers: Sequence[str] = [str(numeric)]
        else:
            answers = await (resolver or system_resolver)(host, port)
        allowed: list[str] = []
        refused: list[str] = []
        for text in answers:
            address = parse_ip(str(text))
            if address is None:
                refused.append(f"{text} (not an IP address)")
                continue
            reason = self.address_refusal(address)
            if reason:
                refused.append(f"{address} ({reason})")
            elif str(address) not in allowed:
                allowed.append(str(address))
        if not allowed:
            raise NetworkPolicyError(
                f"host '{host}' resolves only to refused addresses: "
                f"{', '.join(refused) or 'none'}; requests to internal addresses are blocked"
            )
        return allowed
