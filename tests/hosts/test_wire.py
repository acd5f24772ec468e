"""The JSON-RPC wire rules (``hosts/wire.py``) and ``memlane mcp``'s line checks, in this process.

``test_protocol_edges.py`` sends the same kinds of input to the real
servers; these tests pin the rules themselves, quickly: the line cap reads
in bounded pieces, every reply is strict JSON, whatever ``memlane mcp``'s
checks let through the MCP SDK accepts (its own models are the judge).
"""

from __future__ import annotations

import io
import json
import math
import os
import threading
from typing import Any

import mcp_types
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlane.hosts.jsonrpc import Connection, RemoteError, Request
from memlane.hosts.mcp.thin import check_mcp_line
from memlane.hosts.wire import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    MAX_NESTING,
    PARSE_ERROR,
    SKIP_CHUNK_BYTES,
    Message,
    OversizedLine,
    Refused,
    check_line,
    encode_message,
    read_line,
)


def _strict(line: bytes) -> Any:
    def refuse(constant: str) -> Any:
        raise AssertionError(f"{constant} is not JSON: {line!r}")

    assert line.endswith(b"\n") and line.count(b"\n") == 1
    return json.loads(line.decode("utf-8"), parse_constant=refuse)


class CountingReader(io.BytesIO):
    """A stream that records the largest read asked of it."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.largest_read = 0

    def readline(self, size: int | None = -1, /) -> bytes:
        assert size is not None and size > 0, "an unbounded readline"
        self.largest_read = max(self.largest_read, size)
        return super().readline(size)


def test_an_over_long_line_is_skipped_in_bounded_reads_and_the_next_one_read() -> None:
    limit = 1000
    stream = CountingReader(b"x" * 50_000 + b"\n" + b'{"ok": 1}\n' + b"tail-without-newline")
    oversized = read_line(stream, limit)
    assert oversized == OversizedLine(50_001)
    assert stream.largest_read <= max(limit + 1, SKIP_CHUNK_BYTES)
    assert read_line(stream, limit) == b'{"ok": 1}\n'
    assert read_line(stream, limit) == b"tail-without-newline"
    assert read_line(stream, limit) is None


def test_a_line_of_exactly_the_limit_is_not_oversized() -> None:
    line = b"y" * 100 + b"\n"
    assert read_line(io.BytesIO(line), 100) == line
    assert read_line(io.BytesIO(b"y" * 101 + b"\n"), 100) == OversizedLine(102)


def test_an_oversized_line_is_refused_without_an_id() -> None:
    refused = check_line(OversizedLine(10_000_000))
    assert isinstance(refused, Refused) and isinstance(refused.reply, dict)
    assert refused.reply["id"] is None and refused.reply["error"]["code"] == INVALID_REQUEST
    assert "10,000,000 bytes" in refused.reply["error"]["message"]


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (b"[" * 5000, PARSE_ERROR),  # past Python's own recursion limit while parsing
        (b"[" * (MAX_NESTING + 1) + b"]" * (MAX_NESTING + 1), INVALID_REQUEST),
        (b"1" * 5000, PARSE_ERROR),  # an integer Python refuses to convert
    ],
    ids=["unparsable depth", "parsed but too deep", "a 5000-digit number"],
)
def test_what_the_parser_cannot_take_is_an_error_not_a_crash(raw: bytes, code: int) -> None:
    refused = check_line(raw)
    assert isinstance(refused, Refused) and isinstance(refused.reply, dict)
    assert refused.reply["error"]["code"] == code


def test_nesting_up_to_the_limit_is_accepted() -> None:
    params = "[" * (MAX_NESTING - 1) + "]" * (MAX_NESTING - 1)
    line = f'{{"jsonrpc":"2.0","id":1,"method":"m","params":{params}}}'.encode()
    assert isinstance(check_line(line), Message)


def test_lone_surrogates_become_u_fffd_on_the_way_in() -> None:
    line = b'{"jsonrpc":"2.0","id":"a","method":"m","params":{"\\udc80k":["x\\ud83d"]}}'
    checked = check_line(line)
    assert isinstance(checked, Message)
    assert checked.body["params"] == {"\ufffdk": ["x\ufffd"]}


def test_every_reply_is_strict_json_whatever_it_holds() -> None:
    for result in (
        {"score": math.nan, "top": [math.inf, -math.inf]},
        {"text": "half an emoji \ud83d"},
        {"text": "plain", "n": 10**30},
    ):
        decoded = _strict(encode_message({"jsonrpc": "2.0", "id": 1, "result": result}))
        assert decoded["id"] == 1
    assert _strict(encode_message({"jsonrpc": "2.0", "id": 2, "result": {"s": math.nan}})) == {
        "jsonrpc": "2.0",
        "id": 2,
        "result": {"s": None},
    }
    # Not JSON at all (an object of no JSON type): the request still gets an answer.
    reply = _strict(encode_message({"jsonrpc": "2.0", "id": 3, "result": {"x": object()}}))
    assert reply["id"] == 3 and reply["error"]["code"] == INTERNAL_ERROR


def test_the_sidecar_connection_never_echoes_nan_and_keeps_reading() -> None:
    lines = (
        b'{"jsonrpc":"2.0","id":NaN,"method":"tool"}\n'
        b'{"jsonrpc":"2.0","id":Infinity,"method":"tool"}\n'
        b"\n"
        b'{"jsonrpc":"2.0","id":7,"method":"tool","params":{}}\n'
    )
    out = io.BytesIO()
    seen: list[Request] = []
    Connection(io.BytesIO(lines), out).serve(seen.append)
    replies = [_strict(line + b"\n") for line in out.getvalue().splitlines()]
    assert [(r["id"], r["error"]["code"]) for r in replies] == [
        (None, INVALID_REQUEST),
        (None, INVALID_REQUEST),
    ]
    assert [(r.id, r.method) for r in seen] == [(7, "tool")]


def test_an_mcp_tool_result_with_a_lone_surrogate_is_written_cleaned() -> None:
    # A tool's text cut inside an emoji: the line is still valid UTF-8 JSON the SDK reads.
    result = {"content": [{"type": "text", "text": "cut \ud83d"}]}
    line = encode_message({"jsonrpc": "2.0", "id": 5, "result": result})
    message = mcp_types.jsonrpc_message_adapter.validate_json(line)
    assert isinstance(message, mcp_types.JSONRPCResponse)
    assert message.result["content"][0]["text"] == "cut \ufffd"


# -- what passes the checks, the MCP SDK accepts ---------------------------------------

_ids = st.one_of(
    st.integers(min_value=-(2**60), max_value=2**60),
    st.text(max_size=4),
    st.none(),
    st.booleans(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.just([1]),
    st.just({"a": 1}),
)
_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)
_members = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.sampled_from(["2.0", "1.0", 2]),
        "id": _ids,
        "method": st.sampled_from(["ping", "tools/call", "tools/list", 5, None]),
        "params": _values,
        "result": _values,
        "error": st.one_of(_values, st.just({"code": 1, "message": "m"})),
    },
)


@settings(max_examples=200, deadline=None)
@given(message=st.one_of(_members, st.lists(_members, max_size=3), _values))
def test_whatever_the_checks_pass_the_sdk_accepts_and_whatever_they_refuse_is_answered(
    message: Any,
) -> None:
    line = json.dumps(message).encode()  # allow_nan: NaN and Infinity go on the wire too
    checked = check_mcp_line(line)
    if isinstance(checked, Message):
        mcp_types.jsonrpc_message_adapter.validate_json(encode_message(checked.body))
        return
    if isinstance(checked.reply, dict):
        _strict(encode_message(checked.reply))
        return
    if isinstance(message, dict):
        # Nothing to answer only for a notification (JSON-RPC never answers one).
        assert checked.reply is None and "id" not in message and "method" in message, checked
        return
    # Or for a batch with no request in it.
    assert isinstance(message, list) and message, checked
    if checked.reply is None:
        # No element was a request: each, sent alone, gets no answer either.
        alone = [check_mcp_line(json.dumps(m).encode()) for m in message]
        assert all(
            (isinstance(a, Message) and not a.is_request)
            or (isinstance(a, Refused) and a.reply is None)
            for a in alone
        ), alone
    else:
        assert all(r["error"]["code"] < 0 for r in _strict(encode_message(checked.reply)))


def test_a_malformed_answer_to_our_own_request_fails_it_at_once() -> None:
    to_us_read, to_us_write = os.pipe()
    from_us_read, from_us_write = os.pipe()
    with (
        os.fdopen(to_us_read, "rb") as reader,
        os.fdopen(from_us_write, "wb") as writer,
        os.fdopen(to_us_write, "wb") as host_out,
        os.fdopen(from_us_read, "rb") as host_in,
    ):
        connection = Connection(reader, writer)
        serving = threading.Thread(target=connection.serve, args=(lambda request: None,))
        serving.start()
        outcome: list[BaseException] = []

        def ask() -> None:
            try:
                connection.request("llm.complete", {"prompt": "hi"}, timeout_s=60)
            except BaseException as exc:  # what the caller sees
                outcome.append(exc)

        asking = threading.Thread(target=ask)
        asking.start()
        request = json.loads(host_in.readline())
        # An answer with neither result nor error (JavaScript dropped an undefined result).
        host_out.write(json.dumps({"jsonrpc": "2.0", "id": request["id"]}).encode() + b"\n")
        host_out.flush()
        asking.join(30)
        refusal = _strict(host_in.readline())
        host_out.close()
        serving.join(30)
    assert refusal["id"] is None and refusal["error"]["code"] == INVALID_REQUEST
    assert len(outcome) == 1 and isinstance(outcome[0], RemoteError), outcome
    assert "malformed" in str(outcome[0])
