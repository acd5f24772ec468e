"""Helpers of the Milvus index tests: open an index with fast retries, reach
a Lite database the way memsearch does (plain pymilvus)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memlane.core.settings import IndexSettings
from memlane.index.milvus.connection import LITE
from memlane.index.milvus.notes import MilvusIndex

#: Small retry delays: a locked database is reported in milliseconds.
FAST_BACKOFF_MS = (10, 20)


def open_index(
    uri: Path | str,
    collection: str,
    ledger: Path,
    settings: IndexSettings | None = None,
    **kwargs: Any,
) -> MilvusIndex:
    kwargs.setdefault("backoff_delays_ms", FAST_BACKOFF_MS)
    return MilvusIndex(str(uri), collection, ledger, settings or IndexSettings(), **kwargs)


@contextlib.contextmanager
def raw_client(db: Path) -> Iterator[Any]:
    """A plain pymilvus client of ``db`` for one block. It is the process's
    shared Lite client (``connection.LITE``): a second client of the same
    path would lose its server when the index's linger ends."""
    path = db.expanduser().absolute()
    client = LITE.acquire(path, ())
    try:
        yield client
    finally:
        LITE.release(path)
