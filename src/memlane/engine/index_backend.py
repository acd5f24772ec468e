"""Where a project's notes index lives: a SQLite file (the default) or a
Milvus collection (``[index] backend = "milvus"``, docs/milvus.md).

The one place that reads ``index.backend``, ``index.uri``, ``index.token``
and ``index.collection``: the engine opens and resets its notes index
through here, whatever the backend; what differs between backends is their
description in index/backends.py (``backend_of``), never a comparison of
the backend's name here. The sessions index (raw transcripts of
this machine) stays a SQLite file next to where the SQLite notes index
would be, on either backend.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from memlane.core.paths import index_dir
from memlane.index.backends import BACKENDS, backend_of
from memlane.index.backends import MILVUS_DEFAULT_URI as MILVUS_DEFAULT_URI
from memlane.index.backends import is_remote_uri as is_remote_uri
from memlane.index.backends import ledger_path as ledger_path
from memlane.index.backends import milvus_uri as milvus_uri

if TYPE_CHECKING:
    from memlane.core.scope import Scope
    from memlane.core.settings import IndexSettings
    from memlane.index.protocol import NotesIndex


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
    described = BACKENDS.get(settings.backend)
    directory = described.files_dir(settings) if described is not None else index_dir()
    return directory / f"{collection}.sqlite"


def check_backend(settings: IndexSettings) -> None:
    """Refuse an unknown ``index.backend`` (a ConfigError saying which exist)."""
    backend_of(settings)


def owned_by(store: Path) -> Callable[[str], bool]:
    """Whether a source is a file the indexer of ``store`` keeps in step."""
    from memlane.store.layout import walk_name

    return lambda source: walk_name(store, source) is not None


def open_notes_index(scope: Scope, settings: IndexSettings) -> NotesIndex:
    """The notes index of this project on the configured backend (opened lazily
    by the backend: a Milvus server is not contacted before the first call)."""
    backend = backend_of(settings)
    collection = collection_of(scope, settings)
    path = sqlite_index_path(settings, collection)
    return backend.open_notes(settings, collection, scope.store, path, owned_by(scope.store))


def open_other_index(
    settings: IndexSettings, collection: str, store: Path, path: Path
) -> NotesIndex | None:
    """Another project's notes index for reading (cross-repo search), on the
    configured backend: its SQLite file at ``path`` read-only, or its
    collection at the same Milvus URI. None when it was never indexed."""
    backend = backend_of(settings)
    return backend.open_other(settings, collection, store, path, owned_by(store))


def same_place(
    current: IndexSettings, target: IndexSettings, current_collection: str, collection: str
) -> bool:
    """Whether two settings name one index (``memlane migrate`` refuses to copy
    an index onto itself)."""
    backend = backend_of(target)
    if backend_of(current) is not backend or current_collection != collection:
        return False
    here = backend.location(current, collection, sqlite_index_path(current, collection))
    there = backend.location(target, collection, sqlite_index_path(target, collection))
    return here == there


def reset_notes_index(scope: Scope, settings: IndexSettings, index: NotesIndex | None) -> None:
    """Drop what the index holds of this project before a rebuild from markdown.

    SQLite: the file is emptied. Milvus: this store's rows go (and the local
    ledger); the collection stays, since other machines or memsearch may
    share it. ``index`` is the open index, if any (closed, or reused).
    """
    backend = backend_of(settings)
    collection = collection_of(scope, settings)
    path = sqlite_index_path(settings, collection)
    backend.reset(settings, collection, scope.store, path, index, owned_by(scope.store))


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
