"""Who may use an MCP server served over HTTP: a bearer token, this server's own Host names.

Served over streamable HTTP, the tools (and with `--store` every run of the served tree) are
reachable by any process that can open the port. So by default a request needs the header
`Authorization: Bearer <token>`: a token generated at start (printed once on stderr with the
URL), read from `--token-file PATH` (refused when group or others may read it) or taken from
`$JIANMU_MCP_TOKEN`. A missing or wrong token gets 401 with `WWW-Authenticate: Bearer` and an
empty body; the token is compared in constant time. `--no-auth` is allowed on a loopback
address only.

Whatever the token, a request whose `Host` is not one of this server's names, or whose `Origin`
is a foreign page, is refused with 403 before anything else (a web page reaching the port by DNS
rebinding or a cross-site request): the viewer's `HostOriginGuard` does that, with the names
this server answers to (loopback names, the `--host` address, the machine's names when bound to
every interface, and `--allow-host` names).
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import secrets
import socket
import stat
from dataclasses import dataclass, field
from pathlib import Path

from jianmu_bt.http_guard import (
    Access,
    ASGIApp,
    HostOriginGuard,
    Message,
    Receive,
    Scope,
    Send,
)

#: The environment variable a token may come from.
TOKEN_ENV = "JIANMU_MCP_TOKEN"
#: Names of this machine's loopback interface, as a `Host` header spells them.
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
#: The 401 answer's headers (and nothing else: no body says why).
UNAUTHORIZED_HEADERS = [(b"www-authenticate", b"Bearer"), (b"content-length", b"0")]


class ServeAccessError(ValueError):
    """Options of `serve` that would serve without the protection asked for (one line)."""


def is_loopback(host: str) -> bool:
    """True for `localhost` and loopback addresses (`127.0.0.0/8`, `::1`)."""
    if host.strip("[]").lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _is_wildcard(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return host == ""


def _host_name(host: str) -> str:
    """`host` as a `Host` header spells it (an IPv6 address in brackets)."""
    bare = host.strip("[]")
    return f"[{bare}]" if ":" in bare else bare


@dataclass
class ServedAccess(Access):
    """The bearer token (`token`; ignored when `required` is False), where it came from and the
    names this server answers to; `port` is set once the socket is bound."""

    token: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    required: bool = True
    source: str = "generated"
    names: tuple[str, ...] = LOOPBACK_NAMES

    @classmethod
    def for_host(
        cls,
        host: str,
        *,
        token: str | None = "",
        source: str = "",
        allow_hosts: tuple[str, ...] = (),
    ) -> ServedAccess:
        """The access of a server bound to `host`: `token=""` generates one, `token=None`
        serves without a token (loopback only: else ServeAccessError)."""
        if token is None and not is_loopback(host):
            raise ServeAccessError(
                f"--no-auth is allowed on a loopback address only, not on {host!r}: any machine "
                "that reaches it could call the tools (drop --no-auth, or use --host 127.0.0.1)"
            )
        names = list(LOOPBACK_NAMES)
        if _is_wildcard(host):
            names += [socket.gethostname(), socket.getfqdn()]
        else:
            names.append(_host_name(host))
        names += [_host_name(name) for name in allow_hosts]
        kept = tuple(dict.fromkeys(n.lower() for n in names if n))
        if token is None:
            return cls(required=False, source="none", names=kept)
        if token:
            return cls(token=token, source=source or "given", names=kept)
        return cls(names=kept)

    def hosts(self) -> set[str]:
        """The `Host` header values accepted (without a port too when the port is 80)."""
        hosts = {f"{name}:{self.port}" for name in self.names}
        return hosts | set(self.names) if self.port == 80 else hosts

    def refusal(self, headers: dict[str, str]) -> str | None:
        """Why a request with these headers is refused (a foreign Host or Origin), or None."""
        host = headers.get("host", "").lower()
        if host not in self.hosts():
            return (
                f"refused: this MCP server answers to {', '.join(sorted(self.hosts()))}, not "
                f"{host!r} (serve with --allow-host NAME to add a name)"
            )
        origin = headers.get("origin")
        if origin is not None and origin.lower() not in self.origins():
            return f"refused: requests from the origin {origin!r} are not allowed"
        return None

    def authorized(self, authorization: str | None) -> bool:
        """True when no token is required or `authorization` is `Bearer <the token>`."""
        if not self.required:
            return True
        scheme, _, given = (authorization or "").strip().partition(" ")
        return scheme.lower() == "bearer" and self.token_ok(given.strip())

    def notice(self, url: str) -> str:
        """What to print once on stderr: how to connect to `url`."""
        if not self.required:
            return f"  no token needed (--no-auth): any local user may call these tools at {url}"
        if self.source == "generated":
            return (
                f"  connect to {url} with the header (a token generated for this run; choose "
                f"one with --token-file or ${TOKEN_ENV}): Authorization: Bearer {self.token}"
            )
        return f"  connect to {url} with the header Authorization: Bearer <{self.source}>"


class BearerGuard:
    """ASGI middleware: 401 with `WWW-Authenticate: Bearer` and no body without the token."""

    def __init__(self, app: ASGIApp, access: ServedAccess) -> None:
        self.app = app
        self.access = access

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            authorization = None
            for key, value in scope.get("headers", []):
                if key.lower() == b"authorization":
                    authorization = value.decode("latin-1")
            if not self.access.authorized(authorization):
                start: Message = {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": list(UNAUTHORIZED_HEADERS),
                }
                await send(start)
                await send({"type": "http.response.body", "body": b""})
                return
        await self.app(scope, receive, send)


def guarded_app(app: ASGIApp, access: ServedAccess) -> ASGIApp:
    """`app` behind the Host/Origin check (403), then the token check (401)."""
    return HostOriginGuard(BearerGuard(app, access), access)


def read_token_file(path: str) -> str:
    """The token in the file at `path` (surrounding whitespace dropped); ServeAccessError when
    it is not a regular file, group or others may read or write it, or it is empty."""
    try:
        info = os.stat(path)
    except OSError as exc:
        raise ServeAccessError(f"--token-file {path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(info.st_mode):
        raise ServeAccessError(f"--token-file {path}: not a regular file")
    if info.st_mode & 0o077:
        raise ServeAccessError(
            f"--token-file {path}: group or others may read it (mode "
            f"{stat.S_IMODE(info.st_mode):04o}); make it private with chmod 600 {path}"
        )
    try:
        token = Path(path).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise ServeAccessError(f"--token-file {path}: cannot read it ({exc})") from None
    if not token or any(c.isspace() for c in token):
        raise ServeAccessError(f"--token-file {path}: empty, or more than one word")
    return token


def access_from_args(args: argparse.Namespace) -> ServedAccess | None:
    """The access of the HTTP server the `serve` options describe (None over stdio), checked
    once and kept on `args`; ServeAccessError for options that cannot be honoured."""
    if getattr(args, "http_access", None) is not None:
        return args.http_access
    token_file = getattr(args, "token_file", None)
    no_auth = getattr(args, "no_auth", False)
    allow = tuple(getattr(args, "allow_host", None) or ())
    if args.transport == "stdio":
        given = [f for f, on in (("--token-file", token_file), ("--no-auth", no_auth)) if on]
        if given or allow:
            flags = ", ".join([*given, *(["--allow-host"] if allow else [])])
            raise ServeAccessError(f"{flags}: only with --transport http")
        return None
    if no_auth and token_file:
        raise ServeAccessError("--no-auth and --token-file: choose one")
    if no_auth:
        access = ServedAccess.for_host(args.host, token=None, allow_hosts=allow)
    elif token_file:
        token = read_token_file(token_file)
        access = ServedAccess.for_host(
            args.host, token=token, source=f"--token-file {token_file}", allow_hosts=allow
        )
    elif (from_env := os.environ.get(TOKEN_ENV, "").strip()) != "":
        access = ServedAccess.for_host(
            args.host, token=from_env, source=f"${TOKEN_ENV}", allow_hosts=allow
        )
    else:
        access = ServedAccess.for_host(args.host, allow_hosts=allow)
    args.http_access = access
    return access


__all__ = [
    "TOKEN_ENV",
    "BearerGuard",
    "ServeAccessError",
    "ServedAccess",
    "access_from_args",
    "guarded_app",
    "is_loopback",
    "read_token_file",
]
