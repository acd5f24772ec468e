"""Server-sent events, decoded from raw bytes as they arrive.

Both providers stream ``event:``/``data:`` records separated by blank lines
(https://html.spec.whatwg.org/multipage/server-sent-events.html). Only the
fields they use are kept; ``id:`` and ``retry:`` are ignored.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Event:
    event: str | None
    data: str


class SseDecoder:
    """Feed byte chunks, get complete events; ``close()`` flushes the last one."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending = ""
        self._event: str | None = None
        self._data: list[str] = []

    def feed(self, chunk: bytes) -> Iterator[Event]:
        self._pending += self._decoder.decode(chunk)
        *lines, self._pending = self._pending.split("\n")
        for line in lines:
            event = self._line(line.removesuffix("\r"))
            if event is not None:
                yield event

    def close(self) -> Iterator[Event]:
        # Some servers end the body without the final blank line.
        self._pending += self._decoder.decode(b"", final=True)
        for line in [*self._pending.split("\n"), ""]:
            event = self._line(line.removesuffix("\r"))
            if event is not None:
                yield event
        self._pending = ""

    def _line(self, line: str) -> Event | None:
        if not line:
            if not self._data:
                self._event = None
                return None
            event = Event(self._event, "\n".join(self._data))
            self._event, self._data = None, []
            return event
        if line.startswith(":"):
            return None
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "event":
            self._event = value
        elif field == "data":
            self._data.append(value)
        return None


def looks_like_sse(body: str) -> bool:
    """True for a stream served with a wrong content type (seen on some proxies)."""
    head = body.lstrip()[:16]
    return head.startswith(("data:", "event:", ":"))
