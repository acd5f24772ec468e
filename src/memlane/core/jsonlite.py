"""JSON for the thin clients without the ``json`` module.

``import json`` costs a CLI call or a hook ~10-20 ms of CPU (its regular
expressions), as much as the rest of the client; the C accelerator under it
(``_json``) does the work, with ``json`` itself as the fallback on an
interpreter without it. Only what the engine's protocol carries: None, bools,
numbers, strings, lists and objects with string keys.

``dumps``/``loads`` are the engine protocol's (ASCII text, bytes in);
``dumps_compact``/``loads_text`` are what MCP's stdio server
(hosts/wire.py) writes and reads before it knows anything is wrong: the same
text as ``json.dumps(..., ensure_ascii=False, allow_nan=False,
separators=(",", ":"))`` and the same value as ``json.loads``. A caller that
needs json's own error message imports ``json`` when a line fails.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: importing typing costs every hook call
if TYPE_CHECKING:
    from typing import Any


def dumps(value: object) -> str:
    """*value* (None, bool, int, float, str, list, dict with str keys) as ASCII JSON text,
    as ``json.dumps`` writes it."""
    try:
        from _json import encode_basestring_ascii as quote
    except ImportError:  # an interpreter without the accelerator
        import json

        return json.dumps(value)
    return _dump(value, quote)


def _dump(value: object, quote: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return str(quote(value))
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"{value!r} is not JSON")  # strict, as the wire rules
        return float.__repr__(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_dump(item, quote) for item in value) + "]"
    if isinstance(value, dict):
        items = (f"{_dump(str(k), quote)}: {_dump(v, quote)}" for k, v in value.items())
        return "{" + ", ".join(items) + "}"
    raise TypeError(f"cannot send {type(value).__name__} to the engine")


class _Decoding:
    """What the C scanner reads off a decoder: ``json.loads``' defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = float  # NaN, Infinity, -Infinity


def loads(data: bytes) -> Any:
    """The JSON value of *data* (``ValueError`` when it is not one whole value)."""
    return loads_text(data.decode("utf-8"), "the engine's answer")


def loads_text(text: str, what: str = "the text") -> Any:
    """The JSON value of *text*, as ``json.loads`` reads it (``ValueError`` when it is
    not one whole value; ``RecursionError`` when it nests too deeply)."""
    try:
        from _json import make_scanner
    except ImportError:
        import json

        return json.loads(text)
    text = text.strip(" \t\r\n")
    try:
        value, end = make_scanner(_Decoding())(text, 0)  # type: ignore[arg-type]
    except StopIteration:
        raise ValueError(f"{what} is not JSON") from None
    if end != len(text):
        raise ValueError(f"{what} is not one JSON value")
    return value


def dumps_compact(value: object) -> str:
    """*value* as ``json.dumps(value, ensure_ascii=False, allow_nan=False,
    separators=(",", ":"))`` writes it, with json's C encoder (``TypeError`` for a
    value JSON has no form for, ``ValueError`` for NaN, infinities and cycles)."""
    try:
        from _json import encode_basestring, make_encoder

        encode = make_encoder({}, _no_form, encode_basestring, None, ":", ",", False, False, False)
    except (ImportError, TypeError):  # no accelerator, or one with another signature
        import json

        return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    if isinstance(value, str):
        return str(encode_basestring(value))
    return "".join(encode(value, 0))


def _no_form(value: object) -> object:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")
