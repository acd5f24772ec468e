"""Crash recovery of an interrupted ``apply_plan`` (``store/dream_intents``):
``recover_interrupted_dream`` settles it, ``pending_recovery`` reports it read-only."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from memlane.core.locks import lock_fd
from memlane.store import dream_intents as di
from memlane.store import topics as T

log = logging.getLogger("memlane.dream")


def recover_interrupted_dream(store: Path) -> di.Recovery:
    """Settle what an interrupted ``apply_plan`` left, and say what was done.

    An intents file still ``applying`` is rolled back (every file as before the
    dream), a ``committed`` one is cleaned up (the dream stands); side files
    no intents file accounts for are deleted when that loses nothing and reported
    otherwise (``Recovery.leftovers``). ``Recovery.render()`` is the message
    for the user, None when there was nothing to do. ``apply_plan`` and
    ``orient`` (so ``make_plan``) call it first; ``store/topics.locked()``
    rolls an intents file back on its own, so no command ever works on half a dream.
    ``StoreError`` when the intents file cannot be acted on (it is then left).
    """
    if not store.is_dir():
        return di.Recovery()
    if not di.intents_path(store).exists() and not di.leftovers(store):
        return di.Recovery()  # the common case: no lock taken
    with T.locked(store, recover=False):
        report = di.recover(store)
        di.sweep_leftovers(store, report)
    message = report.render()
    if message:
        log.warning("%s: %s", store, message)
    return report


def pending_recovery(store: Path) -> str | None:
    """For ``memlane status``: what an interrupted dream left, or None.

    Read only; says whether an intents file waits to be rolled back (or cleaned up
    after a complete apply), whether a dream is being applied right now, and
    names any ``.dream-backup`` / ``.dream.tmp`` file no intents file accounts for.
    """
    if not store.is_dir():
        return None
    return di.pending(store, lock_free=_lock_free(store))


def _lock_free(store: Path) -> bool | None:
    """Whether nobody holds the topics lock (None: cannot tell), without waiting."""
    if T.holds_lock(store):
        return False
    try:
        fd = os.open(store / T.LOCK_NAME, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except FileNotFoundError:
        return True
    except OSError:
        return None
    try:
        lock_fd(fd, exclusive=False, wait=False)
    except BlockingIOError:
        return False
    except OSError:
        return None
    finally:
        os.close(fd)  # also releases the probe's lock
    return True
