"""The SSE decoder: events split anywhere across network reads."""

from __future__ import annotations

from memlane.llm.sse import Event, SseDecoder


def decode(chunks: list[bytes]) -> list[Event]:
    decoder = SseDecoder()
    events = [event for chunk in chunks for event in decoder.feed(chunk)]
    return [*events, *decoder.close()]


def test_events_fields_comments_and_crlf() -> None:
    raw = (
        b": keep-alive\r\n\r\n"
        b'event: content_block_delta\r\ndata: {"a": 1}\r\n\r\n'
        b"id: 7\nretry: 10\ndata:first\ndata: second\n\n"
        b"data: [DONE]"  # no final blank line
    )
    expected = [
        Event("content_block_delta", '{"a": 1}'),
        Event(None, "first\nsecond"),
        Event(None, "[DONE]"),
    ]
    assert decode([raw]) == expected
    # Byte by byte, UTF-8 sequences split included, the result is the same.
    assert decode([raw[i : i + 1] for i in range(len(raw))]) == expected
    text = "data: café ✓\n\n".encode()
    assert decode([text[i : i + 1] for i in range(len(text))]) == [Event(None, "café ✓")]


def test_event_name_without_data_is_dropped() -> None:
    assert decode([b"event: ping\n\ndata: x\n\n"]) == [Event(None, "x")]
