"""Finishing what a killed session left in its capture log (engine/journal/capture_log.py).

``Session.start`` calls ``orphaned`` in the background: it adopts (locks)
every capture log whose owner is gone, skips the entries a kill caught between
their daily write and their done mark (``already_written``: the anchor is in
a daily file), and hands the rest to the session's capture queue. A log
held by a live session is never adopted: its owner's ``flock`` refuses the
non-blocking lock, whichever process it is in.

``recovered.json`` in the capture-log directory counts what every session
recovered, for ``memlane status`` (``summary``, ``status_line``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Collection, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from memlane.core.atomic import write_atomic
from memlane.core.clock import local as local_time
from memlane.core.locks import lock_fd, lock_file
from memlane.core.process import pid_alive
from memlane.core.regular_file import read_all_from
from memlane.engine.journal.capture_log import (
    DIGEST,
    DISTILLED,
    FOUND,
    LOG_SUFFIX,
    TEMP_SUFFIX,
    CaptureLog,
    Pending,
    parse,
)

STATS_NAME = "recovered.json"
STATS_LOCK_NAME = ".recovered.lock"

_DAILY_NAME_RE = re.compile(r"^(\d{4}-\d{2}-\d{2})\.md$")


def orphaned(directory: Path, store: Path) -> Iterator[tuple[CaptureLog, list[Pending], int]]:
    """Each adopted capture log of a session that is gone, the entries still to
    write, and how many were found already written.

    Those found are marked done (and counted in ``recovered.json``) here; a
    log left with nothing to write is deleted.
    """
    for capture_log in adopt_orphans(directory):
        left = []
        found = 0
        for item in capture_log.pending:
            if already_written(store, item):
                capture_log.mark_done(item.key, FOUND)
                note_recovered(directory, FOUND)
                found += 1
            else:
                left.append(item)
        if not left:
            capture_log.close()
        yield capture_log, left, found


def adopt_orphans(directory: Path) -> Iterator[CaptureLog]:
    """Every capture log whose owner is gone, locked by this process, with entries pending.

    A log another open session holds is skipped. One left empty (its
    owner died after writing everything) is deleted, as are temporary files
    of a compaction that never finished (the log they came from is intact).
    """
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return
    for name in names:
        path = directory / name
        if name.endswith(LOG_SUFFIX) and not name.startswith("."):
            adopted = _adopt(path)
            if adopted is not None:
                yield adopted
        elif name.startswith(".") and name.endswith(TEMP_SUFFIX) and LOG_SUFFIX in name:
            # A compaction's temporary copy of a log (``.<log>.<hex>.tmp``);
            # the counters file's temporary copy is its writer's, never swept here.
            _remove_if_unlocked(path)


def _adopt(path: Path) -> CaptureLog | None:
    try:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        lock_fd(fd, wait=False)
        if os.stat(path).st_ino != os.fstat(fd).st_ino:
            raise FileNotFoundError(path)  # deleted or replaced since it was opened
        data = read_all_from(fd)
        if data and not data.endswith(b"\n"):
            # A torn last line: end it, so the done marks appended next are lines of their own.
            os.write(fd, b"\n")
        contents = parse(data)
    except OSError:
        os.close(fd)
        return None
    capture_log = CaptureLog(path, fd, contents, adopted=True, header_len=0)
    if not contents.pending:
        capture_log.close()  # nothing left to write: deleted
        return None
    return capture_log


def _remove_if_unlocked(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        lock_fd(fd, wait=False)
        path.unlink(missing_ok=True)
    except OSError:
        pass
    finally:
        os.close(fd)


def already_written(store: Path, item: Pending) -> bool:
    """Is *item*'s anchor (session and turn) in a daily file of its day or later?"""
    return anchor_written(store, item.anchor.session, (item.anchor.turn,), item.at)


def anchor_written(store: Path, session: str, turns: Collection[str], since: datetime) -> bool:
    """Is an anchor of *session* with one of *turns* in a daily file of *since*'s day or later?"""
    if not turns:
        return False
    marker = re.compile(
        rb"<!--\s*session:"
        + re.escape(session.encode("utf-8"))
        + rb"\s+turn:(?:"
        + b"|".join(re.escape(turn.encode("utf-8")) for turn in turns)
        + rb")\s"
    )
    first_day = local_time(since).date().isoformat()
    try:
        names = os.listdir(store)
    except OSError:
        return False
    for name in names:
        match = _DAILY_NAME_RE.match(name)
        if match is None or match.group(1) < first_day:
            continue
        try:
            if marker.search((store / name).read_bytes()):
                return True
        except OSError:
            continue
    return False


# -- counters for `memlane status` ------------------------------------------------------------


def note_recovered(directory: Path, how: str) -> None:
    """Count one recovered entry in ``recovered.json`` (shared by every process)."""
    with lock_file(directory / STATS_LOCK_NAME, exclusive=True, mode=0o600):
        stats = read_stats(directory)
        stats[how] = int(stats.get(how, 0)) + 1
        write_atomic(directory / STATS_NAME, json.dumps(stats, sort_keys=True) + "\n")


def read_stats(directory: Path) -> dict[str, int]:
    try:
        data = json.loads((directory / STATS_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): v for k, v in data.items() if isinstance(v, int)}


def summary(directory: Path) -> dict[str, Any]:
    """What ``memlane status`` shows: recovered counts and entries awaiting recovery.

    Read only: it takes no lock (a lock taken here could make a starting
    session skip a log it should adopt), so whether an owner is alive is
    judged by its pid, for display only.
    """
    stats = read_stats(directory)
    waiting = 0
    queued = 0
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        names = []
    for name in names:
        if not name.endswith(LOG_SUFFIX) or name.startswith("."):
            continue
        try:
            contents = parse((directory / name).read_bytes())
        except OSError:
            continue
        pid = (contents.header or {}).get("pid")
        if isinstance(pid, int) and pid_alive(pid):
            queued += len(contents.pending)
        else:
            waiting += len(contents.pending)
    return {
        "journal": str(directory),  # a status JSON field: its name stays
        "recovered": sum(stats.get(how, 0) for how in (DISTILLED, DIGEST)),
        "recovered_as_digest": stats.get(DIGEST, 0),
        "found_written": stats.get(FOUND, 0),
        "waiting": waiting,
        "queued": queued,
    }


def status_line(counts: dict[str, Any]) -> str:
    """``memlane status``'s line: e.g. ``recovered 3 (1 as digest), 2 waiting for the next session``."""
    text = f"recovered {counts.get('recovered', 0)}"
    details = []
    if counts.get("recovered_as_digest"):
        details.append(f"{counts['recovered_as_digest']} as digest")
    if counts.get("found_written"):
        details.append(f"{counts['found_written']} found already written")
    if details:
        text += f" ({', '.join(details)})"
    if counts.get("waiting"):
        text += (
            f", {counts['waiting']} left by an ended session: written when the next session starts"
        )
    if counts.get("queued"):
        text += f", {counts['queued']} queued by running sessions"
    return text
