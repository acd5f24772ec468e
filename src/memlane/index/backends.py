"""The notes-index backends a project may configure (``[index] backend``),
each described by one object (``SqliteBackend``, ``MilvusBackend``):
where its files go, how its notes index is opened, emptied for a rebuild
and purged after a forget, what the doctor reports of it, how ``memlane
migrate`` names it. The engine looks the description up by the configured
name (``backend_of``) and asks it; it never compares the name itself.

Nothing here imports a backend's module before it is used: the Milvus
client is an optional dependency, and the SQLite backend loads on first
use (cold start).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from memlane.core.errors import ConfigError
from memlane.core.paths import index_dir

if TYPE_CHECKING:
    from memlane.core.settings import IndexSettings
    from memlane.index.milvus.notes import MilvusIndex
    from memlane.index.protocol import NotesIndex

SQLITE = "sqlite"
MILVUS = "milvus"
#: memsearch's default Milvus Lite database, so both tools share one by default.
MILVUS_DEFAULT_URI = "~/.memsearch/milvus.db"
LEDGER_SUFFIX = ".milvus-ledger.sqlite"
_REMOTE_SCHEMES = ("http://", "https://", "tcp://", "unix:", "grpc://")

#: Whether a source (a path below the store) is one this project's indexer
#: keeps in step; the Milvus backend removes only those rows of a shared collection.
Owns = Callable[[str], bool]


def is_remote_uri(uri: str) -> bool:
    """A Milvus server or Zilliz Cloud URL, as opposed to a Milvus Lite path."""
    return uri.lower().startswith(_REMOTE_SCHEMES)


def milvus_uri(settings: IndexSettings) -> str:
    """The configured Milvus URI; a Lite path made absolute (``~`` expanded)."""
    uri = settings.uri or MILVUS_DEFAULT_URI
    if is_remote_uri(uri):
        return uri
    return os.path.abspath(os.path.expanduser(uri))


def ledger_path(settings: IndexSettings, collection: str, store: Path) -> Path:
    """The local cache of what this store indexed into ``collection`` at this
    URI (file records, chunks waiting for a vector), under memlane's index
    directory. One per store, collection and URI: two projects sharing one
    collection each remove only the files they indexed. Losing it costs a
    rescan, never data."""
    key = f"{milvus_uri(settings)}\n{os.path.realpath(store)}"
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:8]
    return index_dir() / f"{collection}-{digest}{LEDGER_SUFFIX}"


class Backend(Protocol):
    """One backend's answers to what the engine asks of any backend."""

    name: str
    #: What is wrong with this backend when no embedder is configured
    #: (``embedding.provider none``); None: it works lexically.
    without_embedder: str | None

    def files_dir(self, settings: IndexSettings) -> Path:
        """The directory of the project's SQLite files (the notes index when
        it is SQLite, and the sessions index on every backend)."""
        ...

    def location(self, settings: IndexSettings, collection: str, sqlite_path: Path) -> str:
        """Where ``collection`` lives under ``settings`` (two equal locations
        are one index); ``sqlite_path`` is the SQLite notes file it would be."""
        ...

    def open_notes(
        self, settings: IndexSettings, collection: str, store: Path, sqlite_path: Path, owns: Owns
    ) -> NotesIndex:
        """The project's notes index (opened lazily by the backend where it can:
        a Milvus server is not contacted before the first call)."""
        ...

    def open_other(
        self, settings: IndexSettings, collection: str, store: Path, sqlite_path: Path, owns: Owns
    ) -> NotesIndex | None:
        """Another project's notes index for reading (cross-repo recall); None
        when it was never indexed."""
        ...

    def reset(
        self,
        settings: IndexSettings,
        collection: str,
        store: Path,
        sqlite_path: Path,
        index: NotesIndex | None,
        owns: Owns,
    ) -> None:
        """Drop what the index holds of this project before a rebuild from
        markdown; ``index`` is the open notes index, if any (closed, or reused)."""
        ...

    def purge_deleted(self, index: NotesIndex, sqlite_path: Path, wait_s: float) -> list[str]:
        """Make deleted rows' text unrecoverable from the index after a forget;
        notices for what could not be done now."""
        ...

    def health(
        self, index: Callable[[], NotesIndex], collection: str, problem: str | None
    ) -> dict[str, Any]:
        """The backend's own health check for ``memlane status`` (empty when it
        has none); ``problem``: the index already failed so (not asked again)."""
        ...

    def reusable_token(self, current: IndexSettings, target_uri: str) -> str | None:
        """The token of ``current`` when ``target_uri`` is the same server (a
        migration keeps it); None otherwise."""
        ...

    def switch_commands(self, target: IndexSettings, token_ref: str | None) -> list[str]:
        """The ``memlane config set`` lines of ``index.uri`` (and ``index.token``)
        that point a project at ``target``."""
        ...


