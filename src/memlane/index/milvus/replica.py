"""On Milvus Lite, the dense leg run here, over a copy of the collection's
vectors and display fields that the ledger's mirror keeps (ADR 0049).

Milvus Lite is pure Python in this process: what a search costs there is
mostly a fixed cost per call and per row returned, not the arithmetic (at
1,000 chunks a dense search of 20 rows costs ~3.4 ms, the same product in
numpy ~0.1 ms). With the vectors and fields of every row at hand, a search
makes one round trip (the BM25 search, returning chunk hashes) and reads
the rest here: the dense leg, a lexical-only candidate's cosine, the hits'
fields.

The copy is the mirror's (``mirror.py``): written with each of memlane's
writes, filled by each comparison with the collection (memsearch's rows,
another ledger's), so it is used only when the mirror is trusted, and only
while every mirrored row has its copy (a ledger from before the copy
existed fills at its next comparison; meanwhile Milvus runs the leg).
A server keeps no copy: its collection can be far larger than a machine's
memory, and its dense search is not paid per Python call.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from memlane.index.legs.lexical import filter_sql
from memlane.index.milvus import schema
from memlane.index.milvus.ledger import Ledger
from memlane.index.milvus.search import unit
from memlane.index.protocol import SearchFilters

#: The fields a hit shows besides those the mirror's ``rows`` hold.
DISPLAY_FIELDS = ("content", "heading", "heading_level", "start_line", "end_line")
#: Bumped with every change of the copy (in the same transaction): what
#: tells a held matrix it is out of date, in this process or another.
META_REPLICA_VERSION = "replica_version"

_Matrix = npt.NDArray[np.float32]


def rows_where(filters: SearchFilters) -> tuple[str, Sequence[object]]:
    """The WHERE clause (with its leading space; empty: no condition) that
    keeps the mirror's rows ``filters`` keep, as ``schema.expression(filters)``
    keeps them in Milvus (a row without the field fails its condition)."""
    conditions, params = filter_sql(filters, table="rows")
    return (" WHERE " + " AND ".join(conditions) if conditions else ""), params


def blob_of(vector: Any) -> bytes:
    return np.asarray(vector, dtype=np.float32).reshape(-1).tobytes()


@dataclass(frozen=True)
class _Held:
    version: str | None
    complete: bool
    hashes: list[str]
    position: dict[str, int]
    matrix: _Matrix  # unit rows, in ``hashes`` order


_EMPTY = np.zeros((0, 0), dtype=np.float32)


def _unit_rows(blobs: Sequence[bytes], dimension: int | None) -> _Matrix:
    """The vectors in ``blobs`` (float32 bytes) as unit rows."""
    if not blobs:
        return _EMPTY if dimension is None else np.zeros((0, dimension), dtype=np.float32)
    matrix = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), -1)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    unit_rows: _Matrix = (matrix / norms).astype(np.float32, copy=False)
    return unit_rows


def _held(version: str | None, complete: bool, hashes: list[str], blobs: list[bytes]) -> _Held:
    return _Held(
        version, complete, hashes, {h: i for i, h in enumerate(hashes)}, _unit_rows(blobs, None)
    )


class LocalDense:
    """The copy as a search reads it: a unit-row matrix held while the copy's
    version stays the same."""

    def __init__(self, ledger: Ledger) -> None:
        self._ledger = ledger
        self._lock = threading.Lock()
        self._held: _Held | None = None

    def _current(self) -> _Held:
        version = self._ledger.meta(META_REPLICA_VERSION)
        with self._lock:
            held = self._held
            if held is not None and held.version == version:
                return held
            rows = self._ledger.read("SELECT chunk_hash, vector FROM replica ORDER BY chunk_hash")
            mirrored = int(self._ledger.read("SELECT count(*) FROM rows")[0][0])
            hashes = [str(h) for h, _ in rows]
            self._held = _held(version, len(hashes) == mirrored, hashes, [b for _, b in rows])
            return self._held

    def drop(self) -> None:
        """Read the copy again at the next search."""
        with self._lock:
            self._held = None

    def applied(
        self, before: str | None, after: str, added: Sequence[tuple[str, bytes]], removed: set[str]
    ) -> None:
        """This process changed the copy from version ``before`` to ``after``:
        a matrix held at ``before`` takes the change in place (a search after
        each write would otherwise read the whole copy again); any other is
        dropped, to be read again."""
        with self._lock:
            held = self._held
            if held is None or held.version != before:
                self._held = None
                return
            added = list(dict(added).items())  # one row per hash, the last written
            gone = removed | {h for h, _ in added}
            kept = [i for i, h in enumerate(held.hashes) if h not in gone]
            hashes = [held.hashes[i] for i in kept] + [h for h, _ in added]
            fresh = _unit_rows([blob for _, blob in added], held.matrix.shape[1] or None)
            if fresh.size and held.matrix.size and fresh.shape[1] != held.matrix.shape[1]:
                self._held = None  # another dimension: read it all again
                return
            parts = [m for m in (held.matrix[kept] if kept else None, fresh) if m is not None]
            matrix = np.concatenate(parts) if any(m.size for m in parts) else _EMPTY
            self._held = _Held(
                after, held.complete, hashes, {h: i for i, h in enumerate(hashes)}, matrix
            )

    def bound(self, filters: SearchFilters | None) -> Bound | None:
        """This copy as one search's dense side (``search.LocalVectors``), the
        version read once for the whole search; None while some mirrored row
        has no copy (Milvus runs the dense leg then)."""
        held = self._current()
        if not held.complete:
            return None
        return Bound(self, held, filters)

    def matching(self, filters: SearchFilters) -> list[str]:
        where, params = rows_where(filters)
        return [str(h) for (h,) in self._ledger.read("SELECT chunk_hash FROM rows" + where, params)]

    def rows(self, hashes: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The hits' rows as Milvus would return them (``schema.CHUNK_FIELDS``)."""
        out: dict[str, dict[str, Any]] = {}
        columns = ", ".join(f"replica.{f}" for f in DISPLAY_FIELDS)
        for start in range(0, len(hashes), 500):
            part = list(hashes[start : start + 500])
            marks = ", ".join("?" * len(part))
            found = self._ledger.read(
                f"SELECT rows.chunk_hash, rows.source, rows.kind, rows.date, rows.session, "
                f"{columns} FROM rows JOIN replica ON replica.chunk_hash = rows.chunk_hash "
                f"WHERE rows.chunk_hash IN ({marks})",
                part,
            )
            for h, source, kind, date, session, *display in found:
                out[str(h)] = {
                    schema.PRIMARY: str(h),
                    "source": source,
                    schema.KIND: kind,
                    schema.DATE: date,
                    schema.SESSION: session,
                    **dict(zip(DISPLAY_FIELDS, display, strict=True)),
                }
        return out


