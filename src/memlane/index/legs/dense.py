"""The in-process dense leg: every stored vector, int8, scanned whole.

Each vector is kept as int8 codes with one float32 scale (the row's largest
magnitude over 127): a quarter of float32's memory, and one SIMD scan of
the codes (``simsimd``'s int8 dot product) reads 1M x 384 in ~15 ms where
numpy's float32 product over the same rows took ~70 ms and 1.5 GB. The scan
only chooses candidates: a search rescored with an ``ExactVectors`` reader
(the index file's own float32 BLOBs for a few hundred rows) returns the
same cosines, so the same calibrated scores, as a float32 matrix would;
the int8 error (under 0.003 on a unit vector) is far inside the oversampled
candidate margin. The mean cosine the evidence needs is the int8 scan's
(its error averages out: ~1e-6).

Rows live in two segments: a base, usually the mapped vector file
(``vector_file.py``) shared by every process, and a tail of rows written
since, in memory. ``dense_sync.py`` keeps both in step with the index
file's write generation and folds the tail into a new vector file when it
grows. Filter metadata lives in parallel numpy arrays so a filtered search
is a few vectorised comparisons, never a Python loop over rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from memlane.index.legs.exact_cache import ExactCache, ExactVectors
from memlane.index.legs.int8 import best_positions, int8_dots, quantize
from memlane.index.legs.vector_file import Snapshot
from memlane.index.protocol import SearchFilters

VECTOR_DTYPE = np.dtype("<f4")  # BLOB layout: little-endian float32

KIND_CODES: dict[str, int] = {"journal": 0, "topic": 1, "session": 2}
_UNKNOWN_CODE = -1
_NO_SESSION = -1

# Dead tail rows (deleted since they were added) are compacted away once
# they are this large a share of the tail; until then a search masks them.
# The base's dead rows go when the tail is folded into a new base.
COMPACT_DEAD_FRACTION = 0.25
COMPACT_DEAD_MIN = 1024
# Tail capacity grows by this factor (each growth briefly holds both copies).
_GROWTH = 1.25
TAIL_MIN_CAPACITY = 1024
# A rescored search takes RESCORE_FACTOR x n + RESCORE_EXTRA int8 candidates.
RESCORE_FACTOR = 2
RESCORE_EXTRA = 32


class DenseRow(NamedTuple):
    """One vector row as read from ``chunks``."""

    rowid: int
    vector: bytes
    kind: str
    source: str
    date: str | None
    session: str | None


class DenseResult(NamedTuple):
    """A dense search: best-first (row id, cosine), and the mean cosine over
    the ``rows`` searched (filters applied)."""

    hits: list[tuple[int, float]]
    mean_cosine: float
    rows: int = 0


def vector_to_blob(vector: npt.ArrayLike) -> bytes:
    return np.asarray(vector, dtype=VECTOR_DTYPE).reshape(-1).tobytes()


class _Segment:
    """A run of rows: int8 codes, scales, row ids and filter columns.

    A base segment wraps fixed (possibly mapped, read-only) arrays; a tail
    segment owns growable ones. ``alive`` is always this process's own.
    """

    def __init__(self, columns: dict[str, npt.NDArray[Any]], used: int) -> None:
        self.columns = columns
        self.used = used
        self.alive = np.ones(len(columns["rowids"]), dtype=bool)
        self.dead = 0

    @classmethod
    def empty(cls, dimension: int) -> _Segment:
        return cls(
            {
                "codes": np.empty((0, dimension), dtype=np.int8),
                "scales": np.empty(0, dtype=np.float32),
                "rowids": np.empty(0, dtype=np.int64),
                "kinds": np.empty(0, dtype=np.int8),
                "source_codes": np.empty(0, dtype=np.int32),
                "session_codes": np.empty(0, dtype=np.int32),
                "dates": np.empty(0, dtype="S1"),
            },
            0,
        )

    def column(self, name: str) -> npt.NDArray[Any]:
        return self.columns[name][: self.used]

    def live_alive(self) -> npt.NDArray[np.bool_]:
        return self.alive[: self.used]

    def scores(self, query_codes: npt.NDArray[np.int8]) -> npt.NDArray[Any]:
        """Each row's dot product with the query's codes, on the rows' scale
        (times the query's scale, a constant, it is the cosine)."""
        if self.used == 0:
            return np.empty(0, dtype=np.float32)
        dots = int8_dots(self.column("codes"), query_codes)
        dots *= self.column("scales")
        return dots

    def grow(self, needed: int) -> None:
        capacity = len(self.columns["rowids"])
        if needed <= capacity:
            return
        new_capacity = max(needed, int(capacity * _GROWTH), TAIL_MIN_CAPACITY)
        for name, array in self.columns.items():
            grown = np.empty((new_capacity, *array.shape[1:]), dtype=array.dtype)
            grown[: self.used] = array[: self.used]
            self.columns[name] = grown
        alive = np.zeros(new_capacity, dtype=bool)
        alive[: self.used] = self.alive[: self.used]
        self.alive = alive

    def compacted(self) -> None:
        keep = np.flatnonzero(self.live_alive())
        self.columns = {name: self.column(name)[keep] for name in self.columns}
        self.used = len(keep)
        self.alive = np.ones(self.used, dtype=bool)
        self.dead = 0


class DenseMatrix:
    """Vectors plus per-row filter metadata, with cheap append and delete."""

    def __init__(
        self, dimension: int, epoch: str, generation: int, base: Snapshot | None = None
    ) -> None:
        self.dimension = dimension
        self.epoch = epoch
        self.generation = generation
        if base is None:
            self._base = _Segment.empty(dimension)
            self._sources: list[str] = []
            self._sessions: list[str] = []
        else:
            self._base = _Segment(dict(base.columns), base.rows)
            self._sources = list(base.sources)
            self._sessions = list(base.sessions)
        self._tail = _Segment.empty(dimension)
        self._tail_position: dict[int, int] = {}
        self._source_ids = {source: code for code, source in enumerate(self._sources)}
        self._session_ids = {session: code for code, session in enumerate(self._sessions)}
        #: Whether the base is a mapped vector file (not rows read into memory).
        self.mapped = base is not None
        #: The generation the base was taken at (the tail holds what came since).
        self.base_generation = generation if base is None else base.generation
        #: The float32 vectors searches rescored with, while their rows stay.
        self.exact_cache = ExactCache(dimension)

    def __len__(self) -> int:
        """Live rows."""
        return self._base.used - self._base.dead + self._tail.used - self._tail.dead

    def __contains__(self, rowid: object) -> bool:
        return isinstance(rowid, int) and self._locate(rowid) is not None

    @property
    def nbytes(self) -> int:
        """Bytes of the codes and scales (mapped base included)."""
        return sum(
            int(seg.column("codes").nbytes + seg.column("scales").nbytes)
            for seg in (self._base, self._tail)
        )

    @property
    def dead_rows(self) -> int:
        """Rows deleted since the load and still masked, not yet compacted away."""
        return self._base.dead + self._tail.dead

    @property
    def stale_rows(self) -> int:
        """Rows a new base would fold in: the tail, and the base's dead rows."""
        return self._tail.used + self._base.dead

    @property
    def base_rows(self) -> int:
        return self._base.used

    # -- updates ---------------------------------------------------------

    def reserve(self, rows: int) -> None:
        """Make room for ``rows`` more rows (a full load knows its size)."""
        self._tail.grow(self._tail.used + rows)

    def _locate(self, rowid: int) -> tuple[_Segment, int] | None:
        position = self._tail_position.get(rowid)
        if position is not None:
            return self._tail, position
        rowids = self._base.column("rowids")
        found = int(np.searchsorted(rowids, rowid))
        if found < len(rowids) and int(rowids[found]) == rowid and self._base.alive[found]:
            return self._base, found
        return None

    def remove(self, rowids: Iterable[int]) -> None:
        rowids = list(rowids)
        self.exact_cache.forget(rowids)
        for rowid in rowids:
            located = self._locate(rowid)
            if located is None:
                continue
            segment, position = located
            segment.alive[position] = False
            segment.dead += 1
            if segment is self._tail:
                del self._tail_position[rowid]
        tail = self._tail
        if tail.dead >= max(COMPACT_DEAD_MIN, int(tail.used * COMPACT_DEAD_FRACTION)):
            tail.compacted()
            rowids_now = tail.column("rowids").tolist()
            self._tail_position = {int(rowid): pos for pos, rowid in enumerate(rowids_now)}

    def add(self, rows: Sequence[DenseRow]) -> None:
        """Append rows; a rowid already present is replaced (vector rewritten)."""
        if not rows:
            return
        self.remove([row.rowid for row in rows if row.rowid in self])
        self.exact_cache.forget(row.rowid for row in rows)
        count = len(rows)
        tail = self._tail
        start, stop = tail.used, tail.used + count
        tail.grow(stop)
        flat = np.frombuffer(b"".join(row.vector for row in rows), dtype=VECTOR_DTYPE)
        codes, scales = quantize(flat.reshape(count, self.dimension).astype(np.float32))
        columns = tail.columns
        columns["codes"][start:stop] = codes
        columns["scales"][start:stop] = scales
        columns["rowids"][start:stop] = [row.rowid for row in rows]
        columns["kinds"][start:stop] = [KIND_CODES.get(row.kind, _UNKNOWN_CODE) for row in rows]
        columns["source_codes"][start:stop] = [self._source_code(row.source) for row in rows]
        columns["session_codes"][start:stop] = [self._session_code(row.session) for row in rows]
        dates = np.array([(row.date or "").encode() for row in rows], dtype=np.bytes_)
        if dates.dtype.itemsize > columns["dates"].dtype.itemsize:
            columns["dates"] = columns["dates"].astype(dates.dtype)
        columns["dates"][start:stop] = dates
        tail.alive[start:stop] = True
        for offset, row in enumerate(rows):
            self._tail_position[row.rowid] = start + offset
        tail.used = stop

    def _source_code(self, source: str) -> int:
        code = self._source_ids.get(source)
        if code is None:
            code = self._source_ids[source] = len(self._sources)
            self._sources.append(source)
        return code

    def _session_code(self, session: str | None) -> int:
        if session is None:
            return _NO_SESSION
        code = self._session_ids.get(session)
        if code is None:
            code = self._session_ids[session] = len(self._sessions)
            self._sessions.append(session)
        return code

    def live_columns(self) -> tuple[dict[str, npt.NDArray[Any]], list[str], list[str]]:
        """Every live row's columns in row id order, with the source and
        session names their codes index: what a new base is made of."""
        parts = [(seg, np.flatnonzero(seg.live_alive())) for seg in (self._base, self._tail)]
        columns: dict[str, npt.NDArray[Any]] = {}
        for name in self._base.columns:
            pieces = [seg.column(name)[keep] for seg, keep in parts]
            if name == "dates":
                width = max(piece.dtype.itemsize for piece in pieces)
                pieces = [piece.astype(f"S{width}") for piece in pieces]
            columns[name] = np.concatenate(pieces)
        order = np.argsort(columns["rowids"], kind="stable")
        return (
            {name: array[order] for name, array in columns.items()},
            self._sources,
            self._sessions,
        )

    # -- search ----------------------------------------------------------

    def top(
        self,
        query: npt.NDArray[np.float32],
        n: int,
        filters: SearchFilters | None = None,
        exact: ExactVectors | None = None,
    ) -> list[int]:
        """Row ids of the ``n`` best cosine matches, best first (ties by rowid)."""
        return [row_id for row_id, _ in self.top_scored(query, n, filters, exact)]

    def top_scored(
        self,
        query: npt.NDArray[np.float32],
        n: int,
        filters: SearchFilters | None = None,
        exact: ExactVectors | None = None,
    ) -> list[tuple[int, float]]:
        """(row id, cosine) of the ``n`` best matches, best first (ties by rowid)."""
        return self.search(query, n, filters, exact).hits

    def search(
        self,
        query: npt.NDArray[np.float32],
        n: int,
        filters: SearchFilters | None = None,
        exact: ExactVectors | None = None,
    ) -> DenseResult:
        """The ``n`` best matches and the mean cosine over every searched row.

        Vectors are stored L2-normalised, so the dot product is the cosine.
        The mean is what a query scores against this collection by chance:
        how far the best match stands above it is evidence (relevance.py).
        With *exact*, the int8 scan picks the candidates and their float32
        vectors give the cosines; without it the cosines are the int8 ones.
        """
        rows = self._base.used + self._tail.used
        if rows == 0 or n <= 0:
            return DenseResult([], 0.0, 0)
        query_codes, query_scales = quantize(np.asarray(query, dtype=np.float32)[None, :])
        query_scale = float(query_scales[0])
        # Scores up to the query's scale (one multiplication fewer per row).
        parts = [seg.scores(query_codes[0]) for seg in (self._base, self._tail) if seg.used]
        scores = parts[0] if len(parts) == 1 else np.concatenate(parts)
        mask = self._mask(filters)
        if mask is None:
            valid = rows
            mean = float(scores.mean(dtype=np.float64)) * query_scale
        else:
            valid = int(np.count_nonzero(mask))
            if valid == 0:
                return DenseResult([], 0.0, 0)
            mean = float(scores[mask].mean(dtype=np.float64)) * query_scale
            scores[~mask] = -np.inf
        take = min(n, valid)
        pick = take if exact is None else min(valid, RESCORE_FACTOR * take + RESCORE_EXTRA)
        idx = best_positions(scores, pick)
        idx = idx[np.isfinite(scores[idx])]
        rowids = self._rowids_at(idx)
        cosines = scores[idx].astype(np.float64) * query_scale
        if exact is not None:
            cosines = _rescored(self._cached(exact), query, rowids, cosines)
        order = np.lexsort((rowids, -cosines))[:take]
        best: list[int] = rowids[order].tolist()
        values: list[float] = cosines[order].tolist()
        return DenseResult(list(zip(best, values, strict=True)), mean, valid)

    def _cached(self, exact: ExactVectors) -> ExactVectors:
        cache = self.exact_cache
        return lambda rowids: cache.vectors(rowids, exact)

    def cosines(
        self,
        query: npt.NDArray[np.float32],
        rowids: Iterable[int],
        exact: ExactVectors | None = None,
    ) -> dict[int, float]:
        """The cosine of each live row among ``rowids`` (rows without a vector
        are left out): the dense evidence for a lexical-only candidate."""
        if exact is not None:
            # The matrix mirrors the reader's snapshot: the rows it holds a
            # vector for are the live ones.
            return _cosines_of(self._cached(exact)(list(rowids)), query)
        located = [(rowid, self._locate(rowid)) for rowid in rowids]
        present = [(rowid, where) for rowid, where in located if where is not None]
        if not present:
            return {}
        query_codes, query_scales = quantize(np.asarray(query, dtype=np.float32)[None, :])
        out: dict[int, float] = {}
        for rowid, (segment, position) in present:
            codes = segment.columns["codes"][position].astype(np.float64)
            scale = float(segment.columns["scales"][position]) * float(query_scales[0])
            out[rowid] = float(codes @ query_codes[0].astype(np.float64)) * scale
        return out

    def _rowids_at(self, idx: npt.NDArray[np.intp]) -> npt.NDArray[np.int64]:
        base = self._base.used
        out = np.empty(len(idx), dtype=np.int64)
        in_base = idx < base
        out[in_base] = self._base.column("rowids")[idx[in_base]]
        out[~in_base] = self._tail.column("rowids")[idx[~in_base] - base]
        return out

    def _mask(self, filters: SearchFilters | None) -> npt.NDArray[np.bool_] | None:
        if (filters is None or filters.is_empty()) and self.dead_rows == 0:
            return None
        return np.concatenate(
            [self._segment_mask(seg, filters) for seg in (self._base, self._tail)]
        )

    def _segment_mask(
        self, segment: _Segment, filters: SearchFilters | None
    ) -> npt.NDArray[np.bool_]:
        mask = segment.live_alive().copy()
        if filters is None or segment.used == 0:
            return mask
        if filters.kind:
            mask &= segment.column("kinds") == KIND_CODES.get(filters.kind, _UNKNOWN_CODE)
        if filters.source_prefix:
            prefix = filters.source_prefix
            table = np.fromiter(
                (source.startswith(prefix) for source in self._sources),
                dtype=bool,
                count=len(self._sources),
            )
            mask &= table[segment.column("source_codes")]
        if filters.session:
            code = self._session_ids.get(filters.session)
            if code is None:
                mask[:] = False
            else:
                mask &= segment.column("session_codes") == code
        if filters.after or filters.before:
            # Rows without a date fail any date bound, as NULL does in SQL.
            dates = segment.column("dates")
            mask &= dates != b""
            if filters.after:
                mask &= dates >= filters.after.encode()
            if filters.before:
                mask &= dates < filters.before.encode()
        return mask


def _rescored(
    exact: ExactVectors,
    query: npt.NDArray[np.float32],
    rowids: npt.NDArray[np.int64],
    approximate: npt.NDArray[np.float64],
) -> npt.NDArray[np.float64]:
    """The candidates' float32 cosines (a row the reader lacks keeps its int8 one)."""
    exact_cosines = _cosines_of(exact(rowids.tolist()), query)
    out = approximate.copy()
    for position, rowid in enumerate(rowids.tolist()):
        value = exact_cosines.get(rowid)
        if value is not None:
            out[position] = value
    return out


def _cosines_of(
    vectors: dict[int, npt.NDArray[np.float32]], query: npt.NDArray[np.float32]
) -> dict[int, float]:
    """Each vector's dot product with *query*, in one pass."""
    if not vectors:
        return {}
    stacked = np.stack(list(vectors.values()))
    # einsum, not matmul: it runs on this thread; BLAS gemv wakes its thread
    # pool per call, which cost milliseconds on a busy 2-core machine.
    values = np.einsum("ij,j->i", stacked, np.asarray(query, dtype=np.float32))
    return dict(zip(vectors, values.astype(np.float64).tolist(), strict=True))


class BoundMatrix(NamedTuple):
    """A matrix with the reader of its index file's float32 vectors, inside
    one read snapshot: what the search legs use."""

    matrix: DenseMatrix
    exact: ExactVectors

    def __len__(self) -> int:
        return len(self.matrix)

    def search(
        self, query: npt.NDArray[np.float32], n: int, filters: SearchFilters | None = None
    ) -> DenseResult:
        return self.matrix.search(query, n, filters, self.exact)

    def cosines(self, query: npt.NDArray[np.float32], rowids: Iterable[int]) -> dict[int, float]:
        return self.matrix.cosines(query, rowids, self.exact)
