"""Which projects a cross-repo search covers, and where each one's store and index live.

The projects are the immediate children of each scan root that hold a
memory store; one seam, ``collection_for_project``, names a project's
collection for both the fan-out and ``project`` routing (recall/crossrepo.py
has the rules), so they cannot disagree.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from memlane.core.errors import (
    ConfigError,
)
from memlane.core.scope import (
    INDEX_STATE_FILENAME,
    MEMSEARCH_TREE,
    Scope,
    collection_name,
    is_collection_name,
    run_store_command,
    store_command,
)

if TYPE_CHECKING:
    from memlane.core.config import Config


SCAN_ROOTS_KEY = "cross_repo.scan_roots"
SCAN_ROOTS_ENV = "MEMLANE_SCAN_ROOTS"
SCAN_ROOTS_ENV_ALIAS = "PI_MEMSEARCH_SCAN_ROOTS"
STORE_DIRNAME = "memory"
STATE_SCHEMA_VERSION = 1

NO_SCAN_ROOTS_MESSAGE = (
    f'scope "all" needs scan roots: set {SCAN_ROOTS_ENV} (or {SCAN_ROOTS_ENV_ALIAS}, or '
    f"{SCAN_ROOTS_KEY} in config.toml) to a {os.pathsep!r}-separated list of directories "
    "whose immediate children are projects"
)


# -- discovery ---------------------------------------------------------------------


def scan_roots(config: Config, repository_dir: Path) -> list[Path]:
    """The configured scan roots, absolute; a ConfigError when none is set.

    A relative root resolves at the repository directory, like a relative
    ``$MEMSEARCH_DIR``, so the answer does not depend on the subdirectory a
    session started in.
    """
    raw = config.get(SCAN_ROOTS_KEY)
    parts = [p.strip() for p in str(raw or "").split(os.pathsep) if p.strip()]
    if not parts:
        raise ConfigError(NO_SCAN_ROOTS_MESSAGE, f"e.g. export {SCAN_ROOTS_ENV}=~/code")
    roots: list[Path] = []
    for part in parts:
        root = Path(part).expanduser()
        root = Path(os.path.abspath(root if root.is_absolute() else repository_dir / root))
        if root not in roots:
            roots.append(root)
    return roots


def is_project(directory: Path) -> bool:
    """A directory holding ``.memsearch/memory/`` or a bare ``memory/``.

    The bare shape is what ``$MEMSEARCH_DIR`` and the store command produce
    for a store outside the repos; it is accepted with or without a store
    command.
    """
    return (directory / MEMSEARCH_TREE / STORE_DIRNAME).is_dir() or (
        directory / STORE_DIRNAME
    ).is_dir()


def discover_projects(roots: list[Path]) -> list[Path]:
    """Every project among the immediate children of ``roots``, sorted.

    An unreadable or missing root is a configuration error naming it, not
    a silently smaller search.
    """
    found: list[Path] = []
    seen: set[str] = set()
    for root in roots:
        try:
            children = sorted(os.scandir(root), key=lambda e: e.name)
        except OSError as exc:
            raise ConfigError(
                f"cross-repo search cannot scan {root} (from {SCAN_ROOTS_ENV}): "
                f"{exc.strerror or exc}",
                f"fix or remove it in {SCAN_ROOTS_ENV}",
            ) from None
        for entry in children:
            if entry.name == MEMSEARCH_TREE:
                continue
            path = root / entry.name
            if path.is_dir() and is_project(path) and str(path) not in seen:
                seen.add(str(path))
                found.append(path)
    return sorted(found)


# -- the one seam: a project's collection ------------------------------------------


def same_dir(a: str | Path, b: str | Path) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def _recorded_in(path: Path) -> str | None:
    """The collection a state file records, or None when it records none.

    Missing, unreadable, non-JSON and drifted files (not an object, another
    schema version, no status, a collection that is not a collection name)
    record no name: one project's bad file must not fail a fan-out.
    """
    from memlane.index.state import load_state

    data = load_state(path)
    version = data.get("schema_version")
    if isinstance(version, bool) or version != STATE_SCHEMA_VERSION:
        return None
    if not isinstance(data.get("status"), str):
        return None
    name = data.get("collection")
    # Every name ends up in a file path (``<index dir>/<name>.sqlite``), so a
    # foreign state file must not be able to smuggle in "/" or "..".
    return name if isinstance(name, str) and is_collection_name(name) else None


def recorded_collection(project_dir: Path) -> str | None:
    """The name ``<dir>/.memsearch/.index-state.json``, else
    ``<dir>/.index-state.json`` records: where memsearch writes the file for
    each store shape. It is what the store was last indexed as, so it
    outranks the derivation."""
    for candidate in (
        project_dir / MEMSEARCH_TREE / INDEX_STATE_FILENAME,
        project_dir / INDEX_STATE_FILENAME,
    ):
        name = _recorded_in(candidate)
        if name is not None:
            return name
    return None


def default_store_dir(project_dir: Path) -> Path:
    """The store of a discovered project: ``.memsearch/memory`` when present,
    else a bare ``memory``, else where memsearch would create it."""
    tree = project_dir / MEMSEARCH_TREE / STORE_DIRNAME
    if tree.is_dir():
        return tree
    bare = project_dir / STORE_DIRNAME
    return bare if bare.is_dir() else tree


def collection_for_project(
    project_dir: str | Path,
    *,
    env: Mapping[str, str],
    session_scope: Scope,
) -> tuple[str, Path]:
    """(collection, store directory) of a project directory.

    The one seam shared by the fan-out and ``project`` routing. The session's
    ``$MEMSEARCH_DIR`` is never consulted: it names the session's own
    collection and nothing else. The store command, when set, answers for
    every other directory (run there, memoized) and its failures raise, as
    everywhere: there is no fallback from a configured store command.
    """
    directory = Path(project_dir)
    if same_dir(directory, session_scope.scope):
        return session_scope.collection, session_scope.store
    command = store_command(env)
    if command is not None:
        real = Path(os.path.realpath(directory))
        store_answer = run_store_command(command, "memory-dir", real)
        name = run_store_command(command, "collection", real)
        # Both answers are checked where they are read (core/scope.py).
        assert store_answer is not None and name is not None  # only state-dir declines
        return name, Path(store_answer)
    return (
        recorded_collection(directory) or collection_name(directory),
        default_store_dir(directory),
    )


def index_path_for(config: Config, collection: str) -> Path:
    """Where memlane's SQLite index of ``collection`` lives (as Memory.internals.index_path)."""
    from memlane.engine.index_backend import sqlite_index_path

    return sqlite_index_path(config.index, collection)
