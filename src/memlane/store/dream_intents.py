"""The dream intents: the record that makes a dream apply all-or-nothing across a crash.

``engine/topics/dream/apply.py`` (``apply_plan``) rewrites several files (topic files, ``MEMORY.md``)
with one rename each. An in-process ``try``/``except`` can undo a failure,
but not a SIGKILL or a power cut between two renames; so before the first
side file exists, ``begin`` writes the intents file ``<store>/.dream-journal.json`` (temporary
file, fsync, rename, directory fsync) naming, for every change, the target,
its backup (a hard link to the original, or ``"absent"`` when the file did
not exist) and the temporary file holding the new text (``null`` when the
target is deleted). Once every rename is on disk, ``commit`` marks the
intents file ``committed``; ``finish`` then removes the backups and the intents file.

``recover`` (run with the topics lock held: ``store/topics.locked()`` calls it
whenever the intents file exists) settles an interrupted apply:

* ``applying``: roll back. Every backup is renamed over its target, targets
  that did not exist before are deleted, temporary files are deleted, then
  the intents file. Each step is idempotent (a backup already put back is simply
  gone), so a crash during recovery is recovered by the next one.
* ``committed``: every rename had landed, so the dream stands; only the
  backups, temporary files and the intents file are removed.

Side files with no intents file (``*.dream-backup`` / ``*.dream.tmp``, e.g. from a
crash of a memlane that had no intents file) are never silently left: ``pending``
names them, and ``sweep_leftovers`` deletes only what loses nothing
(temporary files, backups identical to their target) and reports the rest.

This module imports nothing from ``store/topics/`` (which imports it for
the lock hook) nor from ``engine/``.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from collections.abc import Iterable
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memlane.core.errors import StoreError
from memlane.store import safe_paths
from memlane.store.durable import fsync_dirs
from memlane.store.layout import MEMORY_INDEX, TOPICS_DIR

# The file keeps its older name on disk (existing stores may hold one to recover).
INTENTS_NAME = ".dream-journal.json"
INTENTS_FORMAT_VERSION = 1
BACKUP_SUFFIX = ".dream-backup"
TEMP_SUFFIX = ".dream.tmp"
APPLYING = "applying"
COMMITTED = "committed"
_ABSENT = "absent"

_TARGET_RE = re.compile(
    r"^(?:"
    + re.escape(MEMORY_INDEX)
    + "|"
    + re.escape(TOPICS_DIR)
    + r"/[a-z0-9]+(?:-[a-z0-9]+)*\.md)$"
)
# ``.<target name>.<pid>.<hex>.dream-backup`` / ``.dream.tmp``: what ``side_path`` makes.
_SIDE_RE = re.compile(
    r"^\.(?P<name>.+)\.\d+\.[0-9a-f]+(?P<suffix>"
    + re.escape(BACKUP_SUFFIX)
    + "|"
    + re.escape(TEMP_SUFFIX)
    + r")$"
)
_RECOVER_HINT = (
    "inspect {intents}: every `backup` holds a file as it was before the dream; "
    "put them back by hand (or delete the intents file to keep the files as they are)"
)


@dataclass(frozen=True)
class Step:
    """One file of the dream: absolute paths while applying."""

    target: Path
    backup: Path | None  # None: the target did not exist before the dream
    temp: Path | None  # None: the dream deletes the target


@dataclass
class Recovery:
    """What ``recover`` / ``sweep_leftovers`` did, as store-relative paths."""

    outcome: str | None = None  # "rolled back" | "completed" | None (no intents file)
    restored: list[str] = field(default_factory=list)  # put back from their backups
    removed: list[str] = field(default_factory=list)  # created by the dream, deleted again
    kept: list[str] = field(default_factory=list)  # a committed dream's files, left applied
    cleaned: list[str] = field(default_factory=list)  # side files deleted (nothing lost)
    leftovers: list[str] = field(default_factory=list)  # side files kept: a human decides

    def render(self) -> str | None:
        parts = []
        if self.outcome == "rolled back":
            undone = []
            if self.restored:
                undone.append("restored " + ", ".join(self.restored))
            if self.removed:
                undone.append("removed " + ", ".join(self.removed) + " (created by the dream)")
            parts.append(
                "an interrupted dream apply was rolled back"
                + (": " + "; ".join(undone) if undone else " before it changed any file")
            )
        elif self.outcome == "completed":
            parts.append(
                "an interrupted dream had been fully applied ("
                + ", ".join(self.kept)
                + "); its backups were removed"
            )
        elif self.cleaned:
            parts.append(
                "removed files left by an older interrupted dream that lose nothing: "
                + ", ".join(self.cleaned)
            )
        if self.leftovers:
            parts.append(_leftover_text(self.leftovers))
        return "; ".join(parts) or None

    def to_json(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome,
            "restored": list(self.restored),
            "removed": list(self.removed),
            "kept": list(self.kept),
            "cleaned": list(self.cleaned),
            "leftovers": list(self.leftovers),
            "message": self.render(),
        }


def _leftover_text(leftovers: list[str]) -> str:
    return (
        f"{len(leftovers)} file(s) left by an older interrupted dream, kept because they may "
        "hold the only copy of an entry: "
        + ", ".join(leftovers)
        + " (a .dream-backup is a file as it was before that dream: compare it with the file "
        "it names and restore it by hand, or delete it)"
    )


def intents_path(store: Path) -> Path:
    return store / INTENTS_NAME


def side_path(target: Path, suffix: str) -> Path:
    """A fresh hidden name next to *target* for its backup or temporary file."""
    return target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}{suffix}")


# --- writing ----------------------------------------------------------------------------------


def begin(store: Path, steps: Iterable[Step]) -> None:
    """Record the intent, durably, before any backup or temporary file exists."""
    _write(store, APPLYING, list(steps))


def commit(store: Path, steps: Iterable[Step]) -> None:
    """Every rename is on disk: from now on recovery keeps the dream."""
    _write(store, COMMITTED, list(steps))


def finish(store: Path, steps: Iterable[Step]) -> None:
    """Remove a committed dream's backups and temporary files, then the intents file.

    Best effort: a file left here is removed by the next ``recover`` (the
    intents file still says ``committed``), so a failure is no reason to fail the dream.
    """
    for step in steps:
        for side in (step.backup, step.temp):
            if side is not None:
                with suppress(OSError):
                    os.unlink(side)
    with suppress(OSError):
        os.unlink(intents_path(store))
    fsync_dirs([store])


def _write(store: Path, state: str, steps: list[Step]) -> None:
    data = {
        "format_version": INTENTS_FORMAT_VERSION,
        "state": state,
        "pid": os.getpid(),
        "changes": [
            {
                "target": _rel(step.target, store),
                "backup": _ABSENT if step.backup is None else _rel(step.backup, store),
                "temp": None if step.temp is None else _rel(step.temp, store),
            }
            for step in steps
        ],
    }
    path = intents_path(store)
    temp = side_path(path, TEMP_SUFFIX)
    try:
        with open(temp, "x", encoding="utf-8") as handle:
            handle.write(json.dumps(data, indent=2) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except OSError as exc:
        with suppress(OSError):
            os.unlink(temp)
        raise StoreError(
            f"cannot write the dream intents file {path}: {exc.strerror or exc}"
        ) from None
    # The rename must be durable before the first rename it protects.
    fsync_dirs([store])


def _rel(path: Path, store: Path) -> str:
    try:
        return path.relative_to(store).as_posix()
    except ValueError:
        # The topic paths come from topics_dir(), which expands a ``~`` store.
        return path.relative_to(store.expanduser()).as_posix()


# --- reading ----------------------------------------------------------------------------------


def read(store: Path) -> tuple[str, list[Step]] | None:
    """(state, steps) of the intents file, None when there is none.

    The paths are checked before anything acts on them: a damaged or hand-made
    intents file must never make recovery rename or delete a file outside the
    store's ``MEMORY.md`` and ``topics/*.md`` and their own side files.
    """
    path = intents_path(store)
    try:
        # Never through a link (store/safe_paths.py): a committed intents
        # file's link must not make recovery act on another file's content.
        fd = safe_paths.open_store_file(store, path, os.O_RDONLY)
        try:
            text = safe_paths.read_fd(fd).decode("utf-8")
        finally:
            os.close(fd)
    except FileNotFoundError:
        return None
    except safe_paths.UnsafePathError:
        raise
    except (OSError, UnicodeDecodeError) as exc:
        raise _damaged(store, str(getattr(exc, "strerror", None) or exc)) from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise _damaged(store, f"it is not JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("format_version") != INTENTS_FORMAT_VERSION:
        raise _damaged(store, "it is not a dream intents file this memlane reads")
    state = data.get("state")
    if state not in (APPLYING, COMMITTED):
        raise _damaged(store, f"unknown state {state!r}")
    raw_changes = data.get("changes")
    if not isinstance(raw_changes, list):
        raise _damaged(store, "it has no changes list")
    if (store / TOPICS_DIR).is_symlink():
        raise _damaged(store, f"{store / TOPICS_DIR} is a symbolic link")
    steps = []
    for raw in raw_changes:
        if not isinstance(raw, dict):
            raise _damaged(store, "a change is not an object")
        target = raw.get("target")
        if not isinstance(target, str) or not _TARGET_RE.match(target):
            raise _damaged(store, f"{target!r} is neither {MEMORY_INDEX} nor a topic file")
        backup = raw.get("backup")
        temp = raw.get("temp")
        steps.append(
            Step(
                target=store / target,
                backup=None if backup == _ABSENT else _side(store, target, backup, BACKUP_SUFFIX),
                temp=None if temp is None else _side(store, target, temp, TEMP_SUFFIX),
            )
        )
    return state, steps


def _side(store: Path, target: str, raw: Any, suffix: str) -> Path:
    directory, _, name = target.rpartition("/")
    if isinstance(raw, str):
        side_dir, _, side_name = raw.rpartition("/")
        match = _SIDE_RE.match(side_name)
        if side_dir == directory and match and match["name"] == name and match["suffix"] == suffix:
            return store / raw
    raise _damaged(store, f"{raw!r} is not a {suffix} file of {target}")


def _damaged(store: Path, reason: str) -> StoreError:
    intents = intents_path(store)
    return StoreError(
        f"the dream intents file {intents} is unusable ({reason}), so an interrupted dream "
        "cannot be recovered automatically; the topic files are left alone",
        _RECOVER_HINT.format(intents=intents),
    )


# --- recovering -------------------------------------------------------------------------------


def recover(store: Path) -> Recovery:
    """Settle an interrupted apply from the intents file; the caller holds the topics lock.

    ``StoreError`` when it cannot (the intents file then stays, and so does every
    backup, so the next attempt starts over).
    """
    report = Recovery()
    intents = read(store)
    if intents is None:
        return report
    state, steps = intents
    try:
        if state == COMMITTED:
            report.outcome = "completed"
            report.kept = [_rel(step.target, store) for step in steps]
            for step in steps:
                for side in (step.backup, step.temp):
                    if side is not None and _unlink_if_there(side):
                        report.cleaned.append(_rel(side, store))
        else:
            report.outcome = "rolled back"
            _roll_back(store, steps, report)
        # Restores first, then the intents file: were its removal to
        # reach the disk before a restore, a crash here would lose the restore.
        fsync_dirs({step.target.parent for step in steps})
        os.unlink(intents_path(store))
    except OSError as exc:
        intents_file = intents_path(store)
        raise StoreError(
            f"cannot recover the interrupted dream recorded in {intents_file}: "
            f"{exc.strerror or exc}",
            "check that the store is writable; the next memlane command that writes the "
            "topics retries (" + _RECOVER_HINT.format(intents=intents_file) + ")",
        ) from None
    fsync_dirs([store])
    return report


def _roll_back(store: Path, steps: list[Step], report: Recovery) -> None:
    for step in reversed(steps):
        if step.backup is None:
            # The dream created this file (the lock guarantees nobody else did).
            if _unlink_if_there(step.target):
                report.removed.append(_rel(step.target, store))
        elif step.backup.exists():
            # A backup still there has not been put back.
            if _same_file(step.backup, step.target):
                # Never renamed over: the target is the original itself (and
                # rename() between two links of one inode does nothing at all).
                os.unlink(step.backup)
            else:
                # A copy (no hard links here) of a target never renamed over is
                # put back all the same, but is not news to report.
                changed = not _same_content(step.backup, step.target)
                os.replace(step.backup, step.target)
                if changed:
                    report.restored.append(_rel(step.target, store))
        # else: a backup already put back by an earlier, interrupted recovery,
        # or never made (the crash came before any rename): the target is the original.
        if step.temp is not None and _unlink_if_there(step.temp):
            report.cleaned.append(_rel(step.temp, store))


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _same_content(a: Path, b: Path) -> bool:
    try:
        if os.path.samefile(a, b):
            return True
        return a.read_bytes() == b.read_bytes()
    except OSError:
        return False


def _unlink_if_there(path: Path) -> bool:
    try:
        os.unlink(path)
    except FileNotFoundError:
        return False
    return True


# --- side files without an intents file -------------------------------------------------------


def leftovers(store: Path) -> list[Path]:
    """Backups and temporary files of dreams that no intents file accounts for."""
    intents = None
    with suppress(StoreError):
        intents = read(store)
    listed: set[Path] = set()
    for step in intents[1] if intents else []:
        listed.update(p for p in (step.backup, step.temp) if p is not None)
    found = []
    for directory in (store, store / TOPICS_DIR):
        try:
            names = sorted(os.listdir(directory))
        except OSError:
            continue
        for name in names:
            path = directory / name
            if _SIDE_RE.match(name) and path not in listed and not path.is_symlink():
                found.append(path)
    return found


def sweep_leftovers(store: Path, report: Recovery) -> None:
    """Delete the side files that lose nothing, report the rest; caller holds the lock.

    A temporary file is new text that never became the file (or an intents file
    that never landed): deleting it loses nothing. A backup identical to the
    file it names is redundant. Any other backup may be the only copy of an
    entry an older crash dropped, so it stays, named in the report.
    """
    for path in leftovers(store):
        match = _SIDE_RE.match(path.name)
        assert match is not None  # leftovers() only lists matching names
        target = path.with_name(match["name"])
        rel = _rel(path, store)
        if match["suffix"] == TEMP_SUFFIX or (target.is_file() and _same_content(path, target)):
            with suppress(OSError):
                os.unlink(path)
                report.cleaned.append(rel)
                continue
        report.leftovers.append(rel + _backup_of(path, target, store))


def _backup_of(path: Path, target: Path, store: Path) -> str:
    if not path.name.endswith(BACKUP_SUFFIX):
        return ""
    rel = _rel(target, store)
    return f" (an earlier {rel})" if target.exists() else f" (an earlier {rel}, now missing)"


# --- status -----------------------------------------------------------------------------------


def pending(store: Path, *, lock_free: bool | None) -> str | None:
    """What an interrupted dream left for recovery, in one line; None when nothing.

    *lock_free*: whether nobody holds the topics lock (None: unknown). Read
    only: ``status`` shows it, the next locked write acts on it.
    """
    parts = []
    if intents_path(store).exists():
        try:
            intents = read(store)
        except StoreError as exc:
            parts.append(exc.message)
            intents = None
        if intents is not None:
            state, steps = intents
            files = ", ".join(_rel(step.target, store) for step in steps)
            if lock_free is False:
                parts.append(f"a dream is being applied right now ({files})")
            elif state == COMMITTED:
                parts.append(
                    f"an interrupted dream was fully applied ({files}) but not cleaned up; "
                    "the next memlane command that touches the topics removes its backups"
                )
            else:
                parts.append(
                    f"an interrupted dream apply left {len(steps)} file(s) half-done ({files}); "
                    "the next memlane command that touches the topics rolls it back"
                )
    if lock_free is not False:
        found = leftovers(store)
        if found:
            parts.append(_leftover_text([_rel(path, store) for path in found]))
    return "; ".join(parts) or None
