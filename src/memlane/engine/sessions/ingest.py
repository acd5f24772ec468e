"""The sessions layer's ingestion: the project's agent transcripts, message by message.

pi-lcm-memory (its README) re-implemented on
memlane's own session store (``index/sqlite/sessions.py``), reading the
transcripts directly instead of pi-lcm's database:

- **sources**: pi's session files (``<agent dir>/sessions/--<cwd>--/*.jsonl``,
  or the flat ``$PI_CODING_AGENT_SESSION_DIR`` filtered by the header's cwd)
  and Claude Code's (``<claude dir>/projects/<cwd, non-alphanumerics as
  '-'>/*.jsonl``);
- **backfill**: every unread byte of every source, in batches of
  ``BATCH_SIZE`` documents: embed the batch, then one transaction stores its
  rows, their vectors and each file's new byte offset. A kill loses at most
  the batch in flight; the rerun starts at the stored offsets and finds the
  committed rows already there (no duplicate, no second embedding);
- **hook path**: ``SessionIndexer.index_new(path)`` only enqueues (the host's
  call returns at once); a worker thread reads the file from its stored
  offset;
- **sweep path**: ``Sweeper.tick()`` picks up files other sessions and
  agents wrote; its thread runs every ``sweep_interval_ms``, doubling while
  idle up to ``sweep_max_interval_ms``, back to the base on activity.

Discovery is transcripts/locate.py, one file's read engine/sessions/reader.py,
the hook worker indexer.py, the sweeper sweep.py; this module is the pass
that writes what they read.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlane.core.errors import EmbedderError
from memlane.core.regular_file import FileTooLargeError, NotRegularFileError, read_regular_file
from memlane.core.settings import SessionsSettings
from memlane.core.trace import trace
from memlane.engine.sessions.own_messages import may_hold_own_messages
from memlane.engine.sessions.reader import FileRead, read_source
from memlane.engine.sessions.registry import damage_notice
from memlane.index.protocol import BULK_WRITE_VECTORS
from memlane.index.session_docs import BatchWrite, SessionDoc, SourceState
from memlane.index.sqlite.sessions import SessionStore
from memlane.transcripts.jsonl import TRANSCRIPT_MAX_BYTES
from memlane.transcripts.locate import Source

if TYPE_CHECKING:
    from memlane.embed.base import Embedder
    from memlane.engine.shared.results import Progress


BATCH_SIZE = 32  # documents per transaction (pi-lcm-memory's batches of 32)
# Batches whose texts go to the embedder in one call: the bundled model then
# runs them concurrently on both cores (measured: 115 -> see bench_sessions).
EMBED_GROUP = 8
# Which rules made the stored documents: bumped when a rule leaves out or
# words differently what an earlier one stored (1: memlane's own tool calls,
# results and /recall prompts are not documents). A store made under older
# rules has its transcripts re-read once (engine/sessions/own_messages.py).
DOCS_RULES_VERSION = 1
META_DOCS_RULES = "docs.rules"


@dataclass
class BackfillReport:
    operation: str = "backfill"
    sources: int = 0
    files_read: int = 0
    files_rewritten: int = 0
    documents_added: int = 0
    embedded: int = 0
    garbage_lines: int = 0
    unknown_entries: int = 0
    batches: int = 0
    # Transcript bytes parsed by this pass (complete lines only).
    bytes_read: int = 0
    seconds: float = 0.0
    notices: list[str] = field(default_factory=list)

    @property
    def activity(self) -> bool:
        return bool(self.documents_added or self.files_rewritten or self.embedded)

    def to_json(self) -> dict[str, Any]:
        return {
            "operation": self.operation,
            "sources": self.sources,
            "files_read": self.files_read,
            "files_rewritten": self.files_rewritten,
            "documents_added": self.documents_added,
            "embedded": self.embedded,
            "garbage_lines": self.garbage_lines,
            "unknown_entries": self.unknown_entries,
            "batches": self.batches,
            "bytes_read": self.bytes_read,
            "seconds": round(self.seconds, 3),
            "notices": list(self.notices),
        }


class SessionIngestor:
    """Reads sources into the store, embedding in batches of ``BATCH_SIZE``.

    Thread-safe: one lock serialises passes (hook worker, sweeper, backfill
    in one process); other processes are serialised by SQLite and made
    harmless by the store's uniqueness.
    """

    def __init__(
        self,
        store: SessionStore,
        embedder: Embedder | None,
        settings: SessionsSettings,
        sources: Callable[[], list[Source]],
        *,
        model: str | None = None,
        batch_size: int = BATCH_SIZE,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.settings = settings
        self.scan = sources
        self.model = model or (embedder.name if embedder is not None else None)
        self.batch_size = max(1, batch_size)
        self._lock = store.ingest_lock
        self._model_bound = False
        self._bound_rebuilds = store.rebuilds
        self._rules_current = False  # the store's documents follow DOCS_RULES_VERSION
        self.notices: list[str] = []

    def _bind_model(self) -> None:
        # A recreated store has lost the model binding along with everything.
        if self._bound_rebuilds != self.store.rebuilds:
            self._model_bound = False
        if self._model_bound or self.embedder is None or self.model is None:
            return
        rebuilds = self.store.rebuilds
        if self.store.ensure_model(self.model, self.embedder.dimension):
            self.notices.append("embedding model changed: session vectors dropped, re-embedding")
        self._model_bound = True
        self._bound_rebuilds = rebuilds

    def _read(
        self, chosen: Sequence[Source], known: Mapping[str, SourceState], report: BackfillReport
    ) -> list[FileRead]:
        reads: list[FileRead] = []
        for source in chosen:
            read = read_source(source, known.get(str(source.path)), self.settings)
            if read is None:
                continue
            reads.append(read)
            report.files_read += 1
            report.bytes_read += read.parsed_bytes
            report.garbage_lines += read.garbage
            report.unknown_entries += read.unknown
            if read.replace:
                report.files_rewritten += 1
                trace("sessions", "rewrite", path=source.path, reason=read.reason)
        return reads

    def ingest(
        self,
        sources: Sequence[Source] | None = None,
        progress: Progress | None = None,
        *,
        operation: str = "backfill",
    ) -> BackfillReport:
        started = time.monotonic()
        with self._lock:
            chosen = list(self.scan() if sources is None else sources)
            for attempt in range(2):
                report = BackfillReport(operation=operation, sources=len(chosen))
                # Bound before reading: a changed model drops the old vectors,
                # and the pending pass below then re-embeds every document.
                self._bind_model()
                # Rows stored before redaction (an older memlane) are
                # rescanned once, before anything reads or embeds them.
                self.store.redact_stored()
                # A store recreated after damage (here or by another process)
                # has no sources rows: every transcript is read from byte 0.
                known = self.store.sources() if attempt == 0 else {}
                rebuilds = self.store.rebuilds
                reads = self._apply_rules(known, report) if attempt == 0 else []
                redone = {str(read.source.path) for read in reads}
                reads += self._read([s for s in chosen if str(s.path) not in redone], known, report)
                total = sum(len(r.docs) for r in reads)
                if reads:
                    trace("sessions", f"{operation}.start", files=len(reads), docs=total)
                self._write(reads, total, report, progress)
                if self.store.rebuilds == rebuilds:
                    break
                # Recreated in the middle of the pass: the batches committed
                # before went aside with the damaged file, while the fresh one
                # holds offsets past them. Read this pass's files again from
                # the start (rows already in the fresh file are kept: OR IGNORE).
                trace("sessions", f"{operation}.rebuilt", attempt=attempt)
            self._embed_pending(report, progress)
            if report.embedded >= BULK_WRITE_VECTORS:
                # A bulk pass (a backfill, a reindex): the new vectors go
                # into the index's search structures now, not into the next
                # search's time.
                self.store.prepare_search()
            elif report.activity:
                self.store.prepare_search(bulk=False)
            if not self._rules_current and self.store.rebuilds == rebuilds:
                self.store.set_meta({META_DOCS_RULES: DOCS_RULES_VERSION})
                self._rules_current = True
            if operation != "hook" and operation != "sweep" and report.activity:
                self.store.checkpoint()
            if sources is None and self.store.rebuilds == rebuilds:
                # Every transcript was read into the file as it is now.
                self.store.reread_since_rebuild = True
            report.notices.extend(self.notices)
            self.notices.clear()
            notice = damage_notice(self.store, pop=False)
            if notice is not None:
                report.notices.append(notice)
        report.seconds = time.monotonic() - started
        if report.activity:
            trace(
                "sessions",
                f"{operation}.done",
                added=report.documents_added,
                embedded=report.embedded,
                seconds=f"{report.seconds:.3f}",
            )
        return report

    def _apply_rules(
        self, known: Mapping[str, SourceState], report: BackfillReport
    ) -> list[FileRead]:
        """Bring a store made under older document rules up to the current ones.

        Once per store: every indexed transcript that may hold documents the
        current rules leave out (or word differently) is parsed again; those
        documents are removed and the file is read whole in this pass, so
        the rest keeps its rows and vectors (nothing is embedded twice).
        """
        if self._rules_current:
            return []
        if self.store.meta().get(META_DOCS_RULES) == DOCS_RULES_VERSION:
            self._rules_current = True
            return []
        reads: list[FileRead] = []
        for path, state in known.items():
            source = Source(Path(path), state.format)
            try:
                data = read_regular_file(
                    source.path, max_bytes=TRANSCRIPT_MAX_BYTES, what="transcript"
                )
                if not may_hold_own_messages(data):
                    continue
            except (OSError, NotRegularFileError, FileTooLargeError):
                continue  # a deleted transcript keeps its documents: history is history
            read = read_source(source, None, self.settings)
            if read is None:
                continue
            fresh = {doc.key: doc.text for _, doc in read.docs}
            stored = self.store.docs_of(path)
            stale = [doc.key for doc in stored if fresh.get(doc.key) != doc.text]
            # Missing documents too: a pass killed after its removal must
            # still read the file again to store their current wording.
            if not stale and fresh.keys() <= {doc.key for doc in stored}:
                continue
            self.store.remove_docs(stale)
            trace("sessions", "rules.reread", path=path, removed=len(stale))
            reads.append(read)
            report.files_read += 1
            report.bytes_read += read.parsed_bytes
        return reads

    def _batches(self, reads: Sequence[FileRead]) -> Iterator[BatchWrite]:
        """The pass cut into batches of ``batch_size`` documents, each with the
        progress of every file it touches (a kill after its commit resumes
        right after its last line)."""
        batch = BatchWrite()
        states: dict[str, SourceState] = {}
        for read in reads:
            path = str(read.source.path)
            if read.replace:
                batch.replace.add(path)
            for position, doc in read.docs:
                batch.docs.append(doc)
                states[path] = read.state_at(position)
                if len(batch.docs) >= self.batch_size:
                    batch.states = list(states.values())
                    yield batch
                    batch, states = BatchWrite(), {}
            states[path] = read.final
        batch.states = list(states.values())
        if batch.docs or batch.states or batch.replace:
            yield batch

    def _write(
        self,
        reads: Sequence[FileRead],
        total: int,
        report: BackfillReport,
        progress: Progress | None,
    ) -> None:
        replaced = {str(read.source.path) for read in reads if read.replace}
        done = 0
        pending = self._batches(reads)
        while True:
            # EMBED_GROUP batches share one embed call, so the embedder can run
            # its batches concurrently (one 32-text call keeps one core busy);
            # each batch still commits alone, so a kill costs one group at most.
            group = list(itertools.islice(pending, EMBED_GROUP))
            if not group:
                return
            docs = [doc for batch in group for doc in batch.docs]
            vectors = self._vectors(docs, replaced=replaced, report=report)
            for batch in group:
                batch.vectors = {d.key: vectors[d.key] for d in batch.docs if d.key in vectors}
                report.documents_added += self.store.commit(batch)
                report.batches += 1
                done += len(batch.docs)
                if progress is not None:
                    progress(done, total, "messages")

    def _vectors(
        self, docs: Sequence[SessionDoc], *, replaced: set[str], report: BackfillReport
    ) -> dict[str, Any]:
        if self.embedder is None:
            return {}
        wanted = [doc for doc in docs if doc.embed]
        if not wanted:
            return {}
        # A resumed pass re-reads rows a killed one already committed: those
        # keep their vectors (unless their file is being replaced wholesale).
        have = self.store.existing(doc.key for doc in wanted if doc.transcript not in replaced)
        todo = list({doc.key: doc for doc in wanted if not have.get(doc.key)}.values())
        if not todo:
            return {}
        try:
            self._bind_model()
            matrix = self.embedder.embed([doc.text for doc in todo])
        except EmbedderError as exc:
            # Rows are stored without vectors and embedded by a later pass.
            self.notices.append(f"embedding failed ({exc.message}); documents stored lexical-only")
            trace("sessions", "embed.error", error=exc.message)
            return {}
        report.embedded += len(todo)
        return {doc.key: matrix[i] for i, doc in enumerate(todo)}

    def _embed_pending(self, report: BackfillReport, progress: Progress | None) -> None:
        """Vectors for rows stored without one (embedder was off or failing)."""
        if self.embedder is None or any("embedding failed" in n for n in self.notices):
            return
        while True:
            pending = self.store.missing_vectors(self.batch_size)
            if not pending:
                return
            try:
                self._bind_model()
                matrix = self.embedder.embed([text for _, text in pending])
            except EmbedderError as exc:
                self.notices.append(f"embedding failed ({exc.message})")
                return
            self.store.set_vectors({key: matrix[i] for i, (key, _) in enumerate(pending)})
            report.embedded += len(pending)
            if progress is not None:
                progress(report.embedded, report.embedded + len(pending), "vectors")
