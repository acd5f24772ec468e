"""What memory_forget would remove, without removing it (a confirmation step).

The entry is found exactly as ``maintenance.forget`` finds it (the same
chunk-hash resolution, the same store rules: store/forget.py's dry run), so
what a confirmation shows is what the removal takes, as long as the file
does not change in between: pass its ``Removed.fingerprint()`` to
``maintenance.forget(..., expect=...)``, which checks it under the store lock.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memlane.core.errors import MemlaneError

if TYPE_CHECKING:
    from memlane.engine.shared.ports import ProjectMemory
    from memlane.store.forget import Removed


def preview_forget(
    mem: ProjectMemory,
    *,
    chunk_hash: str | None = None,
    date: str | None = None,
    time: str | None = None,
) -> Removed:
    """The entry or compact block a ``forget`` with these arguments would remove."""
    from memlane.store.forget import forget_chunk, forget_entry

    if (chunk_hash is None) == (date is None and time is None):
        raise MemlaneError(
            "give either a chunk hash or a date and a time",
            "e.g. chunk_hash=3f2a9c0d1e4b5a67, or date=2026-03-14 time=09:05",
        )
    store = mem.scope.store
    if chunk_hash is not None:
        from memlane.engine.journal.chunk_ids import resolve_chunk

        chunk = resolve_chunk(mem, chunk_hash)
        return forget_chunk(
            store,
            chunk.source,
            chunk.start_line,
            chunk_hash=chunk.chunk_hash,
            model=mem.embedding.model,
            dry_run=True,
        )
    if date is None or time is None:
        raise MemlaneError(
            "a date and a time are needed together", "e.g. date=2026-03-14 time=09:05"
        )
    return forget_entry(store, date, time, model=mem.embedding.model, dry_run=True)
