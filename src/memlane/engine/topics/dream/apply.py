"""Writing a ``DreamPlan``, all of it or nothing, even across a crash (``apply_plan``):
recorded first in the dream intents (``store/dream_intents``), rolled back by ``recovery``; see the package docstring."""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from memlane.core.errors import MemlaneError, StoreError
from memlane.core.faults import step
from memlane.engine.topics.dream.errors import DreamError
from memlane.engine.topics.dream.meta import record_dream
from memlane.engine.topics.dream.plan import DreamPlan, FileChange
from memlane.engine.topics.dream.recovery import recover_interrupted_dream
from memlane.store import dream_intents as di
from memlane.store import topics as T
from memlane.store.durable import fsync_dirs
from memlane.store.layout import TOPICS_DIR

Replacer = Callable[[Path, Path], None]


@dataclass(frozen=True)
class ApplyHooks:
    """The fault hooks of ``apply_plan``: its commit steps, replaceable.

    ``apply_plan`` renames each new text over its file with ``replace``
    (temporary file, target), deletes each file the plan removes with
    ``unlink``, marks the intents committed, then calls ``committed()``
    before it removes the backups and the intents file. A caller that must prove
    the all-or-nothing guarantee (a test, a fault-injection run) passes
    callables that fail a step or kill the process at one of these points;
    the rollback and the crash recovery never go through them. memlane
    itself always applies with the defaults: the real ``os.replace`` and
    ``os.unlink``, and nothing after the commit mark.
    """

    replace: Replacer = os.replace
    unlink: Callable[[Path], None] = os.unlink
    committed: Callable[[], None] = field(default=lambda: None)  # nothing, by default


def apply_plan(plan: DreamPlan, *, now: datetime, hooks: ApplyHooks | None = None) -> None:
    """Write the plan, all of it or nothing (see the module docstring), even
    across a crash: ``store/dream_intents`` records the intent before the
    first rename, and whatever takes the topics lock next settles it.

    *hooks* (``ApplyHooks``) replaces the commit steps, for fault injection.
    """
    hooks = hooks or ApplyHooks()
    store = plan.store
    recover_interrupted_dream(store)
    if plan.empty:
        record_dream(store, now)
        return
    with T.locked(store):
        for change in plan.changes:
            _check_unchanged(change, plan.from_file)
        steps: list[di.Step] = []
        directories = {store} | {c.path.parent for c in plan.changes}
        try:
            for change in plan.changes:
                change.path.parent.mkdir(parents=True, exist_ok=True)
                if change.path.parent.name == TOPICS_DIR:
                    T.check_inside(change.path, T.topics_dir(store))
                backup = (
                    None if change.before is None else di.side_path(change.path, di.BACKUP_SUFFIX)
                )
                temp = None if change.after is None else di.side_path(change.path, di.TEMP_SUFFIX)
                steps.append(di.Step(target=change.path, backup=backup, temp=temp))
            # The intents first: from here on a crash at any point is
            # recoverable, and no side file exists that it does not name.
            di.begin(store, steps)
            step("dream.journaled")  # the fault point keeps its name
            for change, one in zip(plan.changes, steps, strict=True):
                if one.temp is not None and change.after is not None:
                    _temp_write(one.temp, change.after)
                if one.backup is not None:
                    _backup(change.path, one.backup)
            # Backups and temporary files must be on disk before the first
            # rename makes an original reachable through its backup only.
            fsync_dirs(directories)
            step("dream.staged")
            for change, one in zip(plan.changes, steps, strict=True):
                if one.temp is not None:
                    hooks.replace(one.temp, change.path)
                else:
                    hooks.unlink(change.path)
                step("dream.replaced")
            fsync_dirs(directories)
            di.commit(store, steps)
            step("dream.committed")
        except BaseException as exc:
            try:
                # The same rollback a crash gets, from the intents just written
                # (a no-op when the intents file itself could not be written).
                di.recover(store)
            except MemlaneError as problem:
                raise DreamError(
                    f"the dream failed while applying ({_why(exc)}) and could not restore "
                    f"every file: {problem.message}",
                    f"the dream intents file {di.intents_path(store)} and the .dream-backup files stay; "
                    "the next memlane command that writes the topics retries the rollback",
                ) from None
            if isinstance(exc, DreamError):
                raise
            if isinstance(exc, Exception):
                raise DreamError(
                    f"the dream failed while applying ({_why(exc)}); nothing was changed",
                    "check that the store is writable and the disk is not full",
                ) from None
            raise
        # Past the commit mark the dream stands, whatever happens next.
        hooks.committed()
        di.finish(store, steps)
        step("dream.finished")
    record_dream(store, now)


def _why(exc: BaseException) -> str:
    if isinstance(exc, MemlaneError):
        return exc.message
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    return str(exc) or type(exc).__name__


def _check_unchanged(change: FileChange, plan_file: Path | None = None) -> None:
    # lexists: a link (even a dangling one) is read, so that it is refused.
    current: str | None = T.read_text_strict(change.path) if os.path.lexists(change.path) else None
    if current == change.before:
        return
    if plan_file is not None:
        raise DreamError(
            f"{change.relpath} changed since the plan in {plan_file} was made; nothing was changed",
            "plan again: `memlane dream --dry-run --save-plan FILE`, then apply that plan",
        )
    raise DreamError(
        f"{change.relpath} changed while the dream was planning; nothing was changed",
        "run `memlane dream` again",
    )


def _temp_write(temp: Path, text: str) -> None:
    try:
        with open(temp, "x", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as exc:
        with suppress(OSError):
            temp.unlink()
        raise StoreError(f"cannot write {temp}: {exc.strerror or exc}") from None


def _backup(path: Path, backup: Path) -> None:
    try:
        # A hard link keeps the original inode whatever replaces the name.
        os.link(path, backup)
    except OSError:
        try:
            with open(path, "rb") as src, open(backup, "xb") as dst:
                dst.write(src.read())
                dst.flush()
                os.fsync(dst.fileno())
        except OSError as exc:
            raise StoreError(f"cannot back up {path}: {exc.strerror or exc}") from None
