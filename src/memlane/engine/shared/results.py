"""Result types of engine operations that are not plain recall results.

``IndexReport`` (an index run), ``Status`` (the doctor's report as data),
``Progress`` (how a long operation says how far it got). The report as text
and rows is engine/reports.py.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from memlane.store.damage import DamagedLine

# How many damaged lines a report or status names one by one before it sums
# up the rest (a file in the wrong encoding can have thousands).
DAMAGE_SHOWN = 20
FIX_HINT = "`memlane status --fix` moves them into <file>.damaged"


class Progress(Protocol):
    """Told how far a long operation got; the CLI draws a bar from it."""

    def __call__(self, done: int, total: int, phase: str) -> None: ...


@dataclass
class FileFailure:
    path: str
    error: str

    def to_json(self) -> dict[str, str]:
        return {"path": self.path, "error": self.error}


@dataclass
class IndexReport:
    operation: str
    total_files: int = 0
    indexed_files: int = 0  # files whose content was (re)read and written to the index
    indexed_chunks: int = 0  # chunks newly inserted
    removed_files: int = 0
    embedded_chunks: int = 0
    unembedded_chunks: int = 0  # stored without a vector (no working embedder)
    total_chunks: int = 0
    seconds: float = 0.0
    failed_files: list[FileFailure] = field(default_factory=list)
    # Lines left out of files whose intact entries were indexed (store/damage.py).
    damaged_lines: list[DamagedLine] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    # False when the user chose lexical-only search (embedding.provider none):
    # chunks without vectors are then the intended state, not a degradation.
    vectors_expected: bool = True

    @property
    def status(self) -> str:
        if (
            self.failed_files
            or self.damaged_lines
            or (self.unembedded_chunks and self.vectors_expected)
        ):
            return "degraded"
        return "ok"

    def add_damage(self, damaged: Iterable[DamagedLine]) -> None:
        """Record damaged lines, with one notice per file saying what was kept."""
        by_file: dict[str, list[DamagedLine]] = {}
        for line in damaged:
            by_file.setdefault(line.path, []).append(line)
            self.damaged_lines.append(line)
        for path, lines in by_file.items():
            self.notices.append(
                f"{path}: indexed its intact entries without {len(lines)} damaged line(s) "
                f"({damage_lines_text(lines)}); `memlane status` lists them, {FIX_HINT}"
            )

    def to_json(self) -> dict[str, Any]:
        return {
            "operation": self.operation,
            "status": self.status,
            "total_files": self.total_files,
            "indexed_files": self.indexed_files,
            "indexed_chunks": self.indexed_chunks,
            "removed_files": self.removed_files,
            "embedded_chunks": self.embedded_chunks,
            "unembedded_chunks": self.unembedded_chunks,
            "total_chunks": self.total_chunks,
            "seconds": round(self.seconds, 3),
            "failed_files": [f.to_json() for f in self.failed_files],
            "damaged_lines": [line.to_json() for line in self.damaged_lines],
            "notices": list(self.notices),
        }


def damage_lines_text(lines: list[DamagedLine]) -> str:
    """``line 12, 40 and 41`` for lines of one file (capped at DAMAGE_SHOWN)."""
    numbers = [str(line.line) for line in lines[:DAMAGE_SHOWN]]
    more = len(lines) - len(numbers)
    if more:
        numbers.append(f"{more} more")
    label = "line" if len(lines) == 1 else "lines"
    if len(numbers) == 1:
        return f"{label} {numbers[0]}"
    return f"{label} {', '.join(numbers[:-1])} and {numbers[-1]}"


@dataclass
class Status:
    versions: dict[str, str]
    scope: dict[str, Any]
    backend: str
    index_uri: str
    model: str
    embedder: str  # "ready", "not loaded" or the reason it is unavailable
    chunks: int
    vectors: int
    files: int
    state_path: str | None
    state: dict[str, Any]
    notices: list[str] = field(default_factory=list)
    # What does not work and how to fix it, one line each.
    missing: list[str] = field(default_factory=list)
    # Settings that differ from the built-in defaults: key, value, layer.
    config: list[dict[str, str]] = field(default_factory=list)
    capture: dict[str, Any] = field(default_factory=dict)
    auto_context: dict[str, Any] = field(default_factory=dict)
    # Filled in by a live Session (sidecar, daemon): counters, queue, indexer.
    session: dict[str, Any] | None = None
    # Why no index-state file is ever written, when that is the case.
    state_note: str | None = None
    # The sessions layer's counts, when its index exists.
    sessions: dict[str, Any] | None = None
    # "store is a link to X (configured by ...)" when the user's setting is a link.
    store_link: str | None = None
    # Lines of store files left out of the index as damaged (store/damage.py).
    damaged: list[DamagedLine] = field(default_factory=list)
    # Today's LLM calls and tokens against llm.daily_* (llm/budget.py).
    llm_budget: dict[str, Any] | None = None
    # The topic memory at a glance (engine/topics/overview.py), when readable.
    topics: dict[str, Any] | None = None
    # Thin-client calls that failed open or were too slow (engine/warm_engine.py).
    hooks: dict[str, Any] | None = None
    # The warm engine of this home: running (pid, start, memory) or not.
    engine: dict[str, Any] = field(default_factory=dict)
    # Can the index backend be used right now: reachable, collection, rows, error.
    index_health: dict[str, Any] = field(default_factory=dict)
    # memlane in Claude Code for this project (hosts/claude_code/install.py
    # ``Installed``: scope, mode, folder trusted or not), filled in by the CLI.
    claude_code: dict[str, Any] | None = None
    # The embedding model's cosine scale behind the scores (engine/calibration).
    calibration: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "versions": self.versions,
            "scope": self.scope,
            "backend": self.backend,
            "index_uri": self.index_uri,
            "index_health": dict(self.index_health),
            "model": self.model,
            "embedder": self.embedder,
            "chunks": self.chunks,
            "vectors": self.vectors,
            "files": self.files,
            "index_state_path": self.state_path,
            "index_state": self.state,
            "index_state_note": self.state_note,
            "store_link": self.store_link,
            "sessions": self.sessions,
            "topics": self.topics,
            "missing": list(self.missing),
            "config": list(self.config),
            "capture": dict(self.capture),
            "llm_budget": self.llm_budget,
            "auto_context": dict(self.auto_context),
            "session": self.session,
            "hooks": self.hooks,
            "engine": self.engine,
            "claude_code": self.claude_code,
            "calibration": self.calibration,
            "damaged_lines": [line.to_json() for line in self.damaged],
            "notices": list(self.notices),
        }
