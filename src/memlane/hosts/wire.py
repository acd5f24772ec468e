"""The JSON-RPC 2.0 wire rules both of memlane's servers share.

``memlane sidecar`` (our own line protocol) and ``memlane mcp`` (the MCP
SDK's transport, with a checking reader in front) read one JSON message
per line. This module decides, for one line, whether it is a message worth
handing on or a malformed one, and then builds the error the JSON-RPC 2.0
specification names for it, so every request gets an answer:

- nothing at all for a blank line (``is_blank``: empty or ASCII whitespace);
- ``-32700`` Parse error: the bytes are not UTF-8, or not JSON;
- ``-32600`` Invalid Request: valid JSON but not a request (a bare value,
  a missing or wrong ``"jsonrpc"``, a method that is not a string, an id
  that is not a string or a safe integer, NaN or Infinity anywhere, a line
  over ``MAX_LINE_BYTES``, nesting deeper than ``MAX_NESTING``, a batch).

A reply names the request's id when the request had a valid one and
``null`` otherwise (always for a broken response, whose id may equal one
of the other side's pending requests): an id that cannot be written back as JSON (NaN) or read
by a JavaScript client (an integer past 2^53) is never echoed.

Batches are not supported. MCP removed them in its 2025-06-18 revision and
no memlane host sends one; each element of a batch is answered with its own
``-32600`` in one array, as JSON-RPC lays out a batch reply, and an empty
batch gets a single ``-32600``.

Every line written goes through ``encode_message``: strict JSON (never
``NaN``), valid UTF-8 (lone surrogates become U+FFFD), one line.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from memlane.core.jsonlite import dumps_compact, loads_text

# ``memlane mcp`` reads every line through here before anything else is loaded:
# ``typing``, ``dataclasses`` and ``logging`` would cost more than the rest of its start.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import logging
    from typing import IO, Any


def _log() -> logging.Logger:
    import logging

    return logging.getLogger("memlane.wire")


PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
APPLICATION_ERROR = -32000  # an expected failure: the message says what to do

# One message per line, and no line may hold more: a client that sends a
# 10 MB garbage line gets an error, not a server that buffers it. Far above
# any real request (a capture's exchange, a memory_write text).
MAX_LINE_BYTES = 4 * 1024 * 1024
# How deep a message may nest. Real requests nest a handful of levels; the
# cap stays below the MCP SDK's own parser limit (about 200) and keeps the
# recursive helpers here far from Python's recursion limit.
MAX_NESTING = 64
# The largest integer id a JavaScript client can read back exactly.
MAX_SAFE_INTEGER = 2**53 - 1
# While skipping the rest of an over-long line, read it in pieces this big.
SKIP_CHUNK_BYTES = 64 * 1024

_LIMIT_TEXT = f"{MAX_LINE_BYTES // (1024 * 1024)} MiB"


class OversizedLine:
    """A line longer than the limit, read past and dropped (``size`` bytes)."""

    __slots__ = ("size",)

    def __init__(self, size: int) -> None:
        self.size = size

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OversizedLine) and other.size == self.size

    def __hash__(self) -> int:
        return hash(self.size)

    def __repr__(self) -> str:
        return f"OversizedLine(size={self.size})"


def read_line(stream: IO[bytes], limit: int = MAX_LINE_BYTES) -> bytes | OversizedLine | None:
    """The next line of *stream* (None at EOF), never holding more than *limit* bytes.

    A longer line is read to its end in small pieces and dropped: the caller
    answers it with an error and the next line is read as usual.
    """
    line = stream.readline(limit + 1)
    if not line:
        return None
    if len(line) <= limit or line.endswith(b"\n"):
        return line
    size = len(line)
    while chunk := stream.readline(SKIP_CHUNK_BYTES):
        size += len(chunk)
        if chunk.endswith(b"\n"):
            break
    return OversizedLine(size)


def is_blank(line: bytes | OversizedLine) -> bool:
    """An empty line, or one of ASCII whitespace only: not a message, and not answered.

    Newline-delimited JSON readers skip such lines between messages, and the MCP
    SDK's stdio transport answers none; a ``-32700`` with id ``null`` would only
    make the client log an error for a request it never sent.
    """
    return isinstance(line, bytes) and not line.strip()


def without_lone_surrogates(value: Any) -> Any:
    """JSON text from JavaScript may carry a lone surrogate (``\\ud83d``, half
    an emoji cut by a slice); it cannot be written as UTF-8 anywhere, so it
    becomes U+FFFD on the way in (and on the way out)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in value)
        return value
    if isinstance(value, list):
        return [without_lone_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {without_lone_surrogates(k): without_lone_surrogates(v) for k, v in value.items()}
    return value


def error_response(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


# -- checking what came in -------------------------------------------------------------


class Message:
    """One well-formed JSON-RPC message (lone surrogates already replaced)."""

    __slots__ = ("body",)

    def __init__(self, body: dict[str, Any]) -> None:
        self.body = body

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Message) and other.body == self.body

    __hash__ = None  # type: ignore[assignment]  # the body is a dict

    def __repr__(self) -> str:
        return f"Message(body={self.body!r})"

    @property
    def is_request(self) -> bool:
        return "method" in self.body and "id" in self.body

    @property
    def is_notification(self) -> bool:
        return "method" in self.body and "id" not in self.body


class Refused:
    """A malformed line and what to answer it with (None: nothing, as for a
    batch of notifications, which JSON-RPC never answers).

    ``answers``: a malformed answer to one of our own requests names it here,
    so that request fails at once instead of waiting out its deadline.
    """

    __slots__ = ("answers", "reason", "reply")

    def __init__(
        self,
        reply: dict[str, Any] | list[dict[str, Any]] | None,
        reason: str,
        answers: Any = None,
    ) -> None:
        self.reply = reply
        self.reason = reason
        self.answers = answers

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Refused) and (other.reply, other.reason, other.answers) == (
            self.reply,
            self.reason,
            self.answers,
        )

    __hash__ = None  # type: ignore[assignment]  # the reply is a dict

    def __repr__(self) -> str:
        return f"Refused(reply={self.reply!r}, reason={self.reason!r}, answers={self.answers!r})"


