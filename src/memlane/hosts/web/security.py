"""Who may use the viewer: the person who started it, from this machine.

* **Token.** ``memlane ui`` prints a URL carrying a random token
  (``secrets.token_urlsafe``). A request must carry it, in the ``token``
  query parameter (the first visit) or in the cookie set on that visit;
  anything else is refused with 403, static files included.
* **Host.** The Host header must name the loopback address the server
  listens on (``127.0.0.1`` or ``localhost``): a page on another site whose
  name resolves to 127.0.0.1 (DNS rebinding) is refused.
* **State changes** are POSTs only (the routes say so: a GET gets 405), and
  a POST must come from this origin (Origin, else Referer) and carry the
  CSRF token of the page that rendered its form.

Tokens are compared in constant time.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qs, urlsplit

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

COOKIE = "memlane_ui"
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost"})
#: Sent with every answer: no framing, no foreign scripts, no sniffing, and
#: the URL (with its token) never goes to another site as a referrer.
SECURITY_HEADERS = (
    (
        b"content-security-policy",
        b"default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
)


@dataclass(frozen=True)
class Secrets:
    """The access token of the printed URL and the CSRF token of the forms."""

    token: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(24))

    def token_ok(self, given: str | None) -> bool:
        return given is not None and secrets.compare_digest(given, self.token)

    def csrf_ok(self, given: str | None) -> bool:
        return given is not None and secrets.compare_digest(given, self.csrf)


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return bytes(value).decode("latin-1")
    return None


def host_name(value: str | None) -> str | None:
    """``127.0.0.1`` of ``127.0.0.1:8123`` (None when there is no such header)."""
    if not value:
        return None
    return urlsplit(f"//{value}").hostname


def same_origin(scope: Scope) -> bool:
    """The request's Origin (else Referer) names the host it was sent to."""
    host = _header(scope, b"host")
    origin = _header(scope, b"origin") or _header(scope, b"referer")
    if not host or not origin or origin == "null":
        return False
    parts = urlsplit(origin)
    return parts.scheme == "http" and parts.netloc == host


class Guard:
    """ASGI middleware: the token, the Host check and the security headers."""

    def __init__(self, app: ASGIApp, keys: Secrets) -> None:
        self.app = app
        self.keys = keys

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if host_name(_header(scope, b"host")) not in LOOPBACK_NAMES:
            await _refuse(send, b"this viewer answers only on 127.0.0.1 / localhost")
            return
        query = parse_qs(bytes(scope.get("query_string", b"")).decode("latin-1"))
        given = query.get("token")
        from_query = given[0] if given else None
        cookie = SimpleCookie(_header(scope, b"cookie") or "")
        from_cookie = cookie[COOKIE].value if COOKIE in cookie else None
        if not (self.keys.token_ok(from_query) or self.keys.token_ok(from_cookie)):
            await _refuse(
                send, b"open the URL that `memlane ui` printed (it carries the access token)"
            )
            return
        set_cookie = self.keys.token_ok(from_query) and not self.keys.token_ok(from_cookie)

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers += list(SECURITY_HEADERS)
                if set_cookie:
                    headers.append(
                        (
                            b"set-cookie",
                            f"{COOKIE}={self.keys.token}; Path=/; HttpOnly; SameSite=Strict".encode(),
                        )
                    )
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, with_headers)


async def _refuse(send: Send, reason: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 403,
            "headers": [(b"content-type", b"text/plain; charset=utf-8"), *SECURITY_HEADERS],
        }
    )
    await send({"type": "http.response.body", "body": b"403 forbidden: " + reason + b"\n"})
