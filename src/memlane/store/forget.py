"""Redaction: remove exactly one entry or one ``## Memory Compact`` block.

What is removed
---------------
* An **entry** is a ``### HH:MM`` section: the heading, its anchor comment
  and bullets, up to the next heading of level 1 to 3.
* A **compact block** is a ``## Memory Compact HH:MM`` heading and
  everything after it up to the next ``#`` or ``##`` heading, sub-headings
  included: a chunk anywhere inside it removes the whole block. One
  departure from "up to the next ``##``": a ``### HH:MM`` entry heading also
  ends the block, because a session that keeps writing after a compaction
  appends its entries without a new ``## Session`` heading, and those must
  never be swallowed (compact summaries never contain such a heading:
  engine/journal/maintenance.py rewrites one).

An entry is addressed by a chunk (its source file and first line, plus its
chunk hash, which is checked against the file as it is now, under the lock,
so a stale index can never point the removal at another entry) or by
``(date, time)``: the ``### HH:MM`` (or ``## Memory Compact HH:MM``)
heading in ``<store>/<date>.md``; entries written in the same minute share
their heading, so ``14:03#2`` names the second of them, and a bare time
that several headings carry is refused with the list of them, never
guessed between; nothing is ever matched fuzzily (store/forget_locate.py).

Headings are left alone: a ``## Session HH:MM`` heading whose only entry
was removed stays (memsearch parity, and it still records that the session
wrote here). When the removed entry was the last thing in the file, the
blank line that separated it from the text above goes with it, so the next
append does not leave a double blank line.

Concurrency
-----------
Daily files are appended to by other processes with one ``O_APPEND`` write
per entry and no lock (store/daily.py), so a removal cannot just rewrite
the file. Under an exclusive ``flock`` on ``<store>/.forget.lock`` (which
serialises removals; the lock file is never written to, so it never holds
memory text, and it is left in place because unlinking a lock file lets two
processes lock different inodes):

1. read the file and locate the entry (byte range ``[start, end)``);
2. write everything else to a private temp file in the same directory
   and ``fsync`` it;
3. re-read the file; if it grew, the growth is appends (the old bytes must
   be an unchanged prefix, else the removal is refused and nothing
   changes), so the same range is removed from the longer content, the
   temp file rewritten, and step 3 repeated until the file stops growing;
4. ``os.replace`` the temp file over the daily file, ``fsync`` the
   directory;
5. salvage: an appender that opened the old file before step 4 writes to
   the old inode after it. A descriptor on the old inode is kept open, so
   any bytes that reach it after the last read are appended to the new
   file (one ``O_APPEND`` write). The old inode has no name any more, so
   nothing can open it again: once no descriptor of any process has it
   open for writing, nothing more can reach it, and one last read ends the
   salvage. The kernel says so exactly: a read lease (``F_SETLEASE``) is
   granted only on a file nobody has open for writing (``no_writers``).
   An appender stalled between its ``open`` and its ``write``, however
   long, is waited for, up to ``SALVAGE_WRITER_WAIT_S``.

The remaining window, honestly: a writer that keeps the old file open for
longer than ``SALVAGE_WRITER_WAIT_S`` (no appender of memory files does:
they open, write and close) and writes after that is lost. Where the kernel
cannot tell (a file system without leases, such as some network mounts, or
a daily file owned by another user), the salvage falls back to stopping once
the old inode has been quiet for ``SALVAGE_QUIET_S``, and an appender
stalled for longer than that between its open and its write is lost. A
salvaged entry may also land after entries written to the new file in the
meantime, so entries can be out of time order by that much. Anything that
rewrites the file other than by appending (an editor) during a removal makes
the removal fail without changing anything.

No copy of the removed text is written anywhere: the temp file holds only
the text that stays, and is removed on every path (renamed over the daily
file, or unlinked on error; after a ``kill -9`` by the next removal, when it
takes the lock); the lock file stays empty. The returned
``Removed.markdown`` is the only record.

``RewriteHooks`` are the fault hooks of steps 2 to 5, for tests that widen
the race with appenders or fail the rename; memlane itself never passes any.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import re
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memlane.core.diskspace import disk_full_error, is_disk_full
from memlane.core.errors import ConflictError, NotFoundError, StoreError
from memlane.core.faults import step
from memlane.core.locks import flocked
from memlane.core.regular_file import read_all_from
from memlane.store import safe_paths
from memlane.store.chunker import chunk_markdown
from memlane.store.damage import check_bytes
from memlane.store.durable import append_whole, fsync_dirs
from memlane.store.forget_locate import Kind, Span, decode, locate_line, locate_time, parse_time
from memlane.store.leftovers import sweep_forget_temps

LOCK_NAME = ".forget.lock"
#: Where the kernel cannot say whether the old inode is still open for
#: writing, the salvage (step 5) stops after it has not grown for this long.
SALVAGE_QUIET_S = 0.05
#: The salvage waits this long at most for the last writer of the old inode
#: to close it (memory appenders hold it for one write).
SALVAGE_WRITER_WAIT_S = 30.0
#: Step 3 gives up when the file keeps growing for this many rounds.
MAX_ROUNDS = 1000

_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DAILY_NAME_RE = re.compile(r"^\d{4}-\d{2}-\d{2}\.md$")


@dataclass(frozen=True)
class RewriteHooks:
    """The fault hooks of a removal's rewrite (steps 2 to 4 above).

    ``temp_written()`` runs after each (fsynced) write of the temp file,
    before the daily file is read again: a test slows the rewrite there so
    appends keep landing mid-removal. ``replace(temp, daily_file)`` is step
    4's rename: a test fails it (a full disk) or appends to the old inode
    around it (a late appender). ``quiet()`` runs each time step 5 finds the
    old inode quiet, before it asks whether a writer still holds it: a test
    lets a stalled appender write only then. The defaults are the real steps.
    """

    temp_written: Callable[[], None] = field(default=lambda: None)  # nothing, by default
    replace: Callable[[str, Path], None] = os.replace
    quiet: Callable[[], None] = field(default=lambda: None)


@dataclass(frozen=True)
class Removed:
    """What a redaction took out of a daily file, verbatim.

    ``start_line``/``end_line`` are the heading's line and the block's last
    line (its trailing blank line included), numbered as before the
    removal. ``markdown`` is exactly the bytes removed, so it starts with a
    blank line when the entry was the last thing in the file (that
    separator went with it). ``notices`` come from the engine (index
    problems after the removal).
    """

    source: str
    start_line: int  # 1-based, inclusive, as numbered before the removal
    end_line: int
    markdown: str
    kind: Kind
    notices: tuple[str, ...] = ()

    def fingerprint(self) -> str:
        """A short digest of what is removed and where: a confirmation shows
        it, and the removal is refused when the file no longer gives it."""
        key = f"{self.source}\0{self.start_line}\0{self.end_line}\0{self.markdown}"
        return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "markdown": self.markdown,
            "kind": self.kind,
            "notices": list(self.notices),
        }


# -- the rewrite -------------------------------------------------------------------


@contextlib.contextmanager
def _store_lock(store_dir: Path) -> Iterator[None]:
    try:
        fd = safe_paths.open_store_file(
            store_dir, store_dir / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644
        )
    except OSError as exc:
        raise StoreError(
            f"cannot lock {store_dir} to remove an entry: {exc.strerror or exc}",
            "check that the store directory is writable by your user; nothing was removed",
        ) from None
    try:
        with flocked(fd):
            step("forget.locked")
            # A removal killed midway left its temporary file (only the text that
            # stays); only a holder of this lock makes one, so it is a leftover.
            sweep_forget_temps(store_dir)
            yield
    finally:
        os.close(fd)


def _write_temp(fd: int, data: bytes) -> None:
    os.ftruncate(fd, 0)
    view = memoryview(data)
    offset = 0
    while offset < len(view):
        offset += os.pwrite(fd, view[offset:], offset)
    os.fsync(fd)


def _append(path: Path, data: bytes) -> None:
    # All or nothing, under the file's lock, never through a link, like every
    # appender (store/durable.py).
    append_whole(path, data, what="the appends being restored")


def no_writers(fd: int) -> bool | None:
    """Whether no descriptor, in any process, has ``fd``'s file open for
    writing; None when the kernel cannot say here.

    Linux grants a read lease only on such a file (fcntl(2), F_SETLEASE),
    and the lease is released at once: it exists only to ask.
    """
    set_lease = getattr(fcntl, "F_SETLEASE", None)  # Linux only
    if set_lease is None:
        return None
    try:
        fcntl.fcntl(fd, set_lease, fcntl.F_RDLCK)
    except OSError as exc:
        if exc.errno == errno.EAGAIN:
            return False
        return None  # no leases on this file system, or not the file's owner
    with contextlib.suppress(OSError):
        fcntl.fcntl(fd, set_lease, fcntl.F_UNLCK)
    return True


def _salvage(old_fd: int, seen: int, new_path: Path, hooks: RewriteHooks) -> None:
    """Step 5: move appends that reached the replaced inode to the new file,
    until nothing more can reach it (module docstring)."""
    started = quiet_since = time.monotonic()
    while True:
        # Read under the old file's lock: an append cut short by a full disk
        # is rolled back under that lock, so its torn bytes are never copied.
        with flocked(old_fd, exclusive=False):
            late = read_all_from(old_fd, seen)
        if late:
            _append(new_path, late)
            seen += len(late)
            quiet_since = time.monotonic()
            continue
        now = time.monotonic()
        if now - quiet_since >= SALVAGE_QUIET_S:
            hooks.quiet()
            closed = no_writers(old_fd)
            if closed or (closed is None) or now - started >= SALVAGE_WRITER_WAIT_S:
                break
        time.sleep(SALVAGE_QUIET_S / 5)
    if closed:
        # The last writer closed after the read above: what it wrote is there.
        with flocked(old_fd, exclusive=False):
            late = read_all_from(old_fd, seen)
        if late:
            _append(new_path, late)


def _daily_file(store_dir: Path, source: Path) -> Path:
    # A linked store or daily file is refused (store/safe_paths.py): the
    # rewrite would otherwise read and replace a file outside the store.
    store = safe_paths.check_store_root(store_dir)
    path = source.expanduser()
    path = (store / path) if not path.is_absolute() else path
    if path.is_symlink():
        raise safe_paths.link_error(path)
    real = path.resolve()
    if real.parent != store or not _DAILY_NAME_RE.match(real.name):
        raise StoreError(
            f"{source} is not a daily memory file of the store {store}",
            "memory_forget only removes entries from <store>/YYYY-MM-DD.md; "
            "use memory_topic remove for topics",
        )
    return real


def _remove(
    store_dir: Path,
    source: Path,
    locate: Callable[[bytes, Path], Span],
    hooks: RewriteHooks | None,
    dry_run: bool = False,
    expect: str | None = None,
    rewrite: Callable[[str], str] | None = None,
) -> Removed:
    """Remove the located block, or (*rewrite*) put ``rewrite(block)`` in its
    place: a correction takes the same steps, lock and checks as a removal."""
    hooks = hooks or RewriteHooks()
    path = _daily_file(store_dir, source)
    with _store_lock(path.parent):
        try:
            fd = safe_paths.open_store_file(path.parent, path, os.O_RDONLY)
        except FileNotFoundError:
            raise NotFoundError(f"no daily memory file {path}") from None
        try:
            data = read_all_from(fd)
            span: Span = locate(data, path)
            removed = data[span.start : span.end]
            # Decode before anything changes: the echo is the only copy left
            # of the removed text, so a file that cannot be shown is refused.
            markdown = decode(removed, path)
            if expect is not None and _removed(path, span, markdown).fingerprint() != expect:
                # Checked under the lock: nothing can change the file between
                # this comparison and the rewrite below.
                raise ConflictError(
                    f"{path} changed since the removal was confirmed; nothing was removed",
                    "review the entry again and confirm what it is now",
                )
            if dry_run:
                return _removed(path, span, markdown)
            instead = rewrite(markdown).encode("utf-8") if rewrite is not None else b""
            mode = os.fstat(fd).st_mode & 0o7777
            try:
                temp_fd, temp_name = tempfile.mkstemp(
                    prefix=f".{path.name}.forget-", suffix=".tmp", dir=path.parent
                )
            except OSError as exc:
                if is_disk_full(exc):
                    raise disk_full_error(path, "nothing was removed") from None
                raise StoreError(
                    f"cannot write in {path.parent}: {exc.strerror or exc}",
                    "check that the store directory is writable by your user; nothing was removed",
                ) from None
            try:
                os.fchmod(temp_fd, mode)
                for _ in range(MAX_ROUNDS):
                    try:
                        _write_temp(temp_fd, data[: span.start] + instead + data[span.end :])
                    except OSError as exc:
                        if is_disk_full(exc):
                            raise disk_full_error(path, "nothing was removed") from None
                        raise StoreError(
                            f"cannot write the new copy of {path}: {exc.strerror or exc}",
                            "check the store directory and the disk; nothing was removed",
                        ) from None
                    step("forget.temp_written")
                    hooks.temp_written()
                    now = read_all_from(fd)
                    if now == data:
                        break
                    if not now.startswith(data):
                        raise StoreError(
                            f"{path} was rewritten (not just appended to) during the removal; "
                            "nothing was removed",
                            "try again",
                        )
                    data = now
                else:
                    raise StoreError(
                        f"{path} kept growing during the removal; nothing was removed",
                        "try again when fewer agents are writing",
                    )
                hooks.replace(temp_name, path)
                step("forget.rewritten")
            finally:
                os.close(temp_fd)
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(temp_name)
            fsync_dirs([path.parent])
            _salvage(fd, len(data), path, hooks)
            step("forget.salvaged")
        finally:
            os.close(fd)
    return _removed(path, span, markdown)


def _removed(path: Path, span: Span, markdown: str) -> Removed:
    return Removed(
        source=str(path),
        start_line=span.first + 1,
        end_line=span.last + 1,
        markdown=markdown,
        kind=span.kind,
    )


# -- public API ----------------------------------------------------------------------


def forget_chunk(
    store_dir: Path,
    source: str | Path,
    start_line: int,
    *,
    chunk_hash: str | None = None,
    model: str = "",
    hooks: RewriteHooks | None = None,
    dry_run: bool = False,
    expect: str | None = None,
    rewrite: Callable[[str], str] | None = None,
) -> Removed:
    """Remove the entry (or compact block) holding line *start_line* of *source*.

    ``dry_run``: find it by the same rules and return what would be removed,
    changing nothing (the web viewer's confirmation page). ``expect``: the
    ``Removed.fingerprint`` that confirmation showed; when what the file
    gives now differs, ``ConflictError`` and nothing is removed. ``rewrite``:
    correct it instead: the block is replaced by ``rewrite(block)``
    (store/daily.py's ``corrected_entry``).

    With *chunk_hash*, the file as it is now (read under the lock) must
    still produce that chunk at *start_line* with *model*; otherwise the
    index is stale and nothing is removed. *hooks*: ``RewriteHooks``.
    """

    def locate(data: bytes, path: Path) -> Span:
        if chunk_hash is not None:
            # Read as the indexer reads it (damaged lines empty), so an intact
            # entry of a damaged file has the hash the index holds.
            current = chunk_markdown(check_bytes(data, path).text, str(source), model)
            if not any(c.chunk_hash == chunk_hash and c.start_line == start_line for c in current):
                raise NotFoundError(
                    f"chunk {chunk_hash} no longer matches {path} (the file changed since "
                    "it was indexed); nothing was removed",
                    "run `memlane search` again for current chunk hashes",
                )
        return locate_line(data, start_line, path)

    return _remove(store_dir, Path(source), locate, hooks, dry_run, expect, rewrite)


def forget_entry(
    store_dir: Path,
    date: str,
    hhmm: str,
    *,
    model: str | None = None,
    hooks: RewriteHooks | None = None,
    dry_run: bool = False,
    expect: str | None = None,
    rewrite: Callable[[str], str] | None = None,
) -> Removed:
    """Remove the one entry headed ``### HH:MM`` (or the compact block headed
    ``## Memory Compact HH:MM``) in ``<store>/<date>.md``; ``dry_run``,
    ``expect`` and ``rewrite`` as ``forget_chunk``'s.

    *hhmm* ``"14:03#2"`` is the second of the entries headed 14:03; a bare
    time that several headings carry is refused, listing them (with their
    chunk hashes for *model*, when given). *hooks*: ``RewriteHooks``.
    """
    date = date.strip()
    if not _DATE_RE.match(date):
        raise StoreError(f"invalid date {date[:20]!r}", "use YYYY-MM-DD, e.g. 2026-03-14")
    address = parse_time(hhmm)
    path = store_dir / f"{date}.md"
    if not path.is_file() and not path.is_symlink():
        raise NotFoundError(f"no daily memory file for {date} ({path})")
    # The source string the indexer gives this file (store/layout.py), so the
    # chunk hashes a refusal shows are the ones search shows.
    source = str(store_dir.expanduser().resolve() / path.name)
    return _remove(
        store_dir,
        path,
        lambda data, p: locate_time(data, address, p, source=source, model=model),
        hooks,
        dry_run,
        expect,
        rewrite,
    )