MessageCheck = Callable[[Message], "Message | Refused"]


def check_line(line: bytes | OversizedLine, also: MessageCheck | None = None) -> Message | Refused:
    """What one line of input is: a message to hand on, or a refusal to send.

    *also* adds a protocol's own rules (MCP's), applied to each message that
    passes these, alone or inside a batch.
    """
    if isinstance(line, OversizedLine):
        return _refuse(
            None,
            INVALID_REQUEST,
            f"the message is {line.size:,} bytes, over the {_LIMIT_TEXT} limit for one line; "
            "send less text per request",
        )
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return _refuse(
            None,
            PARSE_ERROR,
            f"the message is not valid UTF-8 (byte 0x{line[exc.start]:02x} at offset "
            f"{exc.start}); send JSON text encoded as UTF-8",
        )
    try:
        value = loads_text(text)
    except (ValueError, RecursionError):
        value = _read_slowly(text)
        if isinstance(value, Refused):
            return value
    return check_value(value, also)


def _read_slowly(text: str) -> Any:
    """*text* read by ``json`` itself, or the refusal in json's own words. ``json`` is
    imported only for a line the fast reader (core/jsonlite.py, the same C scanner)
    turned down: a good line is read without it, at every server's start."""
    import json

    try:
        return json.loads(text)
    except RecursionError:
        return _refuse(
            None,
            PARSE_ERROR,
            f"the message nests too deeply to parse; at most {MAX_NESTING} levels are accepted",
        )
    except json.JSONDecodeError as exc:
        return _refuse(None, PARSE_ERROR, f"the message is not valid JSON: {_short(exc)}")
    except ValueError:  # an integer of thousands of digits
        return _refuse(None, PARSE_ERROR, "the message holds a number too long to read")


def check_value(value: Any, also: MessageCheck | None = None) -> Message | Refused:
    """Check one parsed JSON value against the JSON-RPC 2.0 envelope."""
    problem = _shape_problem(value)
    if problem is not None:
        request_id = value.get("id") if isinstance(value, dict) else None
        return _refuse(_echoable(request_id), INVALID_REQUEST, problem)
    if isinstance(value, list):
        return _refuse_batch(value, also)
    if not isinstance(value, dict):
        return _refuse(
            None,
            INVALID_REQUEST,
            f"expected a JSON-RPC 2.0 request object, got {_kind(value)}; "
            'send {"jsonrpc": "2.0", "id": 1, "method": "...", "params": {...}}',
        )
    problem = _envelope_problem(value)
    if problem is not None:
        # Only a request's id is named back: the id of a broken response is
        # one of our own, and the other side may be waiting on that number.
        if "method" in value:
            return _refuse(_echoable(value.get("id")), INVALID_REQUEST, problem)
        refused = _refuse(None, INVALID_REQUEST, problem)
        return Refused(refused.reply, refused.reason, _echoable(value.get("id")))
    message = Message(without_lone_surrogates(value))
    return also(message) if also is not None else message


def _refuse(request_id: Any, code: int, message: str) -> Refused:
    return Refused(error_response(request_id, code, message), message)


