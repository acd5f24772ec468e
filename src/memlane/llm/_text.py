"""Shaping foreign text (server bodies, stderr, exception messages) into the
one-line reasons that end up in ``[distillation failed: <reason>]`` markers."""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

#: Longest excerpt of a server body or stderr line quoted in a reason.
EXCERPT_CHARS = 200

_SPACE = re.compile(r"\s+")
_ERRNO = re.compile(r"^\[Errno -?\d+\]\s*")


def one_line(text: str, limit: int = EXCERPT_CHARS) -> str:
    """``text`` with runs of whitespace (newlines included) as one space, clipped."""
    flat = _SPACE.sub(" ", text).strip()
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def scrub(text: str, secret: str | None) -> str:
    """``text`` without ``secret``: some servers echo the key they rejected."""
    if secret and len(secret) >= 4:
        return text.replace(secret, "***")
    return text


def exception_reason(exc: BaseException) -> str:
    """A short reason for an exception: its message without ``[Errno 111]``, else its type."""
    message = _ERRNO.sub("", str(exc)).strip()
    return one_line(message[:1].lower() + message[1:]) if message else type(exc).__name__


def display_url(url: str) -> str:
    """``url`` without credentials or query string (either may carry a key)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:  # IPv6 literals keep their brackets
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
