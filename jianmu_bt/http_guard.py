"""Who may talk to our HTTP servers (the viewer, `jianmu mcp serve --transport http`): requests
for this server only, actions with its token only.

The server binds 127.0.0.1, but a web page elsewhere can still reach it through the browser: by
DNS rebinding (a foreign name resolving to 127.0.0.1; its requests carry that foreign `Host`) or
by cross-site requests (a foreign `Origin`). Both are refused with 403 before any route runs.
Every `/api/` request also needs the token printed at start-up (`X-Jianmu-Token`, or `?token=`
for reads; see `app`): no token, no tree, no events, no action. Every response forbids framing
and any script but the page's own.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: The header that carries the token.
TOKEN_HEADER = "x-jianmu-token"
#: Sent with every response: only this server's own scripts run (a node name can never become
#: code), and no other site may frame the page (its Approve button cannot be clickjacked).
SECURITY_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
        b"img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'",
    ),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
]
#: Host names this server answers to (with its port).
LOCAL_NAMES = ("127.0.0.1", "localhost")


@dataclass
class Access:
    """The token and the port (known once the socket is bound) that requests are checked with."""

    token: str = field(default_factory=lambda: secrets.token_urlsafe(18))
    port: int = 0

    def hosts(self) -> set[str]:
        """The `Host` header values accepted."""
        return {f"{name}:{self.port}" for name in LOCAL_NAMES}

    def origins(self) -> set[str]:
        """The `Origin` header values accepted (this server's own pages)."""
        return {f"http://{host}" for host in self.hosts()}

    def token_ok(self, given: str | None) -> bool:
        """True when `given` is the token (compared in constant time, as UTF-8 bytes: any text
        a request carries is compared, never raises)."""
        if not given:
            return False
        return secrets.compare_digest(
            str(given).encode("utf-8", "surrogateescape"), self.token.encode("utf-8")
        )

    def refusal(self, headers: dict[str, str]) -> str | None:
        """Why a request with these headers is refused, or None when it may go on."""
        host = headers.get("host", "")
        if host not in self.hosts():
            return f"refused: this viewer answers only to {sorted(self.hosts())[0]}, not {host!r}"
        origin = headers.get("origin")
        if origin is not None and origin not in self.origins():
            return f"refused: requests from the origin {origin!r} are not allowed"
        return None


class HostOriginGuard:
    """ASGI middleware: 403 for a foreign Host or Origin (see the module docstring)."""

    def __init__(self, app: ASGIApp, access: Access) -> None:
        self.app = app
        self.access = access

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = {
                k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]
            }
            reason = self.access.refusal(headers)
            if reason is not None:
                body = reason.encode("utf-8")
                await send(
                    {
                        "type": "http.response.start",
                        "status": 403,
                        "headers": [
                            (b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode()),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return

        async def send_with_policy(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        await self.app(scope, receive, send_with_policy)
