"""``<store>/.dream-meta.json``: when the store last dreamt, the sessions since
(``note_session_start``, ``record_dream``, ``read_meta``) and the one-time ``nudge``."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlane.core.clock import from_epoch, local, utc_z
from memlane.core.errors import MemlaneError, StoreError
from memlane.store import safe_paths
from memlane.store import topics as T

if TYPE_CHECKING:
    from memlane.core.settings import TopicSettings

DREAM_META = ".dream-meta.json"


# --- .dream-meta.json -----------------------------------------------------------------------


@dataclass
class DreamMeta:
    last_dream_at: str | None = None
    sessions_since: int = 0
    nudged_at: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "last_dream_at": self.last_dream_at,
            "sessions_since": self.sessions_since,
            "nudged_at": self.nudged_at,
        }


def _parse_time(value: Any) -> datetime | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        # pi-memory writes milliseconds since the epoch.
        seconds = value / 1000 if value > 1e11 else value
        return from_epoch(seconds)
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return local(parsed)


def read_meta(store: Path) -> DreamMeta:
    """The dream bookkeeping; a missing or damaged file reads as "never dreamt"."""
    try:
        # Never through a link (store/safe_paths.py); a refused one reads as absent.
        data = json.loads(safe_paths.read_text(store, store / DREAM_META))
    except (OSError, ValueError, StoreError):
        return DreamMeta()
    if not isinstance(data, dict):
        return DreamMeta()
    last = _parse_time(data.get("last_dream_at", data.get("lastDreamAt")))
    count = data.get("sessions_since", data.get("sessionCount", 0))
    nudged = _parse_time(data.get("nudged_at"))
    return DreamMeta(
        last_dream_at=utc_z(last) if last else None,
        sessions_since=count if isinstance(count, int) and count >= 0 else 0,
        nudged_at=utc_z(nudged) if nudged else None,
    )


def _write_meta(store: Path, meta: DreamMeta) -> None:
    # A count of sessions for a suggestion: losing the last one in a crash of the
    # machine costs nothing, and every session start waits for this write.
    T.write_atomic(store / DREAM_META, json.dumps(meta.to_json(), indent=2) + "\n", durable=False)


def _update_meta(store: Path, change: Callable[[DreamMeta], None]) -> DreamMeta:
    # The topics lock also serialises the meta file: session starts of
    # parallel agents must not lose a count.
    with T.locked(store):
        meta = read_meta(store)
        change(meta)
        _write_meta(store, meta)
    return meta


def note_session_start(store: Path) -> DreamMeta:
    """Count one more session since the last dream (called at session start).

    A project without a store yet is left alone: counting must not create it.
    """
    if not store.is_dir():
        return DreamMeta()

    def bump(meta: DreamMeta) -> None:
        meta.sessions_since += 1

    return _update_meta(store, bump)


def record_dream(store: Path, now: datetime) -> DreamMeta:
    """A dream ran: reset the session count and the nudge."""

    def reset(meta: DreamMeta) -> None:
        meta.last_dream_at = utc_z(now)
        meta.sessions_since = 0
        meta.nudged_at = None

    return _update_meta(store, reset)


def nudge(store: Path, settings: TopicSettings, now: datetime) -> str | None:
    """The one-time suggestion to run ``memlane dream``, or None.

    Due after ``dream.nudge_after_sessions`` sessions (counted by
    ``note_session_start``) or ``dream.nudge_after_hours`` hours since the
    last dream; a store that never dreamt has no start for the hours, so
    only its sessions count. Said once per state: the time it was said is
    stored, and only a dream clears it. Nothing is said while the topic
    memory is off or the store does not exist.
    """
    if not settings.enabled or not store.is_dir():
        return None
    moment = local(now)

    def due(meta: DreamMeta) -> str | None:
        if meta.nudged_at is not None:
            return None
        reasons = []
        sessions = settings.dream_nudge_after_sessions
        if sessions > 0 and meta.sessions_since >= sessions:
            reasons.append(f"{meta.sessions_since} sessions")
        last = _parse_time(meta.last_dream_at)
        if last is not None and settings.dream_nudge_after_hours > 0:
            hours = (moment - last).total_seconds() / 3600
            if hours >= settings.dream_nudge_after_hours:
                reasons.append(f"{hours:.0f} hours")
        if not reasons:
            return None
        since = "since the last dream" if last is not None else "without a dream so far"
        return (
            f"{' and '.join(reasons)} {since}: run `memlane dream` (or /dream) to merge "
            "duplicate topic entries, settle contradictions and rebuild MEMORY.md."
        )

    try:
        # Decided and marked under the lock: two sessions starting together
        # must not both say it.
        with T.locked(store):
            meta = read_meta(store)
            text = due(meta)
            if text is not None:
                meta.nudged_at = utc_z(moment)
                _write_meta(store, meta)
            return text
    except MemlaneError:
        # A read-only store: saying it again next time beats never saying it.
        return due(read_meta(store))
