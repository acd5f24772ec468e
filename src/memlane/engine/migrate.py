"""``memlane migrate --to URI``: copy a project's notes index to another backend.

The target is filled the way any index is, from the markdown store (the
source of truth), so it ends up exactly as a fresh index of the store
would; the vectors come from the current index whenever it was embedded with
the model the target is bound to (a chunk's text then has the same vector),
and only the rest is embedded, with a progress bar. The current index and
the configuration are left as they are: switching over is the user's
``memlane config set``, printed at the end.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memlane.core.errors import ConfigError
from memlane.core.types import embedding_text_of
from memlane.index.backends import MILVUS, SQLITE, backend_of

if TYPE_CHECKING:
    import numpy as np

    from memlane.core.settings import IndexSettings
    from memlane.embed.base import Embedder, Vectors
    from memlane.engine.shared.ports import ProjectMemory
    from memlane.engine.shared.results import Progress
    from memlane.index.protocol import NotesIndex

SQLITE_PREFIXES = ("sqlite://", "sqlite:")


@dataclass
class MigrationReport:
    source_uri: str
    target_uri: str
    target_backend: str
    collection: str
    model_matched: bool
    files: int = 0
    chunks: int = 0  # rows in the target collection afterwards (shared: everyone's)
    reused: int = 0  # vectors copied from the current index
    embedded: int = 0  # vectors computed by the embedder
    unembedded: int = 0  # chunks stored without a vector (no working embedder)
    seconds: float = 0.0
    notices: list[str] = field(default_factory=list)
    switch: list[str] = field(default_factory=list)  # the commands that make it current

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def target_settings(
    current: IndexSettings,
    to: str,
    *,
    collection: str | None = None,
    token: str | None = None,
) -> IndexSettings:
    """The index settings of ``--to``: ``sqlite`` or ``sqlite:DIR`` for the
    SQLite backend, anything else (a Milvus Lite path, an http(s) URL) Milvus."""
    text = to.strip()
    if not text:
        raise ConfigError(
            "--to is empty", hint="give sqlite, sqlite:DIR, a Milvus Lite path or URL"
        )
    if text.lower() == "sqlite" or text.lower().startswith(SQLITE_PREFIXES):
        directory = text.split(":", 1)[1].removeprefix("//") if ":" in text else ""
        return dataclasses.replace(
            current, backend=SQLITE, uri=directory or None, collection=collection, token=None
        )
    if token is None:
        # The same server: its token, never another's.
        token = backend_of(current).reusable_token(current, text)
    return dataclasses.replace(
        current,
        backend=MILVUS,
        uri=text,
        collection=collection or current.collection,
        token=token,
    )


class ReusedVectors:
    """An embedder that answers from the current index's vectors where it has
    them (keyed by the exact embedding text) and embeds only the rest."""

    def __init__(self, known: dict[bytes, np.ndarray], fallback: Callable[[], Embedder | None]):
        self._known = known
        self._fallback = fallback
        self.reused = 0
        self.embedded = 0

    @staticmethod
    def key(text: str) -> bytes:
        return hashlib.sha1(text.encode("utf-8"), usedforsecurity=False).digest()

    @property
    def name(self) -> str:
        embedder = self._fallback()
        return embedder.name if embedder is not None else ""

    @property
    def dimension(self) -> int | None:
        for vector in self._known.values():
            return int(vector.shape[-1])
        embedder = self._fallback()
        return embedder.dimension if embedder is not None else None

    def embed(self, texts: Sequence[str]) -> Vectors:
        import numpy as np

        found = [self._known.get(self.key(text)) for text in texts]
        missing = [i for i, vector in enumerate(found) if vector is None]
        fresh: Vectors | None = None
        if missing:
            embedder = self._fallback()
            if embedder is None:
                from memlane.core.errors import EmbedderError

                raise EmbedderError("no embedder is available for the chunks without a vector")
            fresh = embedder.embed([texts[i] for i in missing])
            self.embedded += len(missing)
        self.reused += len(texts) - len(missing)
        rows: list[np.ndarray] = []
        fresh_row = iter(range(len(missing)))
        for vector in found:
            if vector is None:
                assert fresh is not None
                rows.append(fresh[next(fresh_row)])
            else:
                rows.append(vector)
        if not rows:
            from memlane.embed.base import empty_vectors

            return empty_vectors(self.dimension)
        matrix: Vectors = np.vstack(rows).astype(np.float32, copy=False)
        return matrix

    def embed_query(self, text: str) -> Vectors:
        row: Vectors = self.embed([text])[0]
        return row


def _known_vectors(source: NotesIndex) -> dict[bytes, np.ndarray]:
    known: dict[bytes, np.ndarray] = {}
    for batch in source.export():
        for item, vector in batch:
            if vector is not None:
                known[ReusedVectors.key(embedding_text_of(item.chunk.content))] = vector
    return known


def migrate(
    memory: ProjectMemory, target: IndexSettings, progress: Progress | None = None
) -> MigrationReport:
    """Fill the index ``target`` describes from this project's store (module docstring)."""
    from memlane.embed.factory import vector_space
    from memlane.engine.index_backend import collection_of, open_notes_index, same_place
    from memlane.engine.journal.indexer import Indexer

    memory.internals.require_store()
    started = time.monotonic()
    current = memory.config.index
    collection = collection_of(memory.scope, target)
    if same_place(current, target, memory.collection, collection):
        raise ConfigError(
            f"the project's index already is {memory.index.uri}",
            hint="give --to another backend or location",
        )
    space = vector_space(memory.config.embedding)
    source = memory.index
    source_model = source.stats().get("model")
    matched = source_model == space
    known = _known_vectors(source) if matched else {}
    memory.close()  # a Milvus Lite source and target may be one database
    destination = open_notes_index(memory.scope, target)
    report = MigrationReport(
        source_uri=source.uri,
        target_uri=destination.uri,
        target_backend=target.backend,
        collection=collection,
        model_matched=matched,
    )
    if not matched and source_model:
        report.notices.append(
            f"the current index was embedded with {source_model}, not {space}: "
            "every chunk is embedded again"
        )
    try:
        destination.ensure_model(space, None)
        embedder = ReusedVectors(known, lambda: memory.embedding.embedder)
        indexer = Indexer(
            memory.scope.store,
            destination,
            memory.embedding.model,
            lambda: embedder,
            vectors_expected=memory.config.embedding.provider != "none",
        )
        result = indexer.sync("migrate", progress)
        report.files = result.indexed_files
        report.chunks = result.total_chunks
        report.reused = embedder.reused
        report.embedded = embedder.embedded
        report.unembedded = result.unembedded_chunks
        report.notices.extend(result.notices)
        report.notices.extend(f"skipped {f.path}: {f.error}" for f in result.failed_files)
    finally:
        destination.close()
    report.switch = switch_commands(target)
    report.seconds = time.monotonic() - started
    return report


def switch_commands(target: IndexSettings, token_ref: str | None = None) -> list[str]:
    """The ``memlane config set`` lines that make ``target`` the project's index."""
    commands = [f"memlane config set index.backend {target.backend}"]
    commands.extend(backend_of(target).switch_commands(target, token_ref))
    if target.collection:
        commands.append(f"memlane config set index.collection {target.collection}")
    return commands
