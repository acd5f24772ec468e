"""Writes to the Milvus notes index: a file's chunks replaced, files removed,
pending chunks given their vectors, the model bound.

Milvus has no transactions, so each write is ordered to be safe to repeat
and to leave no loss behind if it stops half way: new rows are upserted
(idempotent by chunk hash) before stale ones are deleted, and the ledger
records the file last (a write cut short is redone by the next sync).

Which rows a source has comes from the ledger's mirror of the collection
(``mirror.py``), compared with the collection first when someone else may
have written, so a file's write deletes by primary key and never scans
``source == …`` (Milvus Lite has no scalar index: each scan reads every row).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from memlane.core.types import Chunk, Kind, content_hash_of
from memlane.index.milvus import schema
from memlane.index.milvus.collection import CollectionAccess
from memlane.index.milvus.ledger import META_MODEL, META_RECONCILED
from memlane.index.milvus.mirror import MirrorRow
from memlane.index.protocol import FileRecord, IndexedChunk, chunks_of

log = logging.getLogger(__name__)

#: Rows per upsert / get / delete call.
BATCH_ROWS = 512


def row_of(item: IndexedChunk, vector: npt.ArrayLike) -> dict[str, Any]:
    """A Milvus row: memsearch's fields plus memlane's metadata."""
    c = item.chunk
    return {
        schema.PRIMARY: c.chunk_hash,
        schema.VECTOR: np.asarray(vector, dtype=np.float32).reshape(-1).tolist(),
        "content": c.content,
        "source": c.source,
        "heading": c.heading,
        "heading_level": c.heading_level,
        "start_line": c.start_line,
        "end_line": c.end_line,
        schema.KIND: item.kind,
        schema.DATE: item.date,
        schema.SESSION: item.session,
    }


def indexed_of(row: Mapping[str, Any]) -> IndexedChunk:
    """A Milvus row as a chunk; a row memsearch wrote has no memlane
    metadata (a journal chunk without date or session, until re-indexed)."""
    content = str(row.get("content") or "")
    chunk = Chunk(
        content=content,
        source=str(row.get("source") or ""),
        heading=str(row.get("heading") or ""),
        heading_level=int(row.get("heading_level") or 0),
        start_line=int(row.get("start_line") or 0),
        end_line=int(row.get("end_line") or 0),
        # memsearch does not store it; it is the hash of the content.
        content_hash=content_hash_of(content),
        chunk_hash=str(row[schema.PRIMARY]),
    )
    kind: Kind = "journal"
    stored = row.get(schema.KIND)
    if stored == "topic" or stored == "session":
        kind = stored
    return IndexedChunk(
        chunk=chunk,
        kind=kind,
        date=row.get(schema.DATE),
        session=row.get(schema.SESSION),
    )


def _metadata(item: IndexedChunk) -> tuple[Any, Any, Any]:
    return (item.kind, item.date, item.session)


def _batches(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class MilvusWriter(CollectionAccess):
    """The write half of ``MilvusIndex``."""

    #: ``MilvusIndex``'s ``owns`` argument (None: every source).
    _owns: Callable[[str], bool] | None = None

    def owns(self, source: str) -> bool:
        """Whether this index keeps ``source`` in step."""
        return self._owns is None or self._owns(source)

    # -- model -----------------------------------------------------------------

    def ensure_model(self, model: str, dimension: int | None) -> bool:
        """Bind to ``model``. A different stored model clears the ledger and
        returns True (chunk ids embed the model name, so re-indexing replaces
        the rows file by file); a collection of another dimension raises,
        never dropped (it may be shared). A collection dropped by another
        tool returns True too: everything is indexed again."""
        with self._session() as client:
            lost = self.rebuilt_reason is not None
            if dimension is not None and self._exists:
                self._check_dimension(dimension)
            stored = self._stored_model(client)
            changed = stored is not None and stored != model
            if changed:
                self._ledger.clear()
                self._written()
                log.info("milvus index %s: embedding model changed to %s", self.collection, model)
            if stored != model:
                self._ledger.set_meta(**{META_MODEL: model})
                if self._exists:
                    self._set_properties(client, {schema.MODEL_PROPERTY: model})
            return changed or lost

    # -- files -------------------------------------------------------------------

    def _reconcile(self, client: Any) -> None:
        """A fresh ledger learns which sources the collection holds (those
        that are files here): they are re-read and compared with Milvus, so
        nothing it holds is embedded again. Sources that are not files here
        are left alone: they may be another machine's, and so are the ones
        this index does not keep in step (``owns``: another project sharing
        the collection, memsearch's ``MEMORY.md``)."""
        if self._ledger.meta(META_RECONCILED) is not None:
            return
        if not self._exists:
            # Nothing to learn yet: a collection another tool creates and
            # fills later is learnt on the first operation that sees it.
            return
        self._fresh(client)
        sources = self._mirror.sources()
        self._ledger.add_placeholders(
            sorted(s for s in sources if self.owns(s) and os.path.isfile(s))
        )

    def _iterate(
        self, client: Any, expr: str, fields: list[str], batch: int = BATCH_ROWS
    ) -> Iterator[list[dict[str, Any]]]:
        iterator = client.query_iterator(
            collection_name=self.collection, batch_size=batch, filter=expr, output_fields=fields
        )
        try:
            while True:
                rows = iterator.next()
                if not rows:
                    return
                yield [dict(row) for row in rows]
        finally:
            iterator.close()

    def _source_rows(self, client: Any, source: str) -> dict[str, tuple[Any, Any, Any]]:
        """chunk hash -> (kind, date, session) of the rows of ``source``
        (the ledger's mirror, compared with the collection if need be)."""
        if not self._exists:
            return {}
        self._fresh(client)
        return self._mirror.of_source(source)

    def _vectors(self, client: Any, hashes: Sequence[str]) -> dict[str, list[float]]:
        out: dict[str, list[float]] = {}
        for part in _batches(list(hashes), BATCH_ROWS):
            rows = client.get(
                collection_name=self.collection, ids=list(part), output_fields=[schema.VECTOR]
            )
            out.update({str(row[schema.PRIMARY]): row[schema.VECTOR] for row in rows})
        return out

    def _upsert(self, client: Any, rows: Sequence[dict[str, Any]]) -> None:
        """Write ``rows``. On Milvus Lite, where the mirror is exact (no other
        process writes while this one holds the database), rows it does not
        hold are inserted: an upsert looks each key up in every segment
        first. A server gets upserts (another machine may have written the
        same chunk since the last comparison; Milvus keeps duplicate keys)."""
        held = self._mirror.known([str(row[schema.PRIMARY]) for row in rows])
        lite = self._conn.path is not None
        fresh = [row for row in rows if lite and str(row[schema.PRIMARY]) not in held]
        again = [row for row in rows if not lite or str(row[schema.PRIMARY]) in held]
        for part in _batches(fresh, BATCH_ROWS):
            client.insert(collection_name=self.collection, data=list(part))
        for part in _batches(again, BATCH_ROWS):
            client.upsert(collection_name=self.collection, data=list(part))

    def replace_file(
        self,
        record: FileRecord,
        chunks: Sequence[IndexedChunk],
        vectors: Mapping[str, np.ndarray],
    ) -> int:
        """Make ``chunks`` the content of ``record.source``; rows memsearch
        wrote (no memlane metadata) get it, keeping their stored embedding."""
        wanted = chunks_of(record, chunks)
        arrays = {h: self._as_vector(h, vectors[h]) for h in wanted if h in vectors}
        dimension = self._dimension_of(arrays)
        with self._session(create_dimension=dimension) as client:
            self._check_dimension(dimension)
            existing = self._source_rows(client, record.source)
            pending = self._ledger.pending_hashes(record.source)
            rows = [
                row_of(item, arrays[h])
                for h, item in wanted.items()
                if h not in existing and h in arrays
            ]
            # Rows whose metadata is missing (memsearch wrote them) or out of
            # date keep their embedding and get memlane's metadata.
            refresh = [
                h for h, item in wanted.items() if h in existing and existing[h] != _metadata(item)
            ]
            if refresh:
                stored = self._vectors(client, refresh)
                rows += [row_of(wanted[h], stored[h]) for h in refresh if h in stored]
            self._upsert(client, rows)
            stale = [h for h in existing if h not in wanted]
            for part in _batches(stale, BATCH_ROWS):
                client.delete(collection_name=self.collection, ids=list(part))
            if rows or stale:
                self._mirror.update([MirrorRow.of(row) for row in rows], stale)
                self._written()
        new_pending = [
            item
            for h, item in wanted.items()
            if h not in existing and h not in arrays and h not in pending
        ]
        self._ledger.remove_pending([h for h in pending if h not in wanted or h in arrays])
        self._ledger.add_pending(new_pending)
        self._ledger.record_file(record)
        return sum(1 for h in wanted if h not in existing and h not in pending)

    def remove_files(self, sources: Iterable[str]) -> int:
        targets = list(dict.fromkeys(sources))
        if not targets:
            return 0
        removed = 0
        with self._session() as client:
            if self._exists:
                self._fresh(client)
                hashes = self._mirror.hashes_of(targets)
                for batch in _batches(hashes, BATCH_ROWS):
                    client.delete(collection_name=self.collection, ids=list(batch))
                removed = len(hashes)
                if removed:
                    self._mirror.update(removed=hashes)
                    self._written()
        return removed + self._ledger.remove_sources(targets)

    # -- vectors -------------------------------------------------------------------

    def missing_vectors(self, limit: int | None = None) -> list[tuple[str, str]]:
        """Pending chunks (stored without a vector) and their embedding input."""
        return self._ledger.missing_vectors(limit)

    def set_vectors(self, vectors: Mapping[str, np.ndarray]) -> None:
        """Move pending chunks into Milvus with their vectors; unknown keys
        (and chunks already in Milvus) are ignored."""
        waiting = self._ledger.pending(vectors)
        if not waiting:
            return
        arrays = {
            item.chunk.chunk_hash: self._as_vector(
                item.chunk.chunk_hash, vectors[item.chunk.chunk_hash]
            )
            for item in waiting
        }
        dimension = self._dimension_of(arrays)
        with self._session(create_dimension=dimension) as client:
            self._check_dimension(dimension)
            self._fresh(client)
            rows = [row_of(item, arrays[item.chunk.chunk_hash]) for item in waiting]
            self._upsert(client, rows)
            self._mirror.update([MirrorRow.of(row) for row in rows])
            self._written()
        self._ledger.remove_pending(arrays)
