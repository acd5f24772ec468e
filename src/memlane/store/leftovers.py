"""Temporary files a killed writer left in the store, and when they may go.

Every rewrite of a store file goes through a temporary file beside it,
renamed over the file once complete (``topics.write_atomic``,
``daily.create_with_title``, the rewrite of ``forget``). A ``kill -9``, an
OOM kill or a power cut between the two leaves the temporary file behind:
it holds text that never became the file, so deleting it loses nothing,
but it must never be the temporary file of a writer that is still working.

* ``.<name>.<pid>.<8 hex>.tmp`` (topic files, ``MEMORY.md``, the dream
  meta file, a new daily file's title) carries its writer's process id.
  It is deleted when that process is gone, or, should the id have been
  reused by a live process, once the file is ``STALE_TEMP_S`` old: no
  writer holds its temporary file for longer than one write and an fsync.
* ``.<YYYY-MM-DD>.md.forget-<random>.tmp`` exists only while its writer
  holds the store's forget lock, so whoever holds that lock next deletes
  any it finds.

The sweeps are best effort: a file that cannot be deleted stays for the
next one. Nothing here follows a symbolic link.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable
from pathlib import Path

from memlane.core.atomic import temp_writer
from memlane.core.process import pid_alive

log = logging.getLogger("memlane.store")

#: A temporary file whose writer's id is still in use goes once it is this old.
STALE_TEMP_S = 3600.0

#: The files whose writers' temps the store sweeps (``core/atomic.temp_writer``).
SWEPT_SUFFIXES = (".md", ".json")
FORGET_TEMP_RE = re.compile(r"^\.\d{4}-\d{2}-\d{2}\.md\.forget-[A-Za-z0-9_]+\.tmp$")


def sweep_writer_temps(directories: Iterable[Path], now: float | None) -> list[Path]:
    """Delete the ``.<name>.<pid>.<hex>.tmp`` files of writers that are gone.

    *now* is the current time as the filesystem stamps files (None: the age
    rule is skipped and only dead writers' files go). Returns what was deleted.
    """
    removed: list[Path] = []
    for directory in directories:
        for entry in _regular_files(directory):
            writer = temp_writer(entry.name)
            if writer is None or not writer[0].endswith(SWEPT_SUFFIXES):
                continue
            pid = writer[1]
            gone = pid != os.getpid() and not pid_alive(pid)
            if not gone and not _older_than(entry, now, STALE_TEMP_S):
                continue
            if _unlink(entry):
                removed.append(Path(entry.path))
    return removed


def sweep_forget_temps(store: Path) -> list[Path]:
    """Delete forget's temporary files; the caller holds the store's forget lock."""
    removed = []
    for entry in _regular_files(store):
        if FORGET_TEMP_RE.match(entry.name) and _unlink(entry):
            removed.append(Path(entry.path))
    return removed


def _regular_files(directory: Path) -> list[os.DirEntry[str]]:
    try:
        if directory.is_symlink():
            return []
        with os.scandir(directory) as entries:
            return [e for e in entries if e.name.endswith(".tmp") and _is_plain_file(e)]
    except OSError:
        return []


def _is_plain_file(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_file(follow_symlinks=False)
    except OSError:
        return False


def _older_than(entry: os.DirEntry[str], now: float | None, seconds: float) -> bool:
    if now is None:
        return False
    try:
        return now - entry.stat(follow_symlinks=False).st_mtime > seconds
    except OSError:
        return False


def _unlink(entry: os.DirEntry[str]) -> bool:
    try:
        os.unlink(entry.path)
    except FileNotFoundError:
        return False  # another sweeper was first
    except OSError as exc:
        log.debug("could not delete the leftover %s: %s", entry.path, exc)
        return False
    log.info("deleted %s, left by a writer that was killed", entry.path)
    return True
