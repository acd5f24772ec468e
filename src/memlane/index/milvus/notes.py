"""The Milvus notes index: memsearch's collection behind ``IndexBackend``.

A collection memlane creates is one memsearch reads and writes, and the
reverse (same schema, same chunk ids); memlane's filter metadata rides in
dynamic fields. The local ledger (``ledger.py``) caches file records,
holds chunks waiting for a vector and mirrors the collection's rows and
word counts (``mirror.py``), and on Milvus Lite a copy of each row's
vector and fields (``replica.py``). Searches run memlane's fusion on the
legs (``search.py``): on a server both legs run in Milvus, two round trips
once the mirror is trusted; on Lite only the BM25 leg does, one round trip,
the dense leg reading the copy. Milvus Lite is opened per operation
(``connection.py``).
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from memlane.core.errors import ConfigError, MemlaneError
from memlane.core.settings import BACKOFF_DELAYS_MS, IndexSettings
from memlane.core.supersede import HEX16, superseded_hashes
from memlane.core.types import Chunk, SearchMode
from memlane.index.legs.fusion import fusion_method
from memlane.index.milvus import mirror, schema, search
from memlane.index.milvus.ledger import META_COLLECTION, META_MODEL, META_URI
from memlane.index.milvus.writes import MilvusWriter, indexed_of
from memlane.index.protocol import (
    FileRecord,
    IndexedChunk,
    QueryVector,
    ScoredChunk,
    SearchFilters,
    query_vector_of,
    search_mode,
)
from memlane.index.sqlite.notes_search import candidate_count

if TYPE_CHECKING:
    from memlane.index.protocol import IndexBackend

#: The word of a ``supersedes:<hash>`` marker (core/supersede.py), as analyzed.
MARKER_WORD = "supersedes"
#: Rows sampled for the collection's centroid (the mean cosine a query
#: scores by chance), re-sampled when the row count changes bucket.
CENTROID_SAMPLE = 512


def row_bucket(rows: int) -> int:
    """Row counts within a factor of ~1.4 share a centroid."""
    return 0 if rows <= 0 else 1 + int(2 * math.log2(rows))


class MilvusIndex(MilvusWriter):
    """IndexBackend over a Milvus (Lite, server or Zilliz Cloud) collection."""

    backend = "milvus"
    #: Each leg is a round trip of its own, the lexical one first: the query
    #: vector is waited for only after it (``search``).
    embeds_beside_lexical = True

    def __init__(
        self,
        uri: str,
        collection: str,
        ledger_path: Path,
        settings: IndexSettings | None = None,
        *,
        token: str | None = None,
        backoff_delays_ms: Sequence[int] = BACKOFF_DELAYS_MS,
        owns: Callable[[str], bool] | None = None,
    ) -> None:
        """``owns``: which sources this index keeps in step (the files the
        store walk lists); a fresh ledger takes over only those, and a reset
        deletes only their rows. None: every source."""
        self.settings = settings or IndexSettings()
        self._owns = owns
        if not 0.0 <= self.settings.alpha <= 1.0:
            raise ConfigError(
                f"index.alpha must lie in [0, 1], got {self.settings.alpha}",
                hint="the dense leg's weight; the lexical leg gets 1 - alpha",
            )
        self._fuse = fusion_method(self.settings.fusion)
        self._cache_lock = threading.Lock()
        self._freq_rows = -1
        self._doc_freq: dict[str, int] = {}
        self._centroid_held: tuple[int, npt.NDArray[np.float32]] | None = None
        super().__init__(
            uri, collection, ledger_path, token=token, backoff_delays_ms=backoff_delays_ms
        )

    # -- caches --------------------------------------------------------------

    def _forget_caches(self) -> None:
        with self._cache_lock:
            self._freq_rows = -1
            self._doc_freq = {}
            self._centroid_held = None

    def document_frequencies(self, rows: int) -> dict[str, int]:
        """The probed document frequencies (searches made while the ledger's
        mirror is not trusted), kept while the row count stays in its bucket
        (``row_bucket``: a few writes barely move a word's idf, and a probe
        costs a round trip through the whole collection)."""
        with self._cache_lock:
            if row_bucket(rows) != self._freq_rows:
                self._freq_rows, self._doc_freq = row_bucket(rows), {}
            return self._doc_freq

    def word_counts(self, words: Sequence[str]) -> tuple[int, dict[str, int]] | None:
        """The row count and each word's document frequency as the ledger's
        mirror knows them (compared with the collection first if need be);
        None while it is not trusted (a search then probes Milvus)."""
        with self._session() as client:
            if not self._fresh(client, fetch_max=mirror.SEARCH_FETCH_MAX):
                return None
            return self._mirror.rows(), self._mirror.doc_freq(words)

    @property
    def comparisons(self) -> int:
        """How often this object compared the mirror with the whole collection."""
        return self._mirror.comparisons

    def _centroid(self, client: Any, rows: int) -> npt.NDArray[np.float32] | None:
        bucket = row_bucket(rows)
        held = self._centroid_held
        if held is not None and held[0] == bucket:
            return held[1]
        cached = self._ledger.centroid()
        if cached is not None and cached[0] == bucket:
            vector: npt.NDArray[np.float32] | None = np.asarray(cached[1], dtype=np.float32)
        else:
            vector = search.centroid(client, self.collection, CENTROID_SAMPLE)
            if vector is not None:
                self._ledger.set_centroid(bucket, vector.astype(float).tolist())
        if vector is not None:
            self._centroid_held = (bucket, vector)
        return vector

    # -- reads -----------------------------------------------------------------

    def files(self) -> dict[str, FileRecord]:
        with self._session() as client:
            self._reconcile(client)
        return self._ledger.files()

    def chunk_hashes(self, source: str) -> set[str]:
        """What Milvus holds for ``source`` (whoever embedded it) and what waits
        for a vector."""
        with self._session() as client:
            held = set(self._source_rows(client, source))
        return held | self._ledger.pending_hashes(source)

    def chunk_contexts(self, source: str) -> dict[str, str]:
        """memsearch's schema has no BM25 context column: every context is ""."""
        return dict.fromkeys(self.chunk_hashes(source), "")

    def prepare_search(self, *, bulk: bool = True) -> None:
        """Nothing to prepare: Milvus holds the vectors and their index."""

    def count(self) -> int:
        with self._session() as client:
            rows = search.count(client, self.collection) if self._exists else 0
        return rows + self._ledger.pending_count()

    def get(self, chunk_hash: str, /) -> Chunk | None:
        item = self.get_indexed(chunk_hash)
        return item.chunk if item is not None else None

    def get_indexed(self, chunk_hash: str) -> IndexedChunk | None:
        with self._session() as client:
            rows = (
                search.rows_by_hash(client, self.collection, [chunk_hash]) if self._exists else {}
            )
        if chunk_hash in rows:
            return indexed_of(rows[chunk_hash])
        pending = self._ledger.pending([chunk_hash])
        return pending[0] if pending else None

    def vector_of(self, chunk_hash: str) -> np.ndarray | None:
        with self._session() as client:
            if not self._exists:
                return None
            stored = self._vectors(client, [chunk_hash])
        vector = stored.get(chunk_hash)
        return None if vector is None else np.asarray(vector, dtype=np.float32)

    def vectors_of(self, chunk_hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors of these chunks (those without one are left out)."""
        if not chunk_hashes:
            return {}
        with self._session() as client:
            if not self._exists:
                return {}
            stored = self._vectors(client, list(chunk_hashes))
        return {h: np.asarray(v, dtype=np.float32) for h, v in stored.items()}

    def superseders(self, content_hashes: Sequence[str]) -> dict[str, Chunk]:
        """Old content hash -> the chunk whose ``supersedes`` marker names it
        (core/supersede.py): a ``like`` filter per hash (Milvus has no token
        lookup; the markers are few and the hashes are checked as hex), asked
        only for the hashes some row holds as a word (the ledger's mirror
        knows; most collections hold no marker, and a search pays nothing)."""
        wanted = sorted({h for h in content_hashes if HEX16.fullmatch(h)})
        if not wanted:
            return {}
        with self._session() as client:
            if not self._exists:
                return {}
            if self._fresh(client, fetch_max=mirror.SEARCH_FETCH_MAX):
                held = self._mirror.doc_freq([MARKER_WORD, *wanted])
                wanted = [h for h in wanted if held[h] > 0] if held[MARKER_WORD] else []
                if not wanted:
                    return {}
            expr = " or ".join(f'content like "%supersedes:{h}%"' for h in wanted)
            rows = client.query(
                collection_name=self.collection, filter=expr, output_fields=schema.CHUNK_FIELDS
            )
        out: dict[str, Chunk] = {}
        for row in sorted(rows, key=lambda r: (str(r.get("source", "")), r.get("start_line", 0))):
            chunk = indexed_of(dict(row)).chunk
            for old in superseded_hashes(chunk.content):
                if old in wanted:
                    out[old] = chunk
        return out

    def export(self, batch: int = 512) -> Iterator[list[tuple[IndexedChunk, np.ndarray | None]]]:
        """Every row with its vector, then the pending chunks (no vector), in
        batches: what ``migrate`` copies. One Lite session for the whole walk."""
        with self._session() as client:
            if self._exists:
                fields = [*schema.CHUNK_FIELDS, schema.VECTOR]
                for rows in self._iterate(client, "", fields, batch):
                    yield [
                        (indexed_of(row), np.asarray(row[schema.VECTOR], dtype=np.float32))
                        for row in rows
                    ]
        waiting = self._ledger.pending()
        for start in range(0, len(waiting), batch):
            yield [(item, None) for item in waiting[start : start + batch]]

    def stats(self) -> dict[str, Any]:
        with self._session() as client:
            rows = search.count(client, self.collection) if self._exists else 0
            model = self._stored_model(client)
        pending = self._ledger.pending_count()
        return {
            "path": self.uri,
            "backend": self.backend,
            "collection": self.collection,
            "chunks": rows + pending,
            "vectors": rows,
            "pending": pending,
            "files": self._ledger.file_count(),
            "model": model,
            "dimension": self._dimension,
        }

    def vector_space(self) -> tuple[Any, Any]:
        """(model, dimension) of the collection's vectors (``stats``)."""
        stats = self.stats()
        return stats.get("model"), stats.get("dimension")

    def health(self) -> dict[str, Any]:
        """Whether the collection can be reached and used, for ``memlane status``."""
        out: dict[str, Any] = {
            "backend": self.backend,
            "uri": self.uri,
            "collection": self.collection,
            "reachable": False,
            "exists": False,
            "rows": None,
            "dimension": None,
            "error": None,
        }
        try:
            with self._session() as client:
                out["reachable"] = True
                out["exists"] = self._exists
                out["dimension"] = self._dimension
                out["rows"] = search.count(client, self.collection) if self._exists else 0
        except MemlaneError as exc:
            out["error"] = str(exc)
        return out

    # -- admin -----------------------------------------------------------------

    def reset(self, source_prefix: str) -> int:
        """Delete the rows of the files below the directory ``source_prefix``
        that this index keeps in step (``owns``), and clear the ledger (a
        reindex); the collection itself stays (it may be shared), and so do
        rows of files memlane does not index (memsearch's ``MEMORY.md``)."""
        removed = 0
        with self._session() as client:
            if self._exists:
                # A directory's rows, never those of a sibling whose name
                # merely starts the same ("proj" vs "proj-2").
                prefix = source_prefix.rstrip(os.sep) + os.sep
                self._fresh(client)
                hashes = [h for h, source in self._mirror.below(prefix) if self.owns(source)]
                for start in range(0, len(hashes), 512):
                    client.delete(collection_name=self.collection, ids=hashes[start : start + 512])
                self._mirror.update(removed=hashes)
                removed = len(hashes)
        self._ledger.clear(keep=self._kept_meta())
        self._written()
        return removed

    def drop(self) -> None:
        """Drop the whole collection (an explicit user action only)."""
        with self._session() as client:
            if self._exists:
                client.drop_collection(collection_name=self.collection)
        self._ledger.clear(keep=self._kept_meta())
        self._exists = False
        self._dimension = None
        self._written()
        self._conn.release_now()

    @staticmethod
    def _kept_meta() -> tuple[str, ...]:
        return (META_URI, META_COLLECTION, META_MODEL)

    def purge_deleted(self) -> str | None:
        """Ask Milvus to compact (deleted rows leave its segments); a notice
        when it cannot."""
        try:
            with self._session() as client:
                if self._exists:
                    client.compact(collection_name=self.collection)
        except MemlaneError as exc:
            return f"deleted rows stay in Milvus until it compacts ({exc})"
        return None

    # -- search ------------------------------------------------------------------

    def search(
        self,
        query: str,
        vector: QueryVector,
        k: int,
        filters: SearchFilters | None = None,
        *,
        lexical: bool = True,
        reach: int | None = None,
    ) -> tuple[SearchMode, list[ScoredChunk]]:
        """Hybrid search; ``vector`` None skips the dense leg (mode lexical),
        ``lexical`` False the BM25 leg (mode semantic); ``reach``: see
        ``NotesIndex.search``. A vector in flight is waited for after the
        lexical leg, whose round trip needs none."""
        if not lexical:
            vector = query_vector_of(vector, lexical=False)
        if filters is not None and filters.is_empty():
            filters = None
        with self._session() as client:
            # The ledger's mirror gives the row count and every word's count
            # (no round trip); while it is not trusted, Milvus is asked.
            exact = self._exists and self._fresh(client, fetch_max=mirror.SEARCH_FETCH_MAX)
            if not self._exists:
                rows = 0
            else:
                rows = self._mirror.rows() if exact else search.count(client, self.collection)
            if rows == 0 or k <= 0 or (lexical and not query.strip()):
                qvec = query_vector_of(vector, lexical=lexical)
                return search_mode(lexical, qvec is not None and rows > 0), []
            words = search.query_words(query) if lexical else []
            coll = search.Collection(
                self.collection,
                rows,
                None,
                self._mirror.doc_freq(words) if exact else self.document_frequencies(rows),
                exact=exact,
                matching=self._mirror.matching(filters) if exact and filters else None,
            )
            n = candidate_count(reach or k)
            expr = schema.expression(filters)
            # On Lite, with the mirror's copy of every row at hand, Milvus
            # runs only the BM25 search (returning hashes): the dense leg,
            # the cosines and the hits' fields are read here (replica.py).
            copy = self._mirror.local if exact else None
            local = copy.bound(filters) if copy is not None else None
            found: search.Rows = {}
            lexical_hits = (
                search.lexical_leg(client, coll, query, n, expr, None if local else found)
                if lexical
                else None
            )
            qvec = query_vector_of(vector, lexical=lexical)
            if qvec is not None:
                self._check_dimension(qvec.size)
                coll = replace(coll, centroid=self._centroid(client, rows))
            mode = search_mode(lexical, qvec is not None)
            fused = search.run(
                client,
                coll,
                query,
                qvec,
                mode,
                n=n,
                expr=expr,
                settings=self.settings,
                method=self._fuse,
                rows=found,
                lexical=lexical_hits,
                local=local,
            )[:k]
            if local is not None:
                found = local.rows([h for h, _ in fused])
            missing = [h for h, _ in fused if "content" not in found.get(h, {})]
            found.update(search.rows_by_hash(client, self.collection, missing))
        return mode, [
            ScoredChunk(chunk=indexed_of(found[h]).chunk, score=score)
            for h, score in fused
            if h in found
        ]


if TYPE_CHECKING:
    # mypy checks here that the Milvus index satisfies the index protocol.
    def _satisfies_protocol(index: MilvusIndex) -> IndexBackend:
        return index