class SqliteBackend:
    """The default: one SQLite file per collection (index/sqlite/)."""

    name = SQLITE
    without_embedder: str | None = None

    @staticmethod
    def files_dir(settings: IndexSettings) -> Path:
        # ``index.uri`` names a directory only for the SQLite backend.
        return Path(settings.uri).expanduser() if settings.uri else index_dir()

    @staticmethod
    def location(settings: IndexSettings, collection: str, sqlite_path: Path) -> str:
        return str(sqlite_path)

    @staticmethod
    def open_notes(
        settings: IndexSettings, collection: str, store: Path, sqlite_path: Path, owns: Owns
    ) -> NotesIndex:
        from memlane.index.sqlite.notes import SqliteIndex

        return SqliteIndex(sqlite_path, settings)

    @staticmethod
    def open_other(
        settings: IndexSettings, collection: str, store: Path, sqlite_path: Path, owns: Owns
    ) -> NotesIndex | None:
        from memlane.index.sqlite.readonly import open_read_only

        return open_read_only(sqlite_path, settings)

    @staticmethod
    def reset(
        settings: IndexSettings,
        collection: str,
        store: Path,
        sqlite_path: Path,
        index: NotesIndex | None,
        owns: Owns,
    ) -> None:
        """The file is emptied in place (``SqliteIndex.destroy``)."""
        from memlane.index.sqlite.notes import SqliteIndex

        if index is not None:
            index.close()
        SqliteIndex.destroy(sqlite_path)

    @staticmethod
    def purge_deleted(index: NotesIndex, sqlite_path: Path, wait_s: float) -> list[str]:
        """The file and its WAL are compacted (``SqliteIndex.purge_deleted_text``)."""
        from memlane.index.sqlite.notes import SqliteIndex

        purge = SqliteIndex.purge_deleted_text(sqlite_path, checkpoint_wait_s=wait_s)
        if purge.error is not None:
            return [
                f"the index could not be compacted after the removal ({purge.error}); "
                "run `memlane reindex`"
            ]
        if purge.wal_busy:
            return [
                "another process is reading the index, so its write-ahead log still holds "
                "old pages until its next checkpoint; run `memlane reindex` to purge them now"
            ]
        return []

    @staticmethod
    def health(
        index: Callable[[], NotesIndex], collection: str, problem: str | None
    ) -> dict[str, Any]:
        return {}  # the file's state is the index stats themselves

    @staticmethod
    def reusable_token(current: IndexSettings, target_uri: str) -> str | None:
        return None

    @staticmethod
    def switch_commands(target: IndexSettings, token_ref: str | None) -> list[str]:
        if target.uri:
            return [f"memlane config set index.uri {target.uri}"]
        return ["memlane config set index.uri --unset"]


