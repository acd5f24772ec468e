"""Result types of engine operations that are not plain recall results."""

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


def describe_damage(line: DamagedLine) -> str:
    """``path:line: why: "how it starts"`` for one damaged line."""
    return f'{line.where}: {line.reason}: "{line.preview}"'


def topic_rows(topics: dict[str, Any] | None) -> list[tuple[str, str]]:
    """pi-memory's status lines: on/off, directory, MEMORY.md, topic files, last dream."""
    if not topics:
        return []
    usage = topics.get("index_usage") or {}
    files = list(topics.get("topic_files") or [])
    return [
        (
            "topic memory",
            f"{'on' if topics.get('enabled') else 'off'} "
            f"(topics.enabled, from {topics.get('enabled_from')})",
        ),
        ("topic directory", str(topics.get("directory"))),
        (
            "MEMORY.md",
            f"{usage.get('lines', 0)}/{usage.get('max_lines', 0)} lines, "
            f"{usage.get('bytes', 0)}/{usage.get('max_bytes', 0)} bytes",
        ),
        (
            "topic files",
            f"{len(files)} ({topics.get('entries', 0)} entries)"
            + (": " + ", ".join(files) if files else ""),
        ),
        ("last dream", str(topics.get("last_dream") or "never")),
    ]


def health_line(health: dict[str, Any]) -> str:
    """``index health`` in the doctor's report: usable or not, and why."""
    if health.get("error"):
        return f"unavailable: {health['error']}"
    if not health.get("exists"):
        return "reachable; the collection is created by the first index run"
    rows = health.get("rows")
    dimension = health.get("dimension")
    parts = ["ok", f"collection {health.get('collection')}"]
    if rows is not None:
        parts.append(f"{rows} rows")
    if dimension:
        parts.append(f"dimension {dimension}")
    return ", ".join(parts)


def render_status(st: Status) -> str:
    """The doctor's text report, shared with the sidecar's memory_status."""
    rows = status_rows(st)
    width = max(len(r[0]) for r in rows)
    out = [f"{key:<{width}}  {value}" for key, value in rows]
    out += [f"missing: {text}" for text in st.missing]
    out += [f"note: {text}" for text in st.notices]
    if not st.missing:
        out.append("nothing missing")
    return "\n".join(out)


def calibration_line(calibration: dict[str, Any]) -> str:
    """What the search scores are calibrated for, in one line."""
    source = calibration.get("source")
    if source == "bundled":
        return "calibrated (the bundled model)"
    if source == "derived":
        return f"calibrated for this model (measured {calibration.get('measured_at')})"
    return "not calibrated for this model: run `memlane calibrate`"


