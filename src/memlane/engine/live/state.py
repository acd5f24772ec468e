"""What a session reports: results of its events and the counters of each feature.

Plain dataclasses with ``to_json()``, shared by the sidecar, MCP and status.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Injection:
    """What a host adds before the agent runs: system-prompt append and message."""

    system_append: str
    message: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "system_append": self.system_append,
            "message": {"content": self.message} if self.message else None,
        }


@dataclass(frozen=True)
class Queued:
    queued: bool
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"queued": self.queued}
        if self.reason:
            out["reason"] = self.reason
        return out


@dataclass(frozen=True)
class Flush:
    flushed: bool
    pending: int

    def to_json(self) -> dict[str, Any]:
        return {"flushed": self.flushed, "pending": self.pending}


@dataclass
class AutoContextState:
    """Auto-context outcomes, named as the reference names them."""

    enabled: bool
    injected: int = 0
    # Counter names as the reference names them.
    skippedBudget: int = 0
    skippedEmpty: int = 0
    skippedError: int = 0
    # The embedder was still loading and the lexical answer missed the deadline too.
    skippedWarming: int = 0
    # Prompts answered from the lexical leg alone while the embedder loaded
    # (also counted as injected or skippedEmpty).
    lexicalWhileWarming: int = 0
    consecutive_misses: int = 0
    respawns: int = 0
    disabled_reason: str | None = None
    last_ms: float | None = None

    @property
    def active(self) -> bool:
        return self.enabled and self.disabled_reason is None

    def to_json(self) -> dict[str, Any]:
        return {
            "enabled": self.enabled,
            "active": self.active,
            "injected": self.injected,
            "skippedBudget": self.skippedBudget,
            "skippedEmpty": self.skippedEmpty,
            "skippedError": self.skippedError,
            "skippedWarming": self.skippedWarming,
            "lexicalWhileWarming": self.lexicalWhileWarming,
            "consecutive_misses": self.consecutive_misses,
            "respawns": self.respawns,
            "disabled_reason": self.disabled_reason,
            "last_ms": None if self.last_ms is None else round(self.last_ms, 2),
        }


@dataclass
class SurfacingState:
    """Topic auto-surfacing outcomes (pi-memory's per-prompt topic injection)."""

    enabled: bool
    injected: int = 0
    skipped_empty: int = 0
    skipped_budget: int = 0
    skipped_error: int = 0
    lexical_while_warming: int = 0  # chosen from the lexical leg: the model was loading
    topics: list[str] = field(default_factory=list)  # injected this session, in order

    def to_json(self) -> dict[str, Any]:
        return {
            "enabled": self.enabled,
            "injected": self.injected,
            "skipped_empty": self.skipped_empty,
            "skipped_budget": self.skipped_budget,
            "skipped_error": self.skipped_error,
            "lexical_while_warming": self.lexical_while_warming,
            "topics": list(self.topics),
        }


@dataclass
class RecallState:
    """Heuristic auto-recall from the sessions layer (pi-lcm-memory's autoRecall)."""

    mode: str
    injected: int = 0
    skipped_empty: int = 0
    skipped_budget: int = 0
    skipped_error: int = 0
    lexical_while_warming: int = 0  # searched lexically: the model was loading

    def to_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "injected": self.injected,
            "skipped_empty": self.skipped_empty,
            "skipped_budget": self.skipped_budget,
            "skipped_error": self.skipped_error,
            "lexical_while_warming": self.lexical_while_warming,
        }


@dataclass
class ExtractionState:
    """Durable learnings proposed as topic entries after each exchange."""

    enabled: bool
    runs: int = 0
    written: int = 0
    skipped: int = 0
    failed: int = 0
    abandoned: int = 0  # left undone: the session's end came first
    last_error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "enabled": self.enabled,
            "runs": self.runs,
            "written": self.written,
            "skipped": self.skipped,
            "failed": self.failed,
            "abandoned": self.abandoned,
            "last_error": self.last_error,
        }


@dataclass
class CaptureState:
    enabled: bool
    llm: str
    queued: int = 0
    written: int = 0
    distilled: int = 0
    failed: int = 0
    skipped: int = 0
    # Exchanges that only restated what memlane's tools returned (engine/journal/echo.py).
    skipped_recall_only: int = 0
    # Restated sentences left out of the exchanges that were captured.
    restated_dropped: int = 0
    redactions: int = 0
    # Exchanges a session that is gone left in its capture log, written
    # by this one (recovered_as_digest of them without distillation), and
    # those found already written (a kill came between the write and its mark).
    recovered: int = 0
    recovered_as_digest: int = 0
    found_written: int = 0
    # Exchanges queued in memory only: the capture log could not be written.
    # (These two keep their names: they are fields of the status JSON.)
    unjournaled: int = 0
    journal_error: str | None = None
    recovery_scanned: bool = False  # the start's look for ended sessions' capture logs is over
    last_failure: str | None = None
    write_errors: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "enabled": self.enabled,
            "llm": self.llm,
            "queued": self.queued,
            "written": self.written,
            "distilled": self.distilled,
            "failed": self.failed,
            "skipped": self.skipped,
            "skipped_recall_only": self.skipped_recall_only,
            "restated_dropped": self.restated_dropped,
            "redactions": self.redactions,
            "recovered": self.recovered,
            "recovered_as_digest": self.recovered_as_digest,
            "found_written": self.found_written,
            "unjournaled": self.unjournaled,
            "journal_error": self.journal_error,
            "recovery_scanned": self.recovery_scanned,
            "last_failure": self.last_failure,
            "write_errors": list(self.write_errors),
        }
