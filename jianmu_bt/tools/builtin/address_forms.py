"""How an IP address is written and where it leads: the forms the network policy sees through.

Every address an http_request connection could use is judged by the address it *reaches*, not
by how it is spelled. An IPv6 address that carries an IPv4 address (IPv4-mapped
`::ffff:a.b.c.d`, IPv4-translated `::ffff:0:a.b.c.d`, IPv4-compatible `::a.b.c.d`, NAT64
`64:ff9b::/96` and local-use `64:ff9b:1::/48`, 6to4 `2002::/16`, Teredo `2001::/32`, ISATAP
`::5efe:a.b.c.d`) reaches that IPv4 address; `0.0.0.0` and `::` reach this host's loopback. IPv4
in legacy numeric spellings (`2130706433`, `0x7f.1`, `017700000001`, `127.1`) is read the way
inet_aton reads it.

Not recognisable from the address alone, so not covered: 6rd and NAT64 with an operator's own
prefix (block those prefixes, or the IPv4 ranges behind them, in the policy).
"""

from __future__ import annotations

import ipaddress

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_V4 = ipaddress.IPv4Address
_V4_LOOPBACK = ipaddress.ip_address("127.0.0.1")
_V6_LOOPBACK = ipaddress.ip_address("::1")
_IPV4_TRANSLATED = ipaddress.ip_network("::ffff:0:0:0/96")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")
_ISATAP_IDS = (0x00005EFE, 0x02005EFE)  # interface id ::0:5efe:a.b.c.d or ::200:5efe:a.b.c.d
_METADATA = {ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254")}
_LOW32 = 0xFFFFFFFF


def _bits(value: int, start: int, length: int) -> int:
    """`length` bits of a 128-bit value, counted from its most significant bit."""
    return (value >> (128 - start - length)) & ((1 << length) - 1)


def _rfc6052(value: int, prefix: int) -> ipaddress.IPv4Address:
    """The IPv4 address in a NAT64 address with a `prefix`-bit prefix (RFC 6052, 2.2)."""
    if prefix == 96:
        return _V4(value & _LOW32)
    if prefix == 64:
        return _V4(_bits(value, 72, 32))
    if prefix == 56:
        return _V4(_bits(value, 56, 8) << 24 | _bits(value, 72, 24))
    return _V4(_bits(value, 48, 16) << 16 | _bits(value, 72, 16))  # /48


def _is_isatap(value: int) -> bool:
    return _bits(value, 64, 32) in _ISATAP_IDS


def embedded_ipv4s(address: IPAddress) -> tuple[ipaddress.IPv4Address, ...]:
    """Every IPv4 address an IPv6 address carries (mapped, translated, compatible, NAT64, 6to4,
    Teredo client and server, ISATAP); empty for an IPv4 address or a plain IPv6 one.

    A local-use NAT64 address (64:ff9b:1::/48) gives one candidate per prefix length its
    translator may use, since which one it uses is not visible from here.
    """
    if isinstance(address, ipaddress.IPv4Address):
        return ()
    value = int(address)
    if address.ipv4_mapped:
        return (address.ipv4_mapped,)
    if address.sixtofour:
        return (address.sixtofour,)
    if address.teredo:
        server, client = address.teredo
        return (client, server)
    if address in _IPV4_TRANSLATED or address in _NAT64:
        return (_V4(value & _LOW32),)
    if address in _NAT64_LOCAL:
        return tuple(dict.fromkeys(_rfc6052(value, n) for n in (96, 64, 56, 48)))
    if address in _IPV4_COMPATIBLE and value > 1:
        return (_V4(value & _LOW32),)
    if _is_isatap(value):
        return (_V4(value & _LOW32),)
    return ()


def embedded_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    """The first IPv4 address an IPv6 address carries, or None (see `embedded_ipv4s`)."""
    found = embedded_ipv4s(address)
    return found[0] if found else None


def reached_addresses(address: IPAddress) -> tuple[IPAddress, ...]:
    """The addresses a connection to `address` may end up at: what the policy judges.

    A plain address reaches itself; an IPv6 address carrying an IPv4 one reaches that IPv4
    address (a local-use NAT64 or ISATAP address reaches its own network too, through a local
    translator or router); an unspecified address (`0.0.0.0`, `::`) reaches this host's
    loopback and is kept beside it, so a refusal still says "unspecified".
    """
    inner = embedded_ipv4s(address)
    if not inner:
        found: tuple[IPAddress, ...] = (address,)
    elif address in _NAT64_LOCAL or _is_isatap(int(address)):
        found = (address, *inner)
    else:
        found = inner
    reached: list[IPAddress] = []
    for target in found:
        reached.append(target)
        if target.is_unspecified:
            reached.append(_V4_LOOPBACK if target.version == 4 else _V6_LOOPBACK)
    return tuple(dict.fromkeys(reached))


def block_keys(address: IPAddress, reached: tuple[IPAddress, ...]) -> tuple[IPAddress, ...]:
    """What `blocked_networks` are matched against: the address as written, what it reaches,
    and for the local host the other family's loopback too (both reach the same services)."""
    keys: list[IPAddress] = [address, *reached]
    for target in reached:
        if target.is_loopback:
            keys.append(_V6_LOOPBACK if target.version == 4 else _V4_LOOPBACK)
    return tuple(dict.fromkeys(keys))


def plain_category(address: IPAddress) -> str | None:
    """Why an address, taken as written, is not public; None when it is public."""
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


def explain(reason: str, address: IPAddress, target: IPAddress) -> str:
    """A refusal reason for `address` found on `target`, saying how the one leads to the other."""
    if target == address:
        return reason
    if target in embedded_ipv4s(address):
        return f"{reason}, embedded in an IPv6 address"
    return f"{reason} ({address} reaches {target})"


def address_category(address: IPAddress) -> str | None:
    """Why an address is not public ("loopback", "private network", ...), or None when every
    address it reaches (see `reached_addresses`) is public."""
    for target in reached_addresses(address):
        reason = plain_category(target)
        if reason:
            return explain(reason, address, target)
    return None


def _ipv4_number(part: str) -> int | None:
    """One part of an IPv4 address in decimal, octal (leading 0) or hex (0x); None if not."""
    if part[:2] in ("0x", "0X"):
        digits, base, allowed = part[2:], 16, "0123456789abcdefABCDEF"
    elif len(part) > 1 and part[0] == "0":
        digits, base, allowed = part[1:], 8, "01234567"
    else:
        digits, base, allowed = part, 10, "0123456789"
    if not part or any(c not in allowed for c in digits):
        return None
    return int(digits, base) if digits else 0


def parse_legacy_ipv4(text: str) -> ipaddress.IPv4Address | None:
    """IPv4 the way URL parsers and inet_aton read it: 1 to 4 parts in decimal, octal or hex,
    the last filling the remaining bytes, one trailing dot allowed (`2130706433`, `0x7f.1`,
    `017700000001`, `127.1`, `127.0.0.1.`); None when the text is not such a number."""
    parts = text.split(".")
    if len(parts) > 1 and parts[-1] == "":
        parts.pop()
    if not 1 <= len(parts) <= 4:
        return None
    numbers = [_ipv4_number(part) for part in parts]
    if any(n is None for n in numbers):
        return None
    *head, last = (n for n in numbers if n is not None)
    if any(n > 255 for n in head) or last >= 256 ** (4 - len(head)):
        return None
    value = last
    for index, number in enumerate(head):
        value |= number << (8 * (3 - index))
    return _V4(value)


def parse_ip(text: str) -> IPAddress | None:
    """An IP address in standard notation from host text (IPv6 brackets and zone ids allowed),
    or None for anything else, including IPv4 in a legacy numeric form."""
    try:
        return ipaddress.ip_address(text.strip("[]").split("%", 1)[0])
    except ValueError:
        return None


def parse_any_ip(text: str) -> IPAddress | None:
    """An IP address in standard notation or IPv4 in a legacy numeric form, or None."""
    address = parse_ip(text)
    return address if address is not None else parse_legacy_ipv4(text)
