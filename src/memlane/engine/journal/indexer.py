"""Bring a collection's index in line with the markdown store.

Markdown is the source of truth: per source file, chunks that disappeared
are deleted, only new chunks are embedded, and files that vanished are
pruned. Work is written in groups so a killed run keeps what it finished.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from memlane.core.errors import EmbedderError, StoreError
from memlane.core.types import Chunk, embedding_text_of
from memlane.embed.base import Embedder
from memlane.engine.shared.results import FileFailure, IndexReport, Progress
from memlane.index.protocol import BULK_WRITE_VECTORS, FileRecord, IndexBackend, IndexedChunk
from memlane.store.anchor import parse_anchor
from memlane.store.chunker import chunk_markdown
from memlane.store.damage import DamagedLine
from memlane.store.layout import date_of, entry_time_of, kind_of, scan_markdown_files, walk_name
from memlane.store.safe_paths import LINK_HINT, link_target
from memlane.store.section import read_markdown_checked

if TYPE_CHECKING:
    from memlane.engine.shared.ports import ProjectMemory

# New chunks embedded and written per group: big enough to batch the model
# well, small enough that a kill loses little work.
EMBED_FLUSH_CHUNKS = 256


@dataclass
class _PendingFile:
    record: FileRecord
    chunks: list[IndexedChunk]
    new: list[Chunk]


@dataclass
class SyncPlan:
    """What a sync would do: changed files, vanished files, chunks lacking vectors."""

    total_files: int
    started: float
    pending: list[_PendingFile] = field(default_factory=list)
    gone: list[str] = field(default_factory=list)
    failed_files: list[FileFailure] = field(default_factory=list)
    # Lines left out of files that were indexed without them (store/damage.py).
    damaged_lines: list[DamagedLine] = field(default_factory=list)
    missing_vectors: bool = False

    @property
    def idle(self) -> bool:
        return not (self.pending or self.gone or self.missing_vectors)

    @property
    def embedding_chars(self) -> int:
        """How many characters applying the plan would embed (context included)."""
        total = 0
        for item in self.pending:
            inputs = embedding_inputs(item.chunks)
            total += sum(len(inputs[chunk.chunk_hash]) for chunk in item.new)
        return total

    @property
    def sources(self) -> list[str]:
        """The files applying the plan writes or removes."""
        return [item.record.source for item in self.pending] + list(self.gone)

    def changed_since(self) -> list[str]:
        """The planned files that changed on disk after the plan read them.

        Another writer may have indexed the newer text meanwhile, and this
        plan's older one replaced it: such files still need an index run.
        """
        changed = []
        for item in self.pending:
            try:
                st = os.stat(item.record.source)
            except OSError:
                changed.append(item.record.source)
                continue
            if (st.st_mtime_ns, st.st_size) != (item.record.mtime_ns, item.record.size):
                changed.append(item.record.source)
        return changed


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


def embedding_inputs(chunks: Sequence[IndexedChunk]) -> dict[str, str]:
    """chunk hash -> embedder input: a note as it stands (its cleaned text).

    Journal and topic entries are written to be standalone; a neighbour's
    text would give an entry the neighbour's topic (ADR 0010).
    """
    return {item.chunk.chunk_hash: embedding_text_of(item.chunk.content) for item in chunks}


class Indexer:
    def __init__(
        self,
        store: Path,
        index: IndexBackend,
        model: str,
        get_embedder: Callable[[], Embedder | None],
        *,
        vectors_expected: bool = True,
    ) -> None:
        self.store = store
        self.index = index
        self.model = model
        # Called only when there is something to embed, so an index run over
        # an unchanged store never loads the model.
        self._get_embedder = get_embedder
        # False when the user chose lexical-only search: chunks without
        # vectors are then the intended state, not work left to do.
        self.vectors_expected = vectors_expected
        self._embedder_failed = False
        self.embedder_problem: str | None = None

    def _embedder(self) -> Embedder | None:
        return None if self._embedder_failed else self._get_embedder()

    def lexical_only(self) -> Indexer:
        """This indexer, storing chunks without vectors (for the lexical leg at once,
        while the model loads); a later run embeds them (``missing_vectors``)."""
        return Indexer(
            self.store, self.index, self.model, lambda: None, vectors_expected=self.vectors_expected
        )

    def plan(self, progress: Progress | None = None) -> SyncPlan:
        """Read what changed (cheap: a stat per file, a read per changed file)."""
        started = time.monotonic()
        # A store reached through a link nobody configured raises here,
        # before the index or its state file is touched.
        scan = scan_markdown_files(self.store)
        files = scan.files
        recorded = self.index.files()
        plan = SyncPlan(total_files=len(files), started=started)
        for link in scan.links:
            # Reported, not indexed: the user sees it in `memlane status`.
            problem = f"a symbolic link (to {link_target(link)}), not indexed; {LINK_HINT}"
            plan.failed_files.append(FileFailure(str(link), problem))
        for n, path in enumerate(files, 1):
            if progress:
                progress(n, len(files), "scanning")
            item = self._scan(path, recorded.get(str(path)), plan)
            if item is not None:
                plan.pending.append(item)
        plan.gone = sorted(set(recorded) - {str(p) for p in files})
        # A one-row probe: the full list of texts is only read when needed.
        plan.missing_vectors = self.vectors_expected and bool(self.index.missing_vectors(limit=1))
        return plan

    def plan_files(self, sources: Iterable[str]) -> SyncPlan:
        """``plan`` for just these files (the catch-up before a search): no
        walk of the store. A file that is gone leaves the index; a path the
        store walk would not list (``MEMORY.md``, a hidden or non-markdown
        file, one outside the store) is left out, as the walk leaves it out.
        """
        started = time.monotonic()
        recorded = self.index.files()
        chosen = sorted({name for name in map(self.walk_name, sources) if name is not None})
        plan = SyncPlan(total_files=len(chosen), started=started)
        for source in chosen:
            path = Path(source)
            if path.is_file():
                item = self._scan(path, recorded.get(source), plan)
                if item is not None:
                    plan.pending.append(item)
            elif source in recorded:
                plan.gone.append(source)
        return plan

    def walk_name(self, source: str) -> str | None:
        """*source* under the name the store walk lists it by (``walk_name``)."""
        return walk_name(self.store, source)

    def apply(
        self, plan: SyncPlan, operation: str = "index", progress: Progress | None = None
    ) -> IndexReport:
        report = IndexReport(
            operation=operation,
            total_files=plan.total_files,
            vectors_expected=self.vectors_expected,
        )
        report.failed_files.extend(plan.failed_files)
        report.add_damage(plan.damaged_lines)
        if plan.gone:
            self.index.remove_files(plan.gone)
            report.removed_files = len(plan.gone)
        self._write(plan.pending, report, progress)
        if plan.missing_vectors:
            self._fill_missing_vectors(report, progress)
        if report.embedded_chunks >= BULK_WRITE_VECTORS:
            # A bulk pass: the new vectors go into the index's search
            # structures now, not into the next search's time.
            self.index.prepare_search()
        elif report.indexed_files or report.removed_files or report.embedded_chunks:
            self.index.prepare_search(bulk=False)
        report.total_chunks = self.index.count()
        report.seconds = time.monotonic() - plan.started
        return report

    def sync(self, operation: str = "index", progress: Progress | None = None) -> IndexReport:
        return self.apply(self.plan(progress), operation, progress)

    def _scan(self, path: Path, known: FileRecord | None, plan: SyncPlan) -> _PendingFile | None:
        try:
            st = path.stat()
        except OSError as exc:
            plan.failed_files.append(FileFailure(str(path), exc.strerror or str(exc)))
            return None
        if known is not None and known.mtime_ns == st.st_mtime_ns and known.size == st.st_size:
            return None
        try:
            checked = read_markdown_checked(path, self.store)
        except StoreError as exc:
            plan.failed_files.append(FileFailure(str(path), exc.message))
            return None
        # A damaged line never costs the file its intact entries: it reads
        # as an empty line and is reported (ADR 0002).
        text = checked.text
        plan.damaged_lines.extend(checked.damaged)
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        record = FileRecord(str(path), st.st_mtime_ns, st.st_size, digest)
        chunks = chunk_markdown(text, str(path), self.model)
        described = describe_chunks(chunks, path, self.store)
        # Asked even for a file this index never recorded: on a shared
        # collection (Milvus) another tool may have embedded it already.
        stored = self.index.chunk_hashes(str(path))
        # Only chunks the index does not hold need embedding: one whose
        # neighbour changed gets its new BM25 context and keeps its vector.
        new = [c for c in chunks if c.chunk_hash not in stored]
        return _PendingFile(record, described, new)

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
        texts: dict[str, str] = {}
        for item in group:
            texts.update(embedding_inputs(item.chunks))
        vectors = self._embed(new, report, texts)
        written = 0
        for item in group:
            inserted = self.index.replace_file(item.record, item.chunks, vectors)
            report.indexed_chunks += inserted
            report.indexed_files += 1
            written += len(item.new)
        return written

    def _embed(
        self, chunks: Sequence[Chunk], report: IndexReport, inputs: Mapping[str, str]
    ) -> dict[str, np.ndarray]:
        if not chunks:
            return {}
        embedder = self._embedder()
        if embedder is None:
            report.unembedded_chunks += len(chunks)
            return {}
        texts = [inputs.get(c.chunk_hash) or c.embedding_text for c in chunks]
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
        embedder = self._embedder()
        if embedder is None:
            # Counts this run's unembedded inserts too: they are all missing.
            stats = self.index.stats()
            report.unembedded_chunks = int(stats["chunks"]) - int(stats["vectors"])
            return
        missing = self.index.missing_vectors()
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


def indexer_of(memory: ProjectMemory) -> Indexer:
    """An ``Indexer`` over *memory*'s store and this handle's index."""
    return Indexer(
        memory.scope.store,
        memory.index,
        memory.embedding.model,
        lambda: memory.embedding.embedder,
        vectors_expected=memory.config.embedding.provider != "none",
    )
