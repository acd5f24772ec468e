"""Past sessions a session's first searches must not miss: transcripts other
agents wrote since the sessions layer last read them.

The sweeper reads them on a timer that backs off to minutes while the project
is idle, and a session's start wakes it (engine/live/background.py); until
that sweep is done, a search of past messages (``kind`` session or all) first
reads the new bytes itself when they are few, for the lexical leg (the sweep
embeds them), or says that past sessions are still being read.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

from memlane.core.errors import MemlaneError

if TYPE_CHECKING:
    from memlane.engine.sessions.layer import SessionsLayer
    from memlane.engine.shared.ports import ProjectMemory
    from memlane.engine.shared.results import Progress

#: The most new transcript bytes a search reads itself (JSONL: a session of a
#: few dozen exchanges); more is the sweep's work. Read for the lexical leg only,
#: about 1 ms per KB of dense conversation on 2 busy cores, most of it the
#: redaction of each message (benchmarks/bench_outside.py): at most ~0.25 s.
OUTSIDE_TRANSCRIPT_BYTES = 256_000
#: Said when there is more than that.
SESSIONS_CATCHING_UP = (
    "past sessions are still being read ({files} changed since they were last read): "
    "their newest messages may be missing from these results; search again in a moment"
)


def catch_up_transcripts(mem: ProjectMemory) -> list[str]:
    """Read the project's transcripts that grew since the sessions layer last
    read them, when they fit ``OUTSIDE_TRANSCRIPT_BYTES``; notices only."""
    from memlane.engine.lock_waits import sessions_not_caught_up
    from memlane.engine.sessions.layer import SessionsLayer, project_sources
    from memlane.index.protocol import IndexBusyError

    if not mem.config.sessions.enabled:
        return []
    started = time.perf_counter()
    try:
        layer = SessionsLayer(mem, embedder=None)  # lexical rows; the sweep embeds them
        known = layer.store.sources()
        changed = []
        size = 0
        for source in project_sources(mem):
            try:
                st = os.stat(source.path)
            except OSError:
                continue
            state = known.get(str(source.path))
            if state is not None and (st.st_size, st.st_mtime_ns, st.st_ino, state.offset) == (
                state.size,
                state.mtime_ns,
                state.inode,
                state.size,
            ):
                continue  # read to its end, as reader.read_source decides
            changed.append(source)
            grown = st.st_size - state.offset if state is not None else st.st_size
            size += grown if grown > 0 else st.st_size  # shrunk: read again whole
        if not changed:
            return []
        if size > OUTSIDE_TRANSCRIPT_BYTES:
            return [SESSIONS_CATCHING_UP.format(files=_transcripts(len(changed)))]
        report = layer.ingestor.ingest(changed, operation="catch-up")
    except IndexBusyError as exc:
        return [sessions_not_caught_up(exc)]
    except MemlaneError as exc:
        return [f"the newest messages of past sessions may be missing: reading them failed ({exc})"]
    from memlane.core.trace import trace

    trace(
        "sessions",
        "search.catch_up",
        files=len(changed),
        added=report.documents_added,
        ms=f"{(time.perf_counter() - started) * 1000:.1f}",
    )
    return list(report.notices)


def _transcripts(n: int) -> str:
    return "1 transcript" if n == 1 else f"{n} transcripts"


def backfill_first(layer: SessionsLayer, progress: Progress | None = None) -> list[str]:
    """Index every new message of the project's transcripts before a search
    (the command line's: a person waits, with a bar); what to say about it.

    A lock held past the search's wait budget leaves the sessions index as it
    stands to answer, and says so.
    """
    from memlane.engine.lock_waits import sessions_not_caught_up
    from memlane.index.protocol import IndexBusyError

    try:
        report = layer.backfill(progress)
    except IndexBusyError as exc:
        return [sessions_not_caught_up(exc)]
    if report.activity:
        return [f"indexed {report.documents_added} new session message(s) first"]
    return []
