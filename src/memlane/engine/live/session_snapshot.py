"""A session's stable snapshot: what is appended to the agent's system prompt.

The recent daily notes (journal/snapshot.py), then pi-lcm-memory's primer of
the project's latest sessions, then the ``MEMORY.md`` index of the topics.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from memlane.engine.journal.snapshot import Snapshot, build_snapshot

if TYPE_CHECKING:
    from memlane.core.settings import SessionSettings
    from memlane.engine.shared.ports import ProjectMemory

log = logging.getLogger("memlane.session")


def session_snapshot(
    memory: ProjectMemory, settings: SessionSettings, session_id: str
) -> tuple[Snapshot, str | None]:
    """The snapshot, and the primer's one-line notice (None when there is no primer)."""
    from memlane.engine.topics.surfacing import memory_index_block

    extra = []
    primer_block, primer_line = _primer(memory, session_id)
    if primer_block:
        extra.append(primer_block)
    topics_block = memory_index_block(memory.scope.store, memory.config.topics)
    if topics_block:
        extra.append(topics_block)
    snapshot = build_snapshot(
        memory.scope.store,
        memory.clock.today(),
        today_chars=settings.snapshot_today_chars,
        yesterday_chars=settings.snapshot_yesterday_chars,
        extra_blocks=extra,
    )
    return snapshot, primer_line


def _primer(memory: ProjectMemory, session_id: str) -> tuple[str | None, str | None]:
    """pi-lcm-memory's primer: the project's latest sessions (block, notice line)."""
    settings = memory.config.sessions
    if not (settings.enabled and settings.primer):
        return None, None
    from memlane.engine.sessions.primer import primer
    from memlane.engine.sessions.registry import recent_for_primer

    try:
        recent = recent_for_primer(memory, settings.primer_top_k, session_id)
    except Exception as exc:  # a damaged sessions index must not stop a session
        log.info("primer unavailable: %s", exc)
        return None, None
    return primer(recent, settings.primer_token_budget)
