"""The capture log: an exchange answered ``queued: true`` is on disk first.

``Session.agent_settled`` answers before distillation, which runs in the
background for up to ``DISTILL_TIMEOUT_MS`` per exchange. Without a capture log,
a ``kill -9`` (an OOM kill, a crashed host) loses every exchange still in the
queue. So before the answer, the redacted exchange is appended to this
session's capture log and fsynced; once its entry is in the daily file (and that
file is fsynced) the log marks it done. The next session started on the
project adopts the capture log of any session that is gone and writes what it
left (engine/journal/capture_recovery.py; ``Session`` distils it, or writes the
digest form).

It is a write-ahead log of exchanges, not the ``journal`` kind of memory (the
daily notes): see the Words table in docs/architecture.md.

Layout: ``<state dir>/.capture-journal/`` (the directory of
``.index-state.json``; ``$MEMLANE_HOME/capture/<collection>`` when the store
has no state directory), one JSONL file per session, ``<pid>-<hex>.jsonl``.
One file per session rather than one shared file, because:

* the owner holds an exclusive ``flock`` on its file for as long as it is
  open, and the kernel drops it when the process dies however it dies: a
  non-blocking lock that succeeds is the proof that the owner is gone, with
  no pid-reuse guesswork, and a live concurrent session keeps its queue;
* appends never contend with other sessions, and compacting a file is its
  owner's business alone.

Lines (each one ``os.write`` of a whole line): a header ``{"kind": "journal",
"pid", "session", "host", "opened"}``, then ``{"kind": "pending", "key",
"session", "turn", "transcript", "at", "user", "assistant", "clipped"}`` per
acknowledged exchange and ``{"kind": "done", "key", "how"}`` when its entry
is written. A line that does not parse (the torn last line of a killed
process) is skipped, never fatal. The anchor (session + turn) is fixed when
the exchange is logged, so an entry that reached the daily file before a
kill, but not its done mark, is recognised there and not written twice.

Bounds: each text is kept whole up to ``LOG_TEXT_CHARS`` (distillation
reads at most ``distill.PROMPT_MAX_CHARS`` of it anyway), longer ones as their
head. The owner empties its file (down to the header) whenever nothing is
pending, and rewrites it without done records once they exceed
``COMPACT_DONE_BYTES``; a clean shutdown deletes it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import secrets
import threading
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlane.core.locks import lock_fd
from memlane.core.types import Anchor, Exchange
from memlane.store.durable import fsync_dirs

if TYPE_CHECKING:
    from memlane.core.scope import Scope

# The on-disk names keep the older word ("journal"): existing stores hold them.
LOG_DIR_NAME = ".capture-journal"
LOG_SUFFIX = ".jsonl"
TEMP_SUFFIX = ".tmp"
FORMAT_VERSION = 1
# The kind of a record blanked out once its entry was written.
SCRUBBED = "scrubbed"
#: A text up to this long is logged whole; a longer one as its head.
LOG_TEXT_CHARS = 12_000
#: The owner rewrites its log without done records past this many bytes of them.
COMPACT_DONE_BYTES = 256 * 1024
CLIPPED_NOTE = "[… the rest was not kept in the capture log]"

# How an entry left the log (``done`` records, the recovered counters).
DISTILLED = "distilled"
DIGEST = "digest"
FOUND = "found"  # already in the daily file: a kill came between the write and its mark

_SURROGATE_RE = re.compile(r"[\ud800-\udfff]")


def capture_log_dir(scope: Scope) -> Path:
    """Where this project's capture logs live."""
    if scope.state_dir is not None:
        return scope.state_dir / LOG_DIR_NAME
    from memlane.core.paths import memlane_home

    return memlane_home() / "capture" / scope.collection


def log_copy(text: str) -> tuple[str, bool]:
    """The redacted text the log keeps, and whether it is only the head.

    A text longer than ``LOG_TEXT_CHARS`` is cut at its last line break
    before the limit and only then redacted: the cut never splits a line,
    and an unclosed ``<private>`` block or key block is redacted to the end.
    """
    from memlane.store.redaction import redact

    clipped = len(text) > LOG_TEXT_CHARS
    if clipped:
        head = text[:LOG_TEXT_CHARS]
        cut = head.rfind("\n")
        text = head[:cut] if cut > 0 else head
    redacted = _SURROGATE_RE.sub("\ufffd", redact(text).text)
    return (f"{redacted}\n{CLIPPED_NOTE}" if clipped else redacted), clipped


