"""Round trips to Milvus, counted per tool: every public method of pymilvus's
``MilvusClient`` is wrapped (once per process) so that each call is counted
under the label set at that moment (``counting("memlane")``). Each call is
one gRPC request to the Milvus (Lite) server, whoever makes it.

    from _roundtrips import counting, install, take
    install()
    with counting("memsearch"):
        ...
    take("memsearch")  # calls made since the last take, then reset
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections import Counter
from collections.abc import Iterator
from typing import Any

_COUNTS: Counter[str] = Counter()
_METHODS: dict[str, Counter[str]] = {}
_LABEL = threading.local()
_INSTALLED = False
#: Not a request to the server.
_LOCAL = {"close", "create_schema", "prepare_index_params", "get_server_type"}


def install() -> None:
    global _INSTALLED
    if _INSTALLED:
        return
    from pymilvus import MilvusClient

    for name in dir(MilvusClient):
        if name.startswith("_") or name in _LOCAL:
            continue
        original = getattr(MilvusClient, name)
        if not callable(original) or isinstance(original, type):
            continue
        setattr(MilvusClient, name, _counted(name, original))
    _INSTALLED = True


def _counted(name: str, original: Any) -> Any:
    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        label = getattr(_LABEL, "value", None)
        if label is None or getattr(_LABEL, "inside", False):
            return original(*args, **kwargs)  # a method calling another: one request
        _COUNTS[label] += 1
        _METHODS.setdefault(label, Counter())[name] += 1
        _LABEL.inside = True
        try:
            return original(*args, **kwargs)
        finally:
            _LABEL.inside = False

    return wrapper


@contextlib.contextmanager
def counting(label: str) -> Iterator[None]:
    previous = getattr(_LABEL, "value", None)
    _LABEL.value = label
    try:
        yield
    finally:
        _LABEL.value = previous


def take(label: str) -> int:
    """Calls counted under ``label`` since the last take (then reset)."""
    n = _COUNTS.pop(label, 0)
    return n


def methods(label: str) -> dict[str, int]:
    """Every call counted under ``label`` so far, by method."""
    return dict(_METHODS.get(label, Counter()))
