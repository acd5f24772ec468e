"""Where a project's notes index lives: a SQLite file (the default) or a
Milvus collection (``[index] backend = "milvus"``, docs/milvus.md).

The one place that reads ``index.backend``, ``index.uri``, ``index.token``
and ``index.collection``: the engine opens, resets and purges its notes index
through here, whatever the backend. The sessions index (raw transcripts of
this machine) stays a SQLite file next to where the SQLite notes index
would be, on either backend.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

from memlane.core.errors import ConfigError
from memlane.core.paths import index_dir

if TYPE_CHECKING:
    from memlane.core.scope import Scope
    from memlane.core.settings import IndexSettings
    from memlane.index.milvus.notes import MilvusIndex
    from memlane.index.protocol import NotesIndex

SQLITE = "sqlite"
MILVUS = "milvus"
BACKENDS = (SQLITE, MILVUS)
#: memsearch's default Milvus Lite database, so both tools share one by default.
MILVUS_DEFAULT_URI = "~/.memsearch/milvus.db"
LEDGER_SUFFIX = ".milvus-ledger.sqlite"
_REMOTE_SCHEMES = ("http://", "https://", "tcp://", "unix:", "grpc://")


def is_remote_uri(uri: str) -> bool:
    """A Milvus server or Zilliz Cloud URL, as opposed to a Milvus Lite path."""
    return uri.lower().startswith(_REMOTE_SCHEMES)


def state_uri(index_uri: str) -> str:
    """The backend URI as ``.index-state.json`` records it: a Milvus Lite
    database by its bare path, as memsearch writes it, so the field does not
    change form with whichever tool indexed last."""
    if not index_uri.startswith("milvus-lite:"):
        return index_uri  # SQLite, or a server URL (shown without credentials)
    from memlane.index.milvus.connection import LITE_SCHEME

    return index_uri.removeprefix(LITE_SCHEME)


def collection_of(scope: Scope, settings: IndexSettings) -> str:
    """The collection of this project: ``index.collection`` or the derived name."""
    return settings.collection or scope.collection


def sqlite_index_path(settings: IndexSettings, collection: str) -> Path:
    """The SQLite notes index of ``collection``; the sessions index sits beside it.

    ``index.uri`` names a directory only for the SQLite backend; under Milvus it
    is the Milvus URI and the SQLite files stay in memlane's index directory.
    """
    if settings.backend == SQLITE and settings.uri:
        return Path(settings.uri).expanduser() / f"{collection}.sqlite"
    return index_dir() / f"{collection}.sqlite"


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


def check_backend(settings: IndexSettings) -> None:
    if settings.backend not in BACKENDS:
        raise ConfigError(
            f"unknown index backend {settings.backend!r}",
            hint="set index.backend to sqlite or milvus",
        )


def open_notes_index(scope: Scope, settings: IndexSettings) -> NotesIndex:
    """The notes index of this project on the configured backend (opened lazily
    by the backend: a Milvus server is not contacted before the first call)."""
    check_backend(settings)
    collection = collection_of(scope, settings)
    if settings.backend == MILVUS:
        return _open_milvus(settings, collection, scope.store)
    from memlane.index.sqlite.notes import SqliteIndex

    return SqliteIndex(sqlite_index_path(settings, collection), settings)


def _open_milvus(settings: IndexSettings, collection: str, store: Path) -> MilvusIndex:
    from memlane.index.milvus.notes import MilvusIndex
    from memlane.store.layout import walk_name

    return MilvusIndex(
        milvus_uri(settings),
        collection,
        ledger_path(settings, collection, store),
        settings,
        token=settings.token,
        owns=lambda source: walk_name(store, source) is not None,
    )


def open_collection(settings: IndexSettings, collection: str, store: Path) -> MilvusIndex:
    """The Milvus collection of another project (cross-repo search reads it)."""
    return _open_milvus(settings, collection, store)


def reset_notes_index(scope: Scope, settings: IndexSettings, index: NotesIndex | None) -> None:
    """Drop what the index holds of this project before a rebuild from markdown.

    SQLite: the file goes. Milvus: this store's rows go (and the local
    ledger); the collection stays, since other machines or memsearch may
    share it. ``index`` is the open Milvus index, if any (reused).
    """
    check_backend(settings)
    collection = collection_of(scope, settings)
    if settings.backend == MILVUS:
        from memlane.index.milvus.notes import MilvusIndex

        milvus = (
            index
            if isinstance(index, MilvusIndex)
            else _open_milvus(settings, collection, scope.store)
        )
        try:
            milvus.reset(str(scope.store))
        finally:
            milvus.close()
        return
    from memlane.index.sqlite.notes import SqliteIndex

    if index is not None:
        index.close()
    SqliteIndex.destroy(sqlite_index_path(settings, collection))


# -- Milvus Lite in a long-lived process (index/milvus/connection.py's LITE) ---------


def hold_milvus_lite(seconds: float) -> None:
    """Keep every Milvus Lite database this process opens open for *seconds*
    after its last operation (the warm engine's ``engine.lite_hold_s``), so the
    searches of the sessions it serves never re-open it."""
    from memlane.index.milvus.connection import LITE

    LITE.hold(seconds)


def let_go_of_milvus_lite(uri: str) -> bool:
    """Another process asks for the Lite database at *uri*: released now (True),
    or as soon as the operation using it ends."""
    from memlane.index.milvus.connection import LITE, lite_path

    return LITE.let_go(lite_path(uri))


def release_milvus_lite() -> None:
    """Flush and close every Milvus Lite database this process holds (an exit)."""
    from memlane.index.milvus.connection import LITE

    LITE.release_all()


def milvus_lite_state() -> dict[str, object]:
    """The Lite databases open in this process, the servers started so far, the linger."""
    from memlane.index.milvus.connection import LITE

    return LITE.state()