@dataclass(frozen=True)
class Pending:
    """One acknowledged exchange, as logged: already redacted, its anchor fixed."""

    key: str
    anchor: Anchor
    at: datetime
    user: str
    assistant: str
    clipped: bool = False

    def exchange(self) -> Exchange:
        return Exchange(
            user=self.user,
            assistant=self.assistant,
            entry_id=self.anchor.turn,
            session_id=self.anchor.session,
            transcript_path=self.anchor.transcript,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "pending",
            "key": self.key,
            "session": self.anchor.session,
            "turn": self.anchor.turn,
            "transcript": self.anchor.transcript,
            "at": self.at.isoformat(),
            "user": self.user,
            "assistant": self.assistant,
            "clipped": self.clipped,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Pending:
        return cls(
            key=str(data["key"]),
            anchor=Anchor(
                session=str(data["session"]),
                turn=str(data["turn"]),
                transcript=str(data["transcript"]),
            ),
            at=datetime.fromisoformat(str(data["at"])),
            user=str(data["user"]),
            assistant=str(data["assistant"]),
            clipped=bool(data.get("clipped", False)),
        )


def new_key() -> str:
    return secrets.token_hex(6)


@dataclass
class Contents:
    """What a capture-log file holds: its header, what is still pending, and damage."""

    header: dict[str, Any] | None
    pending: dict[str, Pending]
    done_bytes: int
    damaged: int
    # Where each pending record's line is in the file: (offset, length).
    spans: dict[str, tuple[int, int]] = field(default_factory=dict)


def parse(data: bytes) -> Contents:
    """Every intact line of a capture log; a torn or garbled line is counted, not fatal."""
    header: dict[str, Any] | None = None
    pending: dict[str, Pending] = {}
    spans: dict[str, tuple[int, int]] = {}
    done_bytes = 0
    damaged = 0
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    elif lines:
        lines.pop()  # no line break after it: a write cut short by a kill
        damaged += 1
    offset = 0
    for line in lines:
        start, offset = offset, offset + len(line) + 1
        try:
            record = json.loads(line)
            kind = record["kind"]
            if kind == "journal":  # the header record's on-disk kind
                header = record
            elif kind == "pending":
                item = Pending.from_json(record)
                pending[item.key] = item
                spans[item.key] = (start, len(line) + 1)
            elif kind == "done":
                gone = pending.pop(str(record["key"]), None)
                spans.pop(str(record["key"]), None)
                if gone is not None:
                    done_bytes += len(line) + 1 + _line_size(gone)
            elif kind == SCRUBBED:
                pass  # a written exchange whose text was blanked out
            else:
                damaged += 1
        except (ValueError, KeyError, TypeError):
            damaged += 1
    return Contents(header, pending, done_bytes, damaged, spans)


def _overwrite(fd: int, data: bytes, offset: int) -> None:
    """pwrite at *offset* on a descriptor opened ``O_APPEND`` (where Linux's
    pwrite would append): the flag is lifted for the write, under the
    log's lock, since only its owner writes to it."""
    flags = fcntl.fcntl(fd, fcntl.F_GETFL)
    fcntl.fcntl(fd, fcntl.F_SETFL, flags & ~os.O_APPEND)
    try:
        os.pwrite(fd, data, offset)
    finally:
        fcntl.fcntl(fd, fcntl.F_SETFL, flags)


def _scrubbed(length: int) -> bytes:
    """A line of exactly *length* bytes (its newline included) that holds nothing."""
    filler = _line({"kind": SCRUBBED})
    return filler[:-1] + b" " * (length - len(filler)) + b"\n"


def _line(record: dict[str, Any]) -> bytes:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


def _line_size(item: Pending) -> int:
    return len(_line(item.to_json()))


class CaptureLogError(Exception):
    """The capture log could not be written (the exchange stays queued in memory only)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class CaptureLog:
    """One session's capture-log file, locked by this process while it is open.

    ``adopted`` files belong to a session that is gone: nothing new is
    appended to them, and they are deleted once nothing is pending.
    """

    def __init__(
        self, path: Path, fd: int, contents: Contents, *, adopted: bool, header_len: int
    ) -> None:
        self.path = path
        self.adopted = adopted
        self.header = contents.header or {}
        self._fd: int | None = fd
        self._pending = dict(contents.pending)
        self._spans = dict(contents.spans)
        self._done_bytes = contents.done_bytes
        self._header_len = header_len
        # A new log's name is made durable with its first entry (append), not
        # before: until then the file holds nothing a crash could lose.
        self._name_synced = adopted or bool(self._pending)
        self._lock = threading.Lock()

    @classmethod
    def create(cls, directory: Path, header: dict[str, Any]) -> CaptureLog:
        """A new, locked capture log for this session, its header written. It is
        fsynced with its first entry (``append``): a log holding only its header
        keeps nothing, and one fsync fewer is a millisecond or more off the first
        capture of every session (each ``codex exec`` is one)."""
        try:
            directory.mkdir(parents=True, exist_ok=True)
            path, fd = _create_locked(directory)
        except OSError as exc:
            raise CaptureLogError(
                f"cannot create a capture log in {directory}: {_why(exc)}"
            ) from None
        try:
            record = {"kind": "journal", "v": FORMAT_VERSION, **header, "pid": os.getpid()}
            data = _line(record)
            _write_whole(fd, data, 0)
        except OSError as exc:
            os.close(fd)
            with contextlib.suppress(OSError):
                path.unlink()
            raise CaptureLogError(f"cannot write the capture log {path}: {_why(exc)}") from None
        return cls(path, fd, Contents(record, {}, 0, 0), adopted=False, header_len=len(data))

    @property
    def pending(self) -> list[Pending]:
        with self._lock:
            return list(self._pending.values())

    def append(self, item: Pending) -> None:
        """Log *item* durably (fsync); all or nothing (a short write is rolled back)."""
        data = _line(item.to_json())
        with self._lock:
            fd = self._require_open()
            start = os.fstat(fd).st_size
            try:
                _write_whole(fd, data, start)
                os.fsync(fd)  # the header too, on a new log
                if not self._name_synced:
                    fsync_dirs([self.path.parent])
                    self._name_synced = True
            except OSError as exc:
                raise CaptureLogError(
                    f"cannot append to the capture log {self.path}: {_why(exc)}"
                ) from None
            self._pending[item.key] = item
            self._spans[item.key] = (start, len(data))

    def mark_done(self, key: str, how: str) -> None:
        """*key*'s entry is in the daily file (fsynced): it leaves the log.

        Not fsynced itself: if a power cut loses this line, the entry's anchor
        in the daily file still says it was written.
        """
        with self._lock:
            item = self._pending.pop(key, None)
            span = self._spans.pop(key, None)
            fd = self._fd
            if item is None or fd is None:
                return
            record = _line({"kind": "done", "key": key, "how": how})
            try:
                if self.adopted and not self._pending:
                    self._delete()
                    return
                if span is not None and span[1] >= len(_line({"kind": SCRUBBED})):
                    # The entry is in the daily file now: no second copy of
                    # its text stays here (a later forget must find none).
                    _overwrite(fd, _scrubbed(span[1]), span[0])
                start = os.fstat(fd).st_size
                _write_whole(fd, record, start)
                self._done_bytes += len(record) + _line_size(item)
                if self.adopted:
                    return
                if not self._pending:
                    os.ftruncate(fd, self._header_len)  # everything is written: start over
                    self._done_bytes = 0
                elif self._done_bytes > COMPACT_DONE_BYTES:
                    self._rewrite()
            except OSError:
                # The entry is written; a missing done mark only costs a
                # look at the daily file when this log is recovered.
                pass

    def close(self) -> None:
        """Release the log: deleted when nothing is pending, else left for recovery."""
        with self._lock:
            if self._fd is None:
                return
            if not self._pending:
                with contextlib.suppress(OSError):
                    self._delete()  # closes it, even when the unlink fails
                return
            os.close(self._fd)
            self._fd = None

    # -- internals -----------------------------------------------------------------------

    def _require_open(self) -> int:
        if self._fd is None:
            raise CaptureLogError(f"the capture log {self.path} is closed")
        return self._fd

    def _delete(self) -> None:
        """Unlink while still locked, then let go (a recoverer that opened the
        old file meanwhile sees it is gone: ``_adopt`` checks the inode)."""
        assert self._fd is not None
        try:
            self.path.unlink(missing_ok=True)
        finally:
            os.close(self._fd)
            self._fd = None

    def _rewrite(self) -> None:
        """Only the header and the pending records, into a locked temporary file renamed over."""
        assert self._fd is not None
        temp = self.path.with_name(f".{self.path.name}.{secrets.token_hex(4)}{TEMP_SUFFIX}")
        fd = os.open(temp, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            lock_fd(fd, wait=False)
            header = _line(self.header)
            lines = [_line(p.to_json()) for p in self._pending.values()]
            data = header + b"".join(lines)
            _write_whole(fd, data, 0)
            os.fsync(fd)
            os.rename(temp, self.path)  # the new inode is locked before anyone can see it
        except OSError:
            os.close(fd)
            with contextlib.suppress(OSError):
                temp.unlink()
            raise
        fsync_dirs([self.path.parent])
        os.close(self._fd)
        self._fd = fd
        self._header_len = len(header)
        self._done_bytes = 0
        offset, self._spans = len(header), {}
        for key, line in zip(self._pending, lines, strict=True):
            self._spans[key] = (offset, len(line))
            offset += len(line)


def _create_locked(directory: Path) -> tuple[Path, int]:
    """A new capture-log file, locked by this process, still linked under its name.

    Between its creation and the lock, a session starting elsewhere may take
    the empty file for a dead session's and delete it; then a new one is made.
    """
    for _attempt in range(5):
        path = directory / f"{os.getpid()}-{secrets.token_hex(4)}{LOG_SUFFIX}"
        flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
        fd = os.open(path, flags, 0o600)
        try:
            lock_fd(fd)
            if os.stat(path).st_ino == os.fstat(fd).st_ino:
                return path, fd
        except OSError:
            pass
        os.close(fd)
    raise OSError(errno.EEXIST, "every new capture-log file was taken away at once")


def _write_whole(fd: int, data: bytes, start: int) -> None:
    """One write of *data* at the end of *fd*, rolled back to *start* if it falls short."""
    try:
        written = os.write(fd, data)
    except OSError:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, start)
        raise
    if written != len(data):
        with contextlib.suppress(OSError):
            os.ftruncate(fd, start)
        raise OSError(errno.ENOSPC, "short write")


def _why(exc: OSError) -> str:
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return "the disk is full (free some space)"
    return str(exc.strerror or exc)


def fsync_file(path: str | Path) -> None:
    """Flush a file just appended to (the daily file, before its done mark)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