def _refuse_batch(batch: list[Any], also: MessageCheck | None) -> Refused:
    if not batch:
        return _refuse(
            None, INVALID_REQUEST, "an empty batch is not a request; send one request object"
        )
    replies: list[dict[str, Any]] = []
    for element in batch:
        checked = check_value(element, also)
        if isinstance(checked, Refused):
            # A nested batch is refused as a whole; its element replies join ours.
            if isinstance(checked.reply, list):
                replies.extend(checked.reply)
            elif checked.reply is not None:
                replies.append(checked.reply)
        elif checked.is_request:
            replies.append(
                error_response(
                    checked.body["id"],
                    INVALID_REQUEST,
                    "batches are not supported (MCP dropped them in 2025-06-18); "
                    "send each request on its own line",
                )
            )
    reason = f"a batch of {len(batch)} (not supported)"
    return Refused(replies or None, reason)


def _shape_problem(value: Any) -> str | None:
    """Too deep, or a number JSON cannot carry: a problem of the whole message."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > MAX_NESTING:
                return f"the message nests more than {MAX_NESTING} levels deep; flatten it"
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
        elif isinstance(item, float) and not math.isfinite(item):
            return "the message holds NaN or Infinity, which are not JSON numbers"
    return None


def _envelope_problem(message: dict[str, Any]) -> str | None:
    if message.get("jsonrpc") != "2.0":
        return 'the message needs "jsonrpc": "2.0" (JSON-RPC 2.0 is the only version spoken)'
    if "id" in message:
        problem = _id_problem(message["id"], allow_null="error" in message)
        if problem is not None:
            return problem
    if "method" in message:
        if not isinstance(message["method"], str):
            return f'"method" must be a string, got {_kind(message["method"])}'
        params = message.get("params")
        if params is not None and not isinstance(params, dict | list):
            return f'"params" must be an object or an array, got {_kind(params)}'
        return None
    # No method: an answer to one of our own requests.
    if "id" not in message:
        return 'the message has no "method" (a request) and no "id" (a response)'
    if ("result" in message) == ("error" in message):
        return 'a response carries exactly one of "result" and "error"'
    return None


def _id_problem(request_id: Any, *, allow_null: bool) -> str | None:
    if request_id is None:
        return None if allow_null else '"id" must not be null; leave it out for a notification'
    if isinstance(request_id, str):
        if without_lone_surrogates(request_id) != request_id:
            return '"id" holds a lone surrogate, which is not valid Unicode'
        return None
    if isinstance(request_id, int) and not isinstance(request_id, bool):
        if abs(request_id) > MAX_SAFE_INTEGER:
            return f'"id" is an integer beyond ±{MAX_SAFE_INTEGER} (2^53 - 1); use a smaller one'
        return None
    return f'"id" must be a string or an integer, got {_kind(request_id)}'


def _echoable(request_id: Any) -> Any:
    """The id to name in an error: the request's own when valid, else null."""
    if request_id is None or _id_problem(request_id, allow_null=False) is not None:
        return None
    return request_id


def _kind(value: Any) -> str:
    # Describes a value without echoing it: it may be huge, or NaN.
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity"
        return "a number with a fraction"
    if isinstance(value, int):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _short(exc: Exception) -> str:
    text = str(exc)
    return text if len(text) <= 200 else text[:200] + "…"


# -- writing -------------------------------------------------------------------------------


def encode_message(message: dict[str, Any] | list[dict[str, Any]]) -> bytes:
    """One line of strict JSON (UTF-8, no NaN), whatever the message holds.

    A lone surrogate becomes U+FFFD and a non-finite number ``null``; a
    result that is still not JSON (an object of no JSON type) becomes an
    internal error for its request, so the request still gets an answer.
    """
    try:
        return _dumps(message)
    except (TypeError, ValueError, RecursionError):  # UnicodeEncodeError is a ValueError
        pass
    try:
        return _dumps(without_lone_surrogates(_finite(message)))
    except (TypeError, ValueError) as exc:
        _log().error("a reply could not be written as JSON: %s", exc)
    except RecursionError:
        _log().error("a reply nests too deeply to be written as JSON")
    if isinstance(message, list):
        return _dumps([_internal_error_for(m) for m in message])
    return _dumps(_internal_error_for(message))


def _dumps(message: Any) -> bytes:
    return dumps_compact(message).encode("utf-8") + b"\n"


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    return value


def _internal_error_for(message: Any) -> dict[str, Any]:
    request_id = message.get("id") if isinstance(message, dict) else None
    return error_response(
        _echoable(request_id),
        INTERNAL_ERROR,
        "memlane could not write its answer as JSON; this is a memlane bug, "
        "the server log has the details",
    )