@dataclass(frozen=True)
class Bound:
    copy: LocalDense
    held: _Held
    filters: SearchFilters | None

    def leg(self, qvec: _Matrix, n: int) -> list[tuple[str, float]]:
        """The ``n`` rows most like ``qvec`` among those the filters keep:
        (chunk hash, cosine), best first, ties by hash (as Milvus orders them)."""
        held = self.held
        if not held.hashes or n <= 0:
            return []
        scores = held.matrix @ unit(qvec)
        if self.filters is not None and not self.filters.is_empty():
            keep = np.zeros(len(held.hashes), dtype=bool)
            for h in self.copy.matching(self.filters):
                at = held.position.get(h)
                if at is not None:
                    keep[at] = True
            scores = np.where(keep, scores, -np.inf)
            n = min(n, int(keep.sum()))
        if n <= 0:
            return []
        top = np.argpartition(-scores, n - 1)[:n] if n < len(scores) else np.arange(len(scores))
        hits = [(held.hashes[i], float(scores[i])) for i in top]
        hits.sort(key=lambda item: (-item[1], item[0]))
        return hits

    def cosines(self, qvec: _Matrix, hashes: Iterable[str]) -> dict[str, float]:
        """The cosine of each of ``hashes`` the copy holds."""
        held = self.held
        at = [(h, held.position[h]) for h in hashes if h in held.position]
        if not at:
            return {}
        values = held.matrix[[i for _, i in at]] @ unit(qvec)
        return {h: float(v) for (h, _), v in zip(at, values, strict=True)}

    def rows(self, hashes: Sequence[str]) -> dict[str, dict[str, Any]]:
        return self.copy.rows(hashes)