class MilvusBackend:
    """memsearch's Milvus collection: Milvus Lite, a server or Zilliz Cloud
    (index/milvus/, docs/milvus.md)."""

    name = MILVUS
    without_embedder: str | None = (
        "a Milvus collection stores a vector with every chunk, so with "
        "embedding.provider none no chunk reaches it and search finds nothing; set "
        "embedding.provider (the default, onnx, needs no network) or use index.backend sqlite"
    )

    @staticmethod
    def files_dir(settings: IndexSettings) -> Path:
        # ``index.uri`` is the Milvus URI: the SQLite files stay home.
        return index_dir()

    @staticmethod
    def location(settings: IndexSettings, collection: str, sqlite_path: Path) -> str:
        return milvus_uri(settings)

    @staticmethod
    def open_notes(
        settings: IndexSettings, collection: str, store: Path, sqlite_path: Path, owns: Owns
    ) -> MilvusIndex:
        from memlane.index.milvus.notes import MilvusIndex

        return MilvusIndex(
            milvus_uri(settings),
            collection,
            ledger_path(settings, collection, store),
            settings,
            token=settings.token,
            owns=owns,
        )

    def open_other(
        self, settings: IndexSettings, collection: str, store: Path, sqlite_path: Path, owns: Owns
    ) -> NotesIndex | None:
        """The collection at the same Milvus URI; None when it does not exist."""
        index = self.open_notes(settings, collection, store, sqlite_path, owns)
        if not index.health().get("exists"):
            index.close()
            return None
        return index

    def reset(
        self,
        settings: IndexSettings,
        collection: str,
        store: Path,
        sqlite_path: Path,
        index: NotesIndex | None,
        owns: Owns,
    ) -> None:
        """This store's rows go (and the local ledger); the collection stays,
        since other machines or memsearch may share it."""
        from memlane.index.milvus.notes import MilvusIndex

        milvus = (
            index
            if isinstance(index, MilvusIndex)
            else self.open_notes(settings, collection, store, sqlite_path, owns)
        )
        try:
            milvus.reset(str(store))
        finally:
            milvus.close()

    @staticmethod
    def purge_deleted(index: NotesIndex, sqlite_path: Path, wait_s: float) -> list[str]:
        """A compaction, where the server offers one."""
        from memlane.index.milvus.notes import MilvusIndex

        notice = index.purge_deleted() if isinstance(index, MilvusIndex) else None
        return [notice] if notice else []

    @staticmethod
    def health(
        index: Callable[[], NotesIndex], collection: str, problem: str | None
    ) -> dict[str, Any]:
        """Reachable, collection, rows (``MilvusIndex.health``)."""
        from memlane.index.milvus.notes import MilvusIndex

        opened = index()
        if problem:
            # Already said (and waited for) by stats(): a second try would only
            # wait out the same connect timeout or lock retries again.
            return {
                "backend": MILVUS,
                "uri": opened.uri,
                "collection": collection,
                "reachable": False,
                "exists": False,
                "rows": None,
                "dimension": None,
                "error": problem.removeprefix("index: "),
            }
        return opened.health() if isinstance(opened, MilvusIndex) else {}

    @staticmethod
    def reusable_token(current: IndexSettings, target_uri: str) -> str | None:
        from urllib.parse import urlsplit

        if not current.uri:
            return None
        a, b = urlsplit(current.uri), urlsplit(target_uri)
        same = bool(a.hostname) and (a.scheme, a.hostname, a.port) == (b.scheme, b.hostname, b.port)
        return current.token if same else None

    @staticmethod
    def switch_commands(target: IndexSettings, token_ref: str | None) -> list[str]:
        from memlane.index.milvus.connection import display_uri

        uri = milvus_uri(target)
        # A password in the URL is never printed: it belongs in index.token.
        shown = display_uri(uri) if uri.lower().startswith(("http://", "https://")) else uri
        commands = [f"memlane config set index.uri {shown}"]
        if token_ref:
            commands.append(f"memlane config set index.token {token_ref}")
        return commands


#: Every backend by its configured name.
BACKENDS: dict[str, Backend] = {SQLITE: SqliteBackend(), MILVUS: MilvusBackend()}


def backend_of(settings: IndexSettings) -> Backend:
    """The description of the configured backend; an unknown name is a ConfigError."""
    found = BACKENDS.get(settings.backend)
    if found is None:
        raise ConfigError(
            f"unknown index backend {settings.backend!r}",
            hint="set index.backend to " + " or ".join(BACKENDS),
        )
    return found
