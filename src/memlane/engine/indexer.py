"""Bring a collection's index in line with the markdown store.

Markdown is the source of truth: per source file, chunks that disappeared
are deleted, only new chunks are embedded, and files that vanished are
pruned. Work is written in groups so a killed run keeps what it finished.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from memlane.core.errors import EmbedderError, StoreError
from memlane.core.types import Chunk
from memlane.embed.base import Embedder
from memlane.engine.reports import FileFailure, IndexReport, Progress
from memlane.index.base import FileRecord, IndexBackend, IndexedChunk
from memlane.store.anchor import parse_anchor
from memlane.store.chunker import chunk_markdown
from memlane.store.layout import date_of, entry_time_of, kind_of, list_markdown_files
from memlane.store.section import read_markdown

# New chunks embedded and written per group: big enough to batch the model
# well, small enough that a kill loses little work.
EMBED_FLUSH_CHUNKS = 256


@dataclass
class _PendingFile:
    record: FileRecord
    chunks: list[IndexedChunk]
    new: list[Chunk]


def describe_chunks(chunks: Sequence[Chunk], path: Path, store: Path) -> list[IndexedChunk]:
    """Attach the filter metadata (kind, date, session) to a file's chunks."""
    kind = kind_of(path, store)
    day = date_of(path)
    out = []
    for chunk in chunks:
        when = day
        hhmm = entry_time_of(chunk.heading) if day else None
        if day and hhmm:
            when = f"{day}T{hhmm}"
        anchor = parse_anchor(chunk.content)
        out.append(
            IndexedChunk(
                chunk=chunk, kind=kind, date=when, session=anchor.session if anchor else None
            )
        )
    return out


class Indexer:
    def __init__(
        self,
        store: Path,
        index: IndexBackend,
        model: str,
        get_embedder: Callable[[], Embedder | None],
    ) -> None:
        self.store = store
        self.index = index
        self.model = model
        # Called only when there is something to embed, so an index run over
        # an unchanged store never loads the model.
        self._get_embedder = get_embedder
        self._embedder_failed = False
        self.embedder_problem: str | None = None

    def _embedder(self) -> Embedder | None:
        return None if self._embedder_failed else self._get_embedder()

    def sync(self, operation: str = "index", progress: Progress | None = None) -> IndexReport:
        started = time.monotonic()
        report = IndexReport(operation=operation)
        files = list_markdown_files(self.store) if self.store.is_dir() else []
        report.total_files = len(files)
        recorded = self.index.files()

        pending: list[_PendingFile] = []
        for n, path in enumerate(files, 1):
            if progress:
                progress(n, len(files), "scanning")
            item = self._scan(path, recorded.get(str(path)), report)
            if item is not None:
                pending.append(item)

        gone = set(recorded) - {str(p) for p in files}
        if gone:
            self.index.remove_files(sorted(gone))
            report.removed_files = len(gone)

        self._write(pending, report, progress)
        self._fill_missing_vectors(report, progress)
        report.total_chunks = self.index.count()
        report.seconds = time.monotonic() - started
        return report

    def _scan(
        self, path: Path, known: FileRecord | None, report: IndexReport
    ) -> _PendingFile | None:
        try:
            st = path.stat()
        except OSError as exc:
            report.failed_files.append(FileFailure(str(path), exc.strerror or str(exc)))
            return None
        if known is not None and known.mtime_ns == st.st_mtime_ns and known.size == st.st_size:
            return None
        try:
            text = read_markdown(path)
        except StoreError as exc:
            report.failed_files.append(FileFailure(str(path), exc.message))
            return None
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        record = FileRecord(str(path), st.st_mtime_ns, st.st_size, digest)
        chunks = chunk_markdown(text, str(path), self.model)
        existing = self.index.chunk_hashes(str(path)) if known is not None else set()
        new = [c for c in chunks if c.chunk_hash not in existing]
        return _PendingFile(record, describe_chunks(chunks, path, self.store), new)

    def _write(
        self, pending: list[_PendingFile], report: IndexReport, progress: Progress | None
    ) -> None:
        total_new = sum(len(p.new) for p in pending)
        done = 0
        group: list[_PendingFile] = []
        group_size = 0
        for item in pending:
            group.append(item)
            group_size += len(item.new)
            if group_size >= EMBED_FLUSH_CHUNKS:
                done += self._flush(group, report)
                if progress:
                    progress(done, total_new, "embedding")
                group, group_size = [], 0
        if group:
            done += self._flush(group, report)
            if progress:
                progress(done, total_new, "embedding")

    def _flush(self, group: list[_PendingFile], report: IndexReport) -> int:
        new = [c for item in group for c in item.new]
        vectors = self._embed(new, report)
        written = 0
        for item in group:
            inserted = self.index.replace_file(item.record, item.chunks, vectors)
            report.indexed_chunks += inserted
            report.indexed_files += 1
            written += len(item.new)
        return written

    def _embed(self, chunks: Sequence[Chunk], report: IndexReport) -> dict[str, np.ndarray]:
        if not chunks:
            return {}
        embedder = self._embedder()
        if embedder is None:
            report.unembedded_chunks += len(chunks)
            return {}
        texts = [c.embedding_text for c in chunks]
        try:
            matrix = embedder.embed(texts)
        except EmbedderError as exc:
            self.embedder_problem = exc.message
            self._embedder_failed = True
            report.notices.append(
                f"embedding failed ({exc.message}); chunks are stored for lexical search "
                "and will be embedded on the next index once the embedder works"
            )
            report.unembedded_chunks += len(chunks)
            return {}
        report.embedded_chunks += len(chunks)
        return {c.chunk_hash: matrix[i] for i, c in enumerate(chunks)}

    def _fill_missing_vectors(self, report: IndexReport, progress: Progress | None) -> None:
        """Embed chunks stored earlier without a vector (the embedder was down)."""
        missing = self.index.missing_vectors()
        if not missing:
            return
        embedder = self._embedder()
        if embedder is None:
            # Counts this run's unembedded inserts too: they are in ``missing``.
            report.unembedded_chunks = len(missing)
            return
        for start in range(0, len(missing), EMBED_FLUSH_CHUNKS):
            batch = missing[start : start + EMBED_FLUSH_CHUNKS]
            try:
                matrix = embedder.embed([text for _, text in batch])
            except EmbedderError as exc:
                self.embedder_problem = exc.message
                report.notices.append(f"embedding failed ({exc.message}); will retry next index")
                report.unembedded_chunks = len(missing) - start
                return
            self.index.set_vectors({h: matrix[i] for i, (h, _) in enumerate(batch)})
            report.embedded_chunks += len(batch)
            if progress:
                progress(min(start + len(batch), len(missing)), len(missing), "embedding")
