"""The float32 vectors a process's searches rescored with, kept for the next.

The dense leg picks candidates from int8 codes and gives each candidate's
cosine from its float32 vector, read from the index file in the search's
snapshot (``dense.py``). Reading them costs about as much as the scan at
10k rows (0.4-0.8 ms of a 5 ms search), and successive searches of a store
read many of the same rows. A row's vector changes only through the
matrix that holds it (``DenseMatrix.add`` / ``remove``, as the index file's
generation moves), which drops the row from here: what is kept is always
the snapshot's. A row the cache does not hold is read as before.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np
import numpy.typing as npt

#: float32 vectors of the given row ids that the index holds (rows without
#: a vector are left out): what a search rescores its candidates with.
ExactVectors = Callable[[Sequence[int]], dict[int, npt.NDArray[np.float32]]]

#: At most this many bytes of vectors are kept (10,922 rows of 384 floats);
#: the oldest kept go first.
EXACT_CACHE_BYTES = 16 * 1024 * 1024


class ExactCache:
    """Row id -> float32 vector, bounded, first in first out."""

    def __init__(self, dimension: int, max_bytes: int = EXACT_CACHE_BYTES) -> None:
        self.capacity = max(0, max_bytes // max(1, dimension * 4))
        self._kept: dict[int, npt.NDArray[np.float32]] = {}

    def __len__(self) -> int:
        return len(self._kept)

    def vectors(
        self, rowids: Sequence[int], read: ExactVectors
    ) -> dict[int, npt.NDArray[np.float32]]:
        """The vectors of *rowids* (rows without one left out): those kept,
        and the others from *read*, kept for the next search."""
        kept = self._kept
        out: dict[int, npt.NDArray[np.float32]] = {}
        missing: list[int] = []
        for rowid in rowids:
            vector = kept.get(rowid)
            if vector is None:
                missing.append(rowid)
            else:
                out[rowid] = vector
        if missing:
            fresh = read(missing)
            out.update(fresh)
            if self.capacity:
                for rowid, vector in fresh.items():
                    if len(kept) >= self.capacity:
                        kept.pop(next(iter(kept)))
                    kept[rowid] = vector
        return out

    def forget(self, rowids: Iterable[int]) -> None:
        """These rows changed (deleted, or their vector rewritten)."""
        kept = self._kept
        if kept:
            for rowid in rowids:
                kept.pop(rowid, None)
