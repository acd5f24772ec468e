"""Who may use the viewer: the person who started it, from this machine.

* **Token in the path.** ``memlane ui`` prints a URL whose first path segment
  is a random token (``secrets.token_urlsafe``): ``http://127.0.0.1:PORT/<token>/``.
  Every page, fragment and asset lives under that prefix and links stay under
  it, so no cookie is needed: a cookie would go to every server on 127.0.0.1
  (cookies are per host, not per port) and two viewers would overwrite each
  other's. Anything outside the prefix is refused with 403. A ``?token=``
  query (an old-style link) is answered with a 303 to the same page under the
  prefix, without the query, so the token does not linger in a query string.
* **Host.** The Host header must name the loopback address the server
  listens on (``127.0.0.1`` or ``localhost``): a page on another site whose
  name resolves to 127.0.0.1 (DNS rebinding) is refused.
* **HTTP only.** A websocket (or any other non-HTTP) connection is closed.
* **State changes** are POSTs only (the routes say so: a GET gets 405), and
  a POST must come from this origin (Origin, else Referer) and carry the
  CSRF token of the page that rendered its form.

Tokens are compared in constant time. The security headers go with every
answer, refusals and server errors included (Guard wraps the whole app).
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from memlane.hosts.web.render import ROOT

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

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
    """ASGI middleware: HTTP only, the Host check, the token prefix, the security headers."""

    def __init__(self, app: ASGIApp, keys: Secrets) -> None:
        self.app = app
        self.keys = keys
        self.root = f"/{keys.token}"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
            return
        if host_name(_header(scope, b"host")) not in LOOPBACK_NAMES:
            await _refuse(send, b"this viewer answers only on 127.0.0.1 / localhost")
            return
        path: str = scope.get("path", "")
        first, _, rest = path.removeprefix("/").partition("/")
        query = parse_qsl(bytes(scope.get("query_string", b"")).decode("latin-1"), True)
        given = [value for name, value in query if name == "token"]
        inside = self.keys.token_ok(first)
        if not inside and not (given and self.keys.token_ok(given[0])):
            await _refuse(
                send, b"open the URL that `memlane ui` printed (it carries the access token)"
            )
            return
        if given or (inside and not path.startswith(self.root + "/")):
            # Under the prefix, without the token in the query: where a link goes.
            target = self.root + "/" + (rest if inside else path.removeprefix("/"))
            kept = [(name, value) for name, value in query if name != "token"]
            await _redirect(send, target + (f"?{urlencode(kept)}" if kept else ""))
            return
        scope = {**scope, "root_path": scope.get("root_path", "") + self.root}
        reset = ROOT.set(self.root)

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        try:
            await self.app(scope, receive, with_headers)
        finally:
            ROOT.reset(reset)


async def _redirect(send: Send, location: str) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 303,
            "headers": [(b"location", location.encode("latin-1")), *SECURITY_HEADERS],
        }
    )
    await send({"type": "http.response.body", "body": b""})


async def _refuse(send: Send, reason: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 403,
            "headers": [(b"content-type", b"text/plain; charset=utf-8"), *SECURITY_HEADERS],
        }
    )
    await send({"type": "http.response.body", "body": b"403 forbidden: " + reason + b"\n"})
