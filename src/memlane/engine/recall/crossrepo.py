"""Cross-repo recall: ``memory_search`` with ``scope: "all"`` and the routing
of ``project`` for ``memory_expand`` / ``memory_transcript``.

Rules (pi-memsearch's runtime documentation, "Cross-repo recall"):

- Projects are the *immediate children* of each scan root
  (``cross_repo.scan_roots`` / ``$MEMLANE_SCAN_ROOTS`` /
  ``$PI_MEMSEARCH_SCAN_ROOTS``, ``os.pathsep``-separated) that hold
  ``.memsearch/memory/`` or ``memory/``. A root itself is never a project,
  as in pi-memsearch: a root like ``~/code`` holding a repo named ``memory``
  would otherwise count as a never-indexed project on every search. A child
  named ``.memsearch`` is a store tree, never a project.
- One seam, ``collection_for_project``, names a project's collection for
  both the fan-out and ``project`` routing, so they cannot disagree: the
  session's own scope reuses the session's collection; otherwise the store
  command (run in that directory), else the name the project's
  ``.index-state.json`` records, else memsearch's derivation over the
  directory itself (no git walk, no ``$MEMSEARCH_DIR``: applying the
  session's override to a foreign directory collapsed every fan-out into one
  search, pi-memsearch #95).
- The current project is searched first; reaching it again under a scan root
  is deduplicated silently. Distinct directories resolving to one collection
  are collapsed (the first searched, the rest listed). A project without an
  index file is skipped and counted, never created.
- Read-side only: every index is opened read-only, in this process
  (``file:...?mode=ro``), so a fan-out costs one process and can never
  write a store or an index. The query is embedded once; a project indexed
  in another vector space is searched lexically, with a notice.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from memlane.core.errors import (
    EmbedderError,
    MemlaneError,
    NotFoundError,
)
from memlane.core.scope import (
    Scope,
)
from memlane.core.settings import SEARCH_TOP_K
from memlane.core.types import Hit, Kind, SearchMode, SearchResult, Section
from memlane.core.untrusted import excerpt, path_problem
from memlane.engine.recall.projects import (
    collection_for_project,
    discover_projects,
    index_path_for,
    same_dir,
    scan_roots,
)
from memlane.index.sqlite.readonly import IndexUnreadable
from memlane.index.sqlite.readonly import open_read_only as open_read_only

if TYPE_CHECKING:
    from memlane.core.config import Config
    from memlane.engine.shared.ports import ProjectMemory
    from memlane.index.protocol import NotesIndex

    #: Another project's notes index, opened to read.
    ProjectIndex = NotesIndex


# -- another project's index ----------------------------------------------------------


def open_project_index(
    config: Config, collection: str, store_dir: Path, path: Path
) -> ProjectIndex | None:
    """Another project's notes index for reading, on the configured backend:
    its SQLite file at ``path`` read-only (``open_read_only``), or its
    collection at the same Milvus URI. None when it was never indexed."""
    from memlane.engine.index_backend import open_other_index

    return open_other_index(config.index, collection, store_dir, path)


# -- fan-out ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ProjectTarget:
    """One leg of a fan-out: a project directory and where its index lives."""

    label: str  # absolute project directory, as hits are labeled
    collection: str
    store_dir: Path
    index_path: Path
    current: bool = False


@dataclass
class FanOutResult:
    """A cross-repo search: merged hits and the accounting of every project."""

    query: str
    mode: SearchMode
    hits: list[Hit]
    searched: list[str] = field(default_factory=list)
    skipped_never_indexed: list[str] = field(default_factory=list)
    collapsed: list[tuple[str, list[str]]] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)  # (project, why)
    notices: list[str] = field(default_factory=list)
    min_score: float = 0.0
    below_min_score: int = 0

    def fail(self, project: str, why: str) -> None:
        self.failed.append((project, why))
        self.notices.append(f"{project}: {why}")

    @property
    def projects(self) -> int:
        """Distinct project directories considered (after silent dedup)."""
        return (
            len(self.searched)
            + len(self.skipped_never_indexed)
            + len(self.failed)
            + sum(len(rest) for _, rest in self.collapsed)
        )

    @property
    def accounting(self) -> str:
        n = self.projects
        parts = [f"{len(self.skipped_never_indexed)} never indexed, skipped"]
        for kept, rest in self.collapsed:
            paths = ", ".join([kept, *rest])
            parts.append(f"{1 + len(rest)} resolved to one collection: {paths}")
        if self.failed:
            parts.append(f"{len(self.failed)} could not be searched")
        noun = "project" if n == 1 else "projects"
        return f"searched {n} {noun} ({'; '.join(parts)})"

    def to_search_result(self) -> SearchResult:
        """The hits as a plain SearchResult (each hit keeps its project)."""
        return SearchResult(
            query=self.query,
            mode=self.mode,
            hits=list(self.hits),
            notices=[*self.notices, self.accounting],
            min_score=self.min_score,
            below_min_score=self.below_min_score,
        )

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "scope": "all",
            "mode": self.mode,
            "hits": [h.to_json() for h in self.hits],
            "accounting": self.accounting,
            "projects": self.projects,
            "searched": list(self.searched),
            "skipped_never_indexed": {
                "count": len(self.skipped_never_indexed),
                "projects": list(self.skipped_never_indexed),
            },
            "collapsed": [{"kept": kept, "collapsed": list(rest)} for kept, rest in self.collapsed],
        }
        if self.min_score > 0:
            data["min_score"] = self.min_score
            data["below_min_score"] = self.below_min_score
        if self.failed:
            data["failed"] = [{"project": p, "error": e} for p, e in self.failed]
        if self.notices:
            data["notices"] = list(self.notices)
        return data


def plan_targets(
    mem: ProjectMemory, env: Mapping[str, str] | None = None
) -> tuple[list[ProjectTarget], list[tuple[str, list[str]]]]:
    """The legs of a fan-out (current project first) and the collapsed groups."""
    env = os.environ if env is None else env
    roots = scan_roots(mem.config, mem.scope.repository_dir)
    session = mem.scope
    candidates = [str(session.scope), *(str(p) for p in discover_projects(roots))]
    seen_dirs: set[str] = set()
    by_collection: dict[str, ProjectTarget] = {}
    collapsed: dict[str, list[str]] = {}
    targets: list[ProjectTarget] = []
    for label in candidates:
        real = os.path.realpath(label)
        if real in seen_dirs:
            continue  # the same directory reached twice: silent
        seen_dirs.add(real)
        collection, store_dir = collection_for_project(label, env=env, session_scope=session)
        if collection in by_collection:
            collapsed.setdefault(by_collection[collection].label, []).append(label)
            continue
        target = ProjectTarget(
            label=label,
            collection=collection,
            store_dir=store_dir,
            index_path=index_path_for(mem.config, collection),
            current=same_dir(label, session.scope),
        )
        by_collection[collection] = target
        targets.append(target)
    return targets, list(collapsed.items())


def search_all(
    mem: ProjectMemory,
    query: str,
    k: int | None = None,
    *,
    kind: Kind | None = None,
    after: str | None = None,
    before: str | None = None,
    session: str | None = None,
    mode: SearchMode = "hybrid",
    env: Mapping[str, str] | None = None,
    min_score: float | None = None,
) -> FanOutResult:
    """``scope: "all"``: one read-only search per project, merged by score.

    ``after``/``before`` are the notes' keys (``SearchRequest.note_bounds``).
    ``k`` hits overall (default ``search.top_k``); each project is asked
    for ``k`` so the merge can take all of them from one project. Scores are
    calibrated relevance (index/legs/relevance.py), so projects merge on one
    scale; hits below ``min_score`` (default ``search.min_score``) are left out.
    """
    from memlane.embed.factory import vector_space
    from memlane.index.protocol import SearchFilters

    # k, mode and the bounds were checked by the router (recall/router.py).
    if k is None:
        k = mem.config.session.search_top_k or SEARCH_TOP_K
    floor = mem.internals.min_score(min_score)
    targets, collapsed = plan_targets(mem, env)
    result = FanOutResult(query=query, mode="lexical", hits=[], collapsed=collapsed)
    result.min_score = floor
    filters = SearchFilters(kind=kind, after=after, before=before, session=session)
    space = vector_space(mem.config.embedding)
    vector: np.ndarray | None = None
    embedded = False
    scored: list[tuple[float, int, Hit]] = []
    # One foreign index's trouble costs that project, never the fan-out.
    leg_errors = (MemlaneError, sqlite3.Error)
    for order, target in enumerate(targets):
        try:
            index = open_project_index(
                mem.config, target.collection, target.store_dir, target.index_path
            )
        except leg_errors as exc:
            result.fail(target.label, _problem(exc))
            continue
        if index is None:
            result.skipped_never_indexed.append(target.label)
            continue
        try:
            if not embedded:
                # Once, and only when some project has an index to search.
                vector = _embed_query(mem, query, mode, result.notices)
                embedded = True
                result.mode = "semantic" if mode == "semantic" else _mode_of(vector)
            leg_vector = _vector_for(index, target, vector, space, mode, result.notices)
            if mode == "semantic" and leg_vector is None:
                # _vector_for already said why in a notice.
                result.failed.append((target.label, "no vectors in this model's space"))
                continue
            _, found = index.search(query, leg_vector, k, filters, lexical=mode != "semantic")
        except EmbedderError:
            raise  # the session's embedder, not this project: semantic mode fails loudly
        except leg_errors as exc:
            result.fail(target.label, _problem(exc))
            continue
        finally:
            index.close()
        result.searched.append(target.label)
        for rank, item in enumerate(found):
            if item.score < floor:
                result.below_min_score += 1
                continue
            hit = Hit.of(item.chunk, item.score, project=target.label)
            scored.append((item.score, order * 1_000_000 + rank, hit))
    # Ties keep fan-out order (current project first), then each project's rank.
    scored.sort(key=lambda row: (-row[0], row[1]))
    result.hits = [hit for _, _, hit in scored[:k]]
    return result


def _problem(exc: BaseException) -> str:
    return exc.message if isinstance(exc, MemlaneError) else f"cannot read its index: {exc}"


def _mode_of(vector: np.ndarray | None) -> SearchMode:
    return "hybrid" if vector is not None else "lexical"


def _embed_query(
    mem: ProjectMemory, query: str, mode: SearchMode, notices: list[str]
) -> np.ndarray | None:
    """The query vector (once per fan-out), or None for a lexical search."""
    vector = mem.embedding.query_vector(query, mode, notices)
    return None if vector is None else np.asarray(vector, dtype=np.float32).reshape(-1)


def _vector_for(
    index: ProjectIndex,
    target: ProjectTarget,
    vector: np.ndarray | None,
    space: str,
    mode: SearchMode,
    notices: list[str],
) -> np.ndarray | None:
    """The query vector when this project's vectors share its space, else None.

    Another model (or dimension) means another vector space: cosine against
    it would be noise, so that project is searched lexically and says so.
    """
    if vector is None:
        return None
    model, dimension = index.vector_space()
    if dimension is None:
        notices.append(f"{target.label} has no vectors; searched lexically (BM25)")
        return None
    if model != space or dimension != vector.size:
        verb = "skipped" if mode == "semantic" else "searched lexically (BM25)"
        notices.append(
            f"{target.label} was indexed with another embedding model ({model}, "
            f"{dimension} dimensions); {verb}"
        )
        return None
    return vector


# -- routing ``project`` (memory_expand, memory_transcript) ---------------------------


def check_project_label(project: str) -> None:
    """Refuse, in one line, a ``project`` label no directory can have (a NUL
    byte: a tool argument can carry one, and ``realpath`` raises on it)."""
    problem = path_problem(project, control_characters=True)
    if problem is not None:
        raise NotFoundError(
            f"project {excerpt(project)} {problem}",
            "pass the project a cross-repo hit was labeled with, verbatim",
        )


def resolve_project(
    mem: ProjectMemory, project: str, *, env: Mapping[str, str] | None = None
) -> tuple[str, Path, Path]:
    """(collection, store directory, index path) for a hit's ``project`` label.

    The label is taken verbatim: it is always a project directory, so no git
    walk runs; a path inside a repo names that subdirectory's own collection
    (and finds nothing). An origin equal to the session's scope reuses the
    session's collection, exactly as the fan-out's current-project leg does.
    """
    env = os.environ if env is None else env
    check_project_label(project)
    text = project.strip()
    if not text or not os.path.isabs(os.path.expanduser(text)):
        raise NotFoundError(
            f"project {project!r} is not an absolute path",
            "pass the project a cross-repo hit was labeled with, verbatim",
        )
    directory = Path(os.path.expanduser(text))
    if not directory.is_dir():
        raise NotFoundError(
            f"project directory not found: {directory}",
            "pass the project a cross-repo hit was labeled with, verbatim",
        )
    collection, store_dir = collection_for_project(directory, env=env, session_scope=mem.scope)
    return collection, store_dir, index_path_for(mem.config, collection)


def expand_in_project(
    mem: ProjectMemory, chunk_hash: str, project: str, *, env: Mapping[str, str] | None = None
) -> Section:
    """L2 recall of a cross-repo hit: ``memory_expand`` with ``project``.

    Read-only, through the same seam as the fan-out. The section's anchor
    carries the transcript path, so L3 follows across projects too.
    """
    from memlane.engine.recall.expand import expand_section

    collection, store_dir, path = resolve_project(mem, project, env=env)
    try:
        index = open_project_index(mem.config, collection, store_dir, path)
    except IndexUnreadable as exc:
        raise NotFoundError(f"project {project}: {exc.message}") from None
    if index is None:
        raise NotFoundError(
            f"project {project} has no index (collection {collection} was never indexed)",
            "pass the project label of a cross-repo hit verbatim; a subdirectory of a "
            "project names its own, empty collection",
        )
    directory = Path(os.path.expanduser(project.strip()))
    scope = Scope(
        cwd=directory,
        repository_dir=directory,
        scope=directory,
        store=store_dir,
        collection=collection,
        state_dir=None,
    )
    # Expansion over the read-only index is expand's own code (hash check,
    # section extraction, anchor), never a copy of it.
    try:
        return expand_section(index, scope, chunk_hash, mem.notices)
    finally:
        index.close()