def status_rows(st: Status) -> list[tuple[str, str]]:
    """The report's (label, value) rows, in order: what ``render_status``
    prints and the web viewer's Health page shows (``missing`` and
    ``notices`` are the Status's own fields)."""
    rows: list[tuple[str, str | None]] = [
        ("memlane", st.versions["memlane"]),
        ("python / sqlite", f"{st.versions['python']} / {st.versions['sqlite']}"),
        ("scope", st.scope["scope"]),
        *([("worktree", st.scope["worktree"]["reason"])] if st.scope.get("worktree") else []),
        *([("worktrees", _shared_by(st.scope))] if st.scope.get("shared_by") else []),
        ("store", st.scope["store"]),
        *([("store link", st.store_link)] if st.store_link else []),
        ("collection", st.scope["collection"]),
        ("backend", f"{st.backend} ({st.index_uri})"),
        *([("index health", health_line(st.index_health))] if st.index_health else []),
        ("model", f"{st.model} — embedder {st.embedder}"),
        *([("scores", calibration_line(st.calibration))] if st.calibration else []),
        ("chunks", f"{st.chunks} in {st.files} files, {st.vectors} with vectors"),
        ("index state", st.state_path or f"index: {st.state_note or 'no state file'}"),
        ("index status", str(st.state.get("status", "never indexed"))),
    ]
    if st.state.get("last_success_at"):
        rows.append(("last success", str(st.state["last_success_at"])))
    if st.state.get("last_error"):
        rows.append(("last error", str(st.state["last_error"])))
    for failure in st.state.get("failed_files") or []:
        rows.append(("failed file", f"{failure.get('path')}: {failure.get('error')}"))
    rows += [("damaged line", describe_damage(line)) for line in st.damaged[:DAMAGE_SHOWN]]
    if len(st.damaged) > DAMAGE_SHOWN:
        rows.append(
            ("damaged line", f"and {len(st.damaged) - DAMAGE_SHOWN} more (`--json` lists them all)")
        )
    rows += topic_rows(st.topics)
    capture = st.capture
    rows.append(("capture", "on" if capture.get("enabled") else "off (MEMLANE_CAPTURE=off)"))
    rows.append(("capture llm", str(capture.get("llm", ""))))
    if st.llm_budget is not None:
        from memlane.llm.budget import budget_line

        rows.append(("llm budget", budget_line(st.llm_budget)))
    if capture.get("journal"):
        from memlane.engine.journal.capture_recovery import status_line

        rows.append(("capture journal", status_line(capture["journal"])))
    from memlane.engine import warm_engine

    if st.engine:
        rows.append(("engine", warm_engine.engine_line(st.engine)))
    if st.hooks:
        rows.append(("client failures", warm_engine.status_line(st.hooks)))
    if st.claude_code:
        rows.append(("claude code", str(st.claude_code.get("line", ""))))
    ac = st.auto_context
    # In a session, the session's truth: auto-context turns itself off for
    # the session after too many deadline misses (engine/live/auto_context.py).
    given_up = (st.session or {}).get("auto_context", {}).get("disabled_reason")
    if ac.get("enabled") and given_up:
        rows.append(
            (
                "auto-context",
                f"off for this session: {given_up} "
                "(a new session starts it again; a slow embedder is the usual cause)",
            )
        )
    elif ac.get("enabled"):
        rows.append(
            (
                "auto-context",
                f"on: top {ac['top_k']}, score >= {ac['score_floor']}, "
                f"{ac['char_budget']} chars, {ac['cap_ms']} ms deadline",
            )
        )
    else:
        rows.append(("auto-context", "off (MEMLANE_AUTO_CONTEXT=on enables it)"))
    if st.session:
        counters = st.session.get("auto_context", {})
        rows.append(
            (
                "auto-context counts",
                ", ".join(
                    f"{name} {counters.get(name, 0)}"
                    for name in (
                        "injected",
                        "skippedBudget",
                        "skippedEmpty",
                        "skippedError",
                        "skippedWarming",
                        "lexicalWhileWarming",
                    )
                ),
            )
        )
        surf = st.session.get("surfacing", {})
        if surf.get("enabled"):
            rows.append(
                (
                    "topic surfacing",
                    f"{surf.get('injected', 0)} injected, {surf.get('skipped_empty', 0)} with "
                    f"nothing relevant, {surf.get('skipped_budget', 0)} past the deadline",
                )
            )
        recall = st.session.get("recall", {})
        if recall:
            rows.append(
                (
                    "auto-recall",
                    f"{recall.get('mode')}: {recall.get('injected', 0)} injected, "
                    f"{recall.get('skipped_empty', 0)} found nothing",
                )
            )
        extraction = st.session.get("extraction", {})
        if extraction.get("enabled"):
            rows.append(
                (
                    "extraction",
                    f"{extraction.get('written', 0)} topic entries written, "
                    f"{extraction.get('skipped', 0)} skipped, {extraction.get('failed', 0)} failed"
                    + (
                        f", {extraction['abandoned']} left undone at a session end"
                        if extraction.get("abandoned")
                        else ""
                    ),
                )
            )
        cap = st.session.get("capture", {})
        rows.append(
            (
                "captured",
                f"{cap.get('written', 0)} written, {cap.get('failed', 0)} failed, "
                f"{st.session.get('pending_captures', 0)} pending, "
                f"{cap.get('skipped_recall_only', 0)} only restated memory (not captured), "
                f"{cap.get('restated_dropped', 0)} restated sentences left out",
            )
        )
    if st.sessions:
        rows.append(
            (
                "sessions index",
                f"{st.sessions.get('documents', 0)} messages of "
                f"{st.sessions.get('sessions', 0)} sessions, "
                f"{st.sessions.get('embedded', 0)} embedded",
            )
        )
    if st.sessions and st.sessions.get("rebuilt"):
        rows.append(("sessions note", str(st.sessions["rebuilt"])))
    for item in st.config:
        rows.append(("config", f"{item['key']} = {item['value']}  [{item['layer']}]"))
    return [(label, str(value)) for label, value in rows]


def _shared_by(scope: dict[str, Any]) -> str:
    others = [p for p in scope["shared_by"] if p != scope["repository_dir"]]
    return f"this memory is shared with {len(others)} other checkout(s): {', '.join(others)}"
