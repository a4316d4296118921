"""NetworkPolicy: which hosts and addresses `http_request` may reach.

By default any public host may be reached and every address that is not globally routable is
refused: loopback, private networks, link-local (which holds the cloud metadata services such as
169.254.169.254), carrier-grade NAT, multicast, reserved and unspecified addresses, and IPv6
addresses that embed one of those (IPv4-mapped, NAT64, 6to4, Teredo).

The address check is made on the address actually connected to, after name resolution, for the
first request and for every redirect; a host name that resolves to a refused address is refused,
so DNS tricks and redirects cannot reach an internal service. Tests and local setups open it up
with `allow_private=True` or with `allowed_networks` (for example `["127.0.0.1/32"]`).
"""

from __future__ import annotations

import ipaddress
import socket
from typing import Any

import anyio
from pydantic import BaseModel, ConfigDict, Field, IPvAnyNetwork, field_validator

from jianmu_bt.tools.builtin.model_tool import ToolFault

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")
_METADATA = {ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254")}


class NetworkPolicyError(ToolFault):
    """A URL, host or address the network policy refuses; the message names the reason."""


def embedded_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (mapped, NAT64, 6to4, Teredo, compatible)."""
    if isinstance(address, ipaddress.IPv4Address):
        return None
    if address.ipv4_mapped:
        return address.ipv4_mapped
    if address.sixtofour:
        return address.sixtofour
    if address.teredo:
        return address.teredo[1]
    if address in _NAT64 or (address in _IPV4_COMPATIBLE and int(address) > 1):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def address_category(address: IPAddress) -> str | None:
    """Why an address is not public ("loopback", "private", ...), or None when it is public."""
    inner = embedded_ipv4(address)
    if inner is not None:
        reason = address_category(inner)
        return f"{reason}, embedded in an IPv6 address" if reason else None
    if address in _METADATA:
        return "cloud metadata service"
    checks = (
        ("unspecified", address.is_unspecified),
        ("loopback", address.is_loopback),
        ("link-local", address.is_link_local),
        ("multicast", address.is_multicast),
        ("reserved", address.is_reserved),
        ("private network", address.is_private),
    )
    for name, hit in checks:
        if hit:
            return name
    return None if address.is_global else "not globally routable"


def parse_ip(text: str) -> IPAddress | None:
    """An IP address from host text (IPv6 brackets and zone ids allowed), or None for a name."""
    try:
        return ipaddress.ip_address(text.strip("[]").split("%", 1)[0])
    except ValueError:
        return None


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

    # -- checks ----------------------------------------------------------------------------

    def host_allowed(self, host: str) -> bool:
        """Whether the host name passes `allowed_hosts` (always true when it is None)."""
        if self.allowed_hosts is None:
            return True
        host = host.lower().rstrip(".")
        for allowed in self.allowed_hosts:
            if allowed.startswith("*."):
                if host.endswith(allowed[1:]):
                    return True
            elif host == allowed:
                return True
        return False

    def check_url(self, url: Any) -> None:
        """Refuse a URL by scheme, host or port (an `httpx.URL` or anything with those parts).

        An IP-literal host is checked here too; a host name is checked when it is resolved.
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
        """The reason `address` may not be connected to, or None when it may."""
        if any(address in net for net in self.blocked_networks):
            return "a blocked network"
        if self.allow_private or any(address in net for net in self.allowed_networks):
            return None
        return address_category(address)

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

    async def allowed_addresses(self, host: str, port: int) -> list[str]:
        """Resolve `host` and keep the addresses the policy allows, in resolver order.

        Raises NetworkPolicyError when every address is refused, OSError when resolution fails.
        """
        literal = parse_ip(host)
        if literal is not None:
            self.check_address(literal, host)
            return [str(literal)]
        infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        allowed: list[str] = []
        refused: list[str] = []
        for *_, sockaddr in infos:
            address = parse_ip(str(sockaddr[0]))
            if address is None:
                continue
            reason = self.address_refusal(address)
            if reason:
                refused.append(f"{address} ({reason})")
            elif str(address) not in allowed:
                allowed.append(str(address))
        if not allowed:
            raise NetworkPolicyError(
                f"host '{host}' resolves only to refused addresses: {', '.join(refused)}; "
                "requests to internal addresses are blocked"
            )
        return allowed
