"""The sessions layer's ingestion: the project's agent transcripts, message by message.

pi-lcm-memory (reference/pi-lcm-memory-readme.txt) re-implemented on
memlane's own session store (``index/sqlite/sessions.py``), reading the
transcripts directly instead of pi-lcm's database:

- **sources**: pi's session files (``<agent dir>/sessions/--<cwd>--/*.jsonl``,
  or the flat ``$PI_CODING_AGENT_SESSION_DIR`` filtered by the header's cwd)
  and Claude Code's (``<claude dir>/projects/<cwd, non-alphanumerics as
  '-'>/*.jsonl``);
- **backfill**: every unread byte of every source, in batches of
  ``BATCH_SIZE`` documents: embed the batch, then one transaction stores its
  rows, their vectors and each file's new byte offset. A kill loses at most
  the batch in flight; the rerun starts at the stored offsets and finds the
  committed rows already there (no duplicate, no second embedding);
- **hook path**: ``SessionIndexer.index_new(path)`` only enqueues (the host's
  call returns at once); a worker thread reads the file from its stored
  offset;
- **sweep path**: ``Sweeper.tick()`` picks up files other sessions and
  agents wrote; its thread runs every ``sweep_interval_ms``, doubling while
  idle up to ``sweep_max_interval_ms``, back to the base on activity.

A file that grew is read on from its offset; one that shrank, changed inode,
changed its first bytes or the bytes just before the offset (or no longer
has a line end there) was rewritten and is read whole (its documents
replaced). Only complete lines are consumed: a partial last line waits for
its newline. Garbage lines and unknown entry types are counted, never fatal.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import os
import queue
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from memlane.core.clock import SYSTEM_CLOCK, Clock, from_epoch
from memlane.core.errors import EmbedderError, MemlaneError
from memlane.core.regular_file import (
    FileTooLargeError,
    NotRegularFileError,
    open_regular_file,
    read_regular_file,
)
from memlane.core.settings import SessionsSettings
from memlane.core.trace import trace
from memlane.core.types import Hit, SearchResult
from memlane.engine.journal.echo import is_memlane_tool, is_recall_prompt
from memlane.engine.sessions.own_messages import OwnCalls, may_hold_own_messages
from memlane.index.session_docs import (
    ROLES,
    BatchWrite,
    ScoredDoc,
    SessionDoc,
    SessionFilters,
    SessionInfo,
    SourceState,
    StoredDoc,
)
from memlane.index.sqlite.sessions import SessionStore, sessions_path_for
from memlane.transcripts import claude as claude_format
from memlane.transcripts.draft import text_of_blocks
from memlane.transcripts.jsonl import TRANSCRIPT_MAX_BYTES, parse_line
from memlane.transcripts.model import CLAUDE_CODE, PI

if TYPE_CHECKING:
    from memlane.embed.base import Embedder
    from memlane.engine.project import Memory
    from memlane.engine.reports import Progress

PI_AGENT_DIR_ENV = "PI_CODING_AGENT_DIR"
PI_SESSION_DIR_ENV = "PI_CODING_AGENT_SESSION_DIR"
CLAUDE_CONFIG_DIR_ENV = "CLAUDE_CONFIG_DIR"

BATCH_SIZE = 32  # documents per transaction (pi-lcm-memory's batches of 32)
# Batches whose texts go to the embedder in one call: the bundled model then
# runs them concurrently on both cores (measured: 115 -> see bench_sessions).
EMBED_GROUP = 8
# The rewrite check hashes this many leading bytes (or fewer, as many as
# the file had when first read).
HEAD_BYTES = 1024
# ... and this many bytes just before the stored offset: an in-place rewrite
# that keeps the head (and does not shrink) changes them. A few lines' worth
# (pi and Claude lines run 0.3-2 KiB), still one small read per changed file.
TAIL_BYTES = 4096
# Bounds on what one document stores: a pasted log or a huge tool output
# would bloat the FTS index without helping recall.
MAX_TEXT_CHARS = 8000
MAX_TOOL_CHARS = 2000
SEARCH_K_MAX = 100
SEARCH_MODES = ("hybrid", "lexical", "semantic")

# Sweeper status rows in the store's meta table (``memlane sessions status``).
META_SWEEP_CYCLES = "sweep.cycles"
META_SWEEP_BUSY = "sweep.busy"
META_SWEEP_LAST_ERROR = "sweep.last_error"
META_SWEEP_INTERVAL_MS = "sweep.interval_ms"
META_SWEEP_LAST_AT = "sweep.last_at"
META_SWEEP_LAST_ADDED = "sweep.last_added"
META_SWEEP_PID = "sweep.pid"
# Which rules made the stored documents: bumped when a rule leaves out or
# words differently what an earlier one stored (1: memlane's own tool calls,
# results and /recall prompts are not documents). A store made under older
# rules has its transcripts re-read once (engine/sessions/own_messages.py).
DOCS_RULES_VERSION = 1
META_DOCS_RULES = "docs.rules"

# pi entry types that are never documents (known, so not "unknown").
_PI_SILENT_TYPES = frozenset(
    {"model_change", "thinking_level_change", "custom", "label", "session_info", "custom_message"}
)
_PI_SILENT_ROLES = frozenset({"custom", "hookMessage"})
_CLAUDE_SILENT_TYPES = claude_format.METADATA_TYPES | claude_format.CHAIN_TYPES | {"system"}


# -- locating the project's transcripts ---------------------------------------------------


def pi_session_dir_name(cwd: str) -> str:
    """pi's directory name for a cwd (session-manager.js getDefaultSessionDir):
    one leading separator dropped, every ``/``, ``\\`` and ``:`` → ``-``,
    wrapped in ``--``."""
    return "--" + re.sub(r"[/\\:]", "-", re.sub(r"^[/\\]", "", cwd)) + "--"


def claude_project_dir_name(cwd: str) -> str:
    """Claude Code's directory name for a cwd: every non-alphanumeric → ``-``."""
    return re.sub(r"[^A-Za-z0-9]", "-", cwd)


@dataclass(frozen=True)
class Source:
    path: Path
    format: str  # PI | CLAUDE_CODE


def _expand(raw: str) -> Path:
    return Path(raw).expanduser()


def pi_agent_dir(env: Mapping[str, str]) -> Path:
    raw = env.get(PI_AGENT_DIR_ENV)
    return _expand(raw) if raw else Path.home() / ".pi" / "agent"


def claude_dir(env: Mapping[str, str]) -> Path:
    raw = env.get(CLAUDE_CONFIG_DIR_ENV)
    return _expand(raw) if raw else Path.home() / ".claude"


def open_transcript_file(path: Path) -> BinaryIO:
    """A transcript opened the safe way: a regular file only, never blocking,
    at most ``TRANSCRIPT_MAX_BYTES`` (core/regular_file.py)."""
    return open_regular_file(path, max_bytes=TRANSCRIPT_MAX_BYTES, what="transcript")


def _jsonl_files(directory: Path) -> list[Path]:
    try:
        return sorted(p for p in directory.glob("*.jsonl") if p.is_file())
    except OSError:
        return []


def _pi_header_cwd(path: Path) -> str | None:
    try:
        with open_transcript_file(path) as handle:
            obj = parse_line(handle.readline(64 * 1024))
    except (OSError, NotRegularFileError, FileTooLargeError):
        return None
    if obj is None or obj.get("type") != "session":
        return None
    cwd = obj.get("cwd")
    return cwd if isinstance(cwd, str) else None


def discover_sources(
    project_dirs: Iterable[str | Path], env: Mapping[str, str] | None = None
) -> list[Source]:
    """Transcript files of agent sessions started in any of ``project_dirs``."""
    env = os.environ if env is None else env
    cwds: list[str] = []
    for directory in project_dirs:
        for form in (str(Path(directory).absolute()), os.path.realpath(directory)):
            if form not in cwds:
                cwds.append(form)
    found: dict[Path, Source] = {}
    flat = env.get(PI_SESSION_DIR_ENV)
    if flat:
        # One directory for every project: keep the files whose header names ours.
        for path in _jsonl_files(_expand(flat)):
            if _pi_header_cwd(path) in cwds:
                found[path] = Source(path, PI)
    else:
        sessions = pi_agent_dir(env) / "sessions"
        for cwd in cwds:
            for path in _jsonl_files(sessions / pi_session_dir_name(cwd)):
                found[path] = Source(path, PI)
    projects = claude_dir(env) / "projects"
    for cwd in cwds:
        for path in _jsonl_files(projects / claude_project_dir_name(cwd)):
            found.setdefault(path, Source(path, CLAUDE_CODE))
    return sorted(found.values(), key=lambda s: str(s.path))


# -- lines to documents -----------------------------------------------------------------


def utc_iso(value: object) -> str | None:
    """A transcript timestamp (ISO string or epoch number) as UTC ``...mmmZ``."""
    moment: datetime
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        seconds = value / 1000 if value > 1e11 else float(value)
        if seconds <= 0:
            return None
        moment = from_epoch(seconds)
    elif isinstance(value, str) and value:
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
    else:
        return None
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def normalize_bound(text: str | None, name: str) -> str | None:
    """A user's after/before bound in the stored timestamps' form.

    A bare date stays a date (it sorts before every time of that day); any
    other ISO 8601 moment is converted to UTC.
    """
    if text is None or not text.strip():
        return None
    text = text.strip()
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        return text
    shown = utc_iso(text)
    if shown is None:
        raise MemlaneError(
            f"{name} must be an ISO 8601 date or time, got {text!r}",
            "e.g. 2026-08-13 or 2026-08-13T14:00:00Z",
        )
    return shown


# Redaction scans this much past a document's limit, so that a secret the
# cut would halve is still recognised whole (and no half of it is kept).
CLIP_SCAN_MARGIN = 512


def redact_text(text: str) -> str:
    """*text* with its secrets replaced (store/redaction.py), as the index keeps it."""
    from memlane.store.redaction import redact

    return redact(text).text


def _clip(text: str, limit: int) -> str:
    """The document text: redacted, then cut to *limit* characters."""
    text = redact_text(text.strip()[: limit + CLIP_SCAN_MARGIN]).strip()
    return text if len(text) <= limit else text[:limit] + " …"


def _blocks_text(content: Any) -> str:
    """Text of any content shape, tool results included (their content may
    itself be a string or blocks)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts: list[str] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif block.get("type") == "tool_result":
            parts.append(_blocks_text(block.get("content")))
    return "\n".join(p for p in parts if p)


def _redacted_values(value: object) -> object:
    """*value* with every string in it redacted: scanned as text (real line
    breaks, plain quotes), before JSON escapes hide a secret's context."""
    if isinstance(value, str):
        return redact_text(value[: MAX_TOOL_CHARS + CLIP_SCAN_MARGIN])
    if isinstance(value, dict):
        return {key: _redacted_values(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_redacted_values(item) for item in value]
    return value


def _call_text(name: object, args: object) -> str:
    args = _redacted_values(args)
    shown = json.dumps(args, ensure_ascii=False, sort_keys=True) if args else ""
    return f"{name or '?'}({shown})"


class _Doc:
    """What one line yields before the file's identity is known."""

    __slots__ = ("entry_id", "part", "role", "text", "timestamp")

    def __init__(
        self, entry_id: str, role: str, text: str, timestamp: str | None, part: str = ""
    ) -> None:
        self.entry_id = entry_id
        self.role = role
        self.text = text
        self.timestamp = timestamp
        self.part = part


def pi_docs(obj: dict[str, Any]) -> list[_Doc] | None:
    """Documents of one pi entry; None for an entry type we do not know."""
    kind = obj.get("type")
    entry_id = obj.get("id")
    stamp = utc_iso(obj.get("timestamp"))
    if kind == "session":
        return []
    if not isinstance(entry_id, str) or not entry_id:
        return None
    if kind == "message":
        message = obj.get("message")
        if not isinstance(message, dict):
            return None
        role = message.get("role")
        stamp = stamp or utc_iso(message.get("timestamp"))
        content = message.get("content")
        if role == "user":
            text = text_of_blocks(content)
            if is_recall_prompt(text):
                return []  # memlane's own /recall prompt (engine/sessions/own_messages.py)
            return [_Doc(entry_id, "user", _clip(text, MAX_TEXT_CHARS), stamp)]
        if role == "assistant":
            out = [
                _Doc(entry_id, "assistant", _clip(text_of_blocks(content), MAX_TEXT_CHARS), stamp)
            ]
            calls = [
                _call_text(block.get("name"), block.get("arguments"))
                for block in content or []
                if isinstance(block, dict)
                and block.get("type") == "toolCall"
                and not is_memlane_tool(block.get("name"))
            ]
            if calls:
                out.append(
                    _Doc(entry_id, "tool", _clip("\n".join(calls), MAX_TOOL_CHARS), stamp, "tool")
                )
            return out
        if role == "toolResult":
            if is_memlane_tool(message.get("toolName")):
                return []  # memlane's own answer: recalled memory, not conversation
            text = f"{message.get('toolName') or 'tool'} result: {_blocks_text(content)}"
            return [_Doc(entry_id, "tool", _clip(text, MAX_TOOL_CHARS), stamp)]
        if role == "bashExecution":
            text = f"!{message.get('command')}\n{message.get('output') or ''}"
            return [_Doc(entry_id, "tool", _clip(text, MAX_TOOL_CHARS), stamp)]
        if role in ("branchSummary", "compactionSummary"):
            text = str(message.get("summary") or "")
            return [_Doc(entry_id, "summary", _clip(text, MAX_TEXT_CHARS), stamp)]
        if role in _PI_SILENT_ROLES:
            return []
        return None
    if kind in ("compaction", "branch_summary"):
        return [
            _Doc(entry_id, "summary", _clip(str(obj.get("summary") or ""), MAX_TEXT_CHARS), stamp)
        ]
    if kind in _PI_SILENT_TYPES:
        return []
    return None


def claude_docs(obj: dict[str, Any], own: OwnCalls | None = None) -> list[_Doc] | None:
    """Documents of one Claude Code line; None for a type we do not know.

    ``own`` knows memlane's tool calls met so far in the file (the caller
    notes every line in it first): their results are left out.
    """
    kind = obj.get("type")
    uuid = obj.get("uuid")
    stamp = utc_iso(obj.get("timestamp"))
    if kind in ("user", "assistant"):
        if not isinstance(uuid, str) or not uuid:
            return None
        message = obj.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if kind == "user":
            if obj.get("isCompactSummary"):
                return [
                    _Doc(uuid, "summary", _clip(text_of_blocks(content), MAX_TEXT_CHARS), stamp)
                ]
            if obj.get("isMeta"):
                return []
            if isinstance(content, list) and content:
                types = {b.get("type") for b in content if isinstance(b, dict)}
                if types == {"tool_result"}:
                    results = [
                        b
                        for b in content
                        if isinstance(b, dict)
                        and not (own is not None and own.owns(b.get("tool_use_id")))
                    ]
                    if not results:
                        return []  # only memlane's own answers
                    text = f"tool result: {_blocks_text(results)}"
                    return [_Doc(uuid, "tool", _clip(text, MAX_TOOL_CHARS), stamp)]
            return [_Doc(uuid, "user", _clip(text_of_blocks(content), MAX_TEXT_CHARS), stamp)]
        out = [_Doc(uuid, "assistant", _clip(text_of_blocks(content), MAX_TEXT_CHARS), stamp)]
        calls = [
            _call_text(block.get("name"), block.get("input"))
            for block in content or []
            if isinstance(block, dict)
            and block.get("type") == "tool_use"
            and not is_memlane_tool(block.get("name"))
        ]
        if calls:
            out.append(_Doc(uuid, "tool", _clip("\n".join(calls), MAX_TOOL_CHARS), stamp, "tool"))
        return out
    if kind in _CLAUDE_SILENT_TYPES:
        return []
    return None


def embeds(role: str, settings: SessionsSettings) -> bool:
    """Whether a document of ``role`` gets a vector (else lexical only)."""
    if role in ("user", "assistant"):
        return settings.index_messages
    if role == "summary":
        return settings.index_summaries
    return not settings.skip_tool_io


# -- reading a file from its offset ----------------------------------------------------------


@dataclass
class FileRead:
    """What one pass over a transcript produced."""

    source: Source
    replace: bool  # rewritten: its old documents go
    docs: list[tuple[int, SessionDoc]]  # (byte offset just after the line, doc)
    final: SourceState
    garbage: int = 0
    unknown: int = 0
    reason: str = ""
    # Bytes of complete lines parsed (from the stored offset, or from byte 0
    # when the file is read whole): an append costs its own length only.
    parsed_bytes: int = 0
    # Rewrite-check hash of the bytes before each offset in ``docs``: a
    # batch that ends mid-file stores its own offset's, or the resume after
    # a kill would take the file for rewritten and re-read (re-embed) it.
    tails: dict[int, str] = field(default_factory=dict)

    def state_at(self, position: int) -> SourceState:
        """The file's progress after the line that ends at ``position``."""
        if position == self.final.offset:
            return self.final
        return replace(self.final, offset=position, tail_hash=self.tails[position])


def _head_hash(data: bytes | memoryview) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def _tail_hash(data: bytes | memoryview) -> str:
    return _head_hash(data) if len(data) else ""


def _sniff(lines: Sequence[bytes]) -> str | None:
    for line in lines[:50]:
        obj = parse_line(line)
        if obj is None:
            continue
        if obj.get("type") == "session" and isinstance(obj.get("id"), str):
            return PI
        if claude_format.looks_like_claude(obj):
            return CLAUDE_CODE
    return None


def _rewrite_reason(handle: BinaryIO, st: os.stat_result, state: SourceState) -> str:
    """Why the file is no longer ``state``'s file plus appended lines ("" when
    it is, and reading on from ``state.offset`` is safe)."""
    if st.st_ino != state.inode:
        return "inode changed"
    if st.st_size < state.offset:
        return "file shrank"
    if state.head_len:
        handle.seek(0)
        if _head_hash(handle.read(state.head_len)) != state.head_hash:
            return "first bytes changed"
    if state.offset:
        # An in-place rewrite can keep the first bytes and grow the file;
        # the bytes just before the offset tell it from an append. The
        # offset always sat right after a newline: anything else means the
        # lines moved and reading on would start mid-line.
        span = min(state.offset, TAIL_BYTES)
        handle.seek(state.offset - span)
        before = handle.read(span)
        if before[-1:] != b"\n":
            return "offset no longer at a line end"
        # "" = recorded before schema version 2: the line-end check is all
        # there is until this read records the hash.
        if state.tail_hash and _tail_hash(before) != state.tail_hash:
            return "bytes before the offset changed"
    return ""


def read_source(
    source: Source, state: SourceState | None, settings: SessionsSettings
) -> FileRead | None:
    """The new documents of ``source`` since ``state``; None when unchanged
    (or gone: a deleted transcript keeps its documents, history is history)."""
    path = source.path
    try:
        handle = open_transcript_file(path)
    except (OSError, NotRegularFileError, FileTooLargeError):
        # Gone, unreadable, too large, or a FIFO/device put where a
        # transcript was (it would block the sweep): nothing to read.
        return None
    with handle:
        st = os.fstat(handle.fileno())
        head_len = min(st.st_size, HEAD_BYTES)
        reason = ""
        offset = 0
        if state is not None:
            if (
                st.st_size == state.size
                and st.st_mtime_ns == state.mtime_ns
                and st.st_ino == state.inode
                and state.offset == state.size
            ):
                return None
            reason = _rewrite_reason(handle, st, state)
            if not reason:
                offset = state.offset
        replace_all = bool(reason)
        handle.seek(0)
        head = handle.read(head_len)
        # Read from TAIL_BYTES before the offset: the tail hashes of the new
        # offsets may reach back into bytes read by an earlier pass.
        start = max(offset - TAIL_BYTES, 0)
        handle.seek(start)
        window = handle.read(max(st.st_size - start, 0))
    # Only complete lines: a line still being written waits for its newline.
    skip = offset - start
    cut = window.rfind(b"\n", skip) + 1
    end = cut - skip if cut else 0
    body = window[skip:cut] if cut else b""
    view = memoryview(window)

    def tail_at(position: int) -> str:
        return _tail_hash(view[max(position - TAIL_BYTES, start) - start : position - start])

    fmt = state.format if state is not None and not replace_all else None
    session_id = state.session_id if state is not None and not replace_all else None
    garbage = state.garbage if state is not None and not replace_all else 0
    unknown = state.unknown if state is not None and not replace_all else 0
    raw_lines = body.split(b"\n")[:-1] if body else []
    if fmt is None:
        fmt = _sniff(raw_lines) or source.format
    transcript = str(path)
    docs: list[tuple[int, SessionDoc]] = []
    tails: dict[int, str] = {}
    entries: list[tuple[int, dict[str, Any]]] = []
    position = offset
    for raw in raw_lines:
        position += len(raw) + 1
        if not raw.strip():
            continue
        obj = parse_line(raw)
        if obj is None:
            garbage += 1
            continue
        entries.append((position, obj))
    own = _own_calls(path, offset, [obj for _, obj in entries]) if fmt == CLAUDE_CODE else None
    for position, obj in entries:
        if fmt == PI:
            if obj.get("type") == "session" and session_id is None:
                sid = obj.get("id")
                session_id = sid if isinstance(sid, str) else None
            found = pi_docs(obj)
        else:
            if session_id is None and isinstance(obj.get("sessionId"), str):
                session_id = obj["sessionId"]
            found = claude_docs(obj, own)
        if found is None:
            unknown += 1
            continue
        for item in found:
            if not item.text.strip():
                continue
            if position not in tails:
                tails[position] = tail_at(position)
            docs.append(
                (
                    position,
                    SessionDoc(
                        transcript=transcript,
                        entry_id=item.entry_id,
                        session_id=session_id
                        if fmt == PI
                        else (obj.get("sessionId") or session_id),
                        role=item.role,
                        timestamp=item.timestamp,
                        text=item.text,
                        embed=embeds(item.role, settings),
                        part=item.part,
                    ),
                )
            )
    # A Claude Code file without a sessionId anywhere is named after its session.
    if fmt == CLAUDE_CODE and session_id is None:
        session_id = path.stem
        docs = [(pos, replace(doc, session_id=doc.session_id or session_id)) for pos, doc in docs]
    final = SourceState(
        path=transcript,
        format=fmt,
        session_id=session_id,
        offset=offset + end,
        size=st.st_size,
        mtime_ns=st.st_mtime_ns,
        inode=st.st_ino,
        head_len=len(head),
        head_hash=_head_hash(head),
        garbage=garbage,
        unknown=unknown,
        tail_hash=tail_at(offset + end),
    )
    return FileRead(
        source=source,
        replace=replace_all,
        docs=docs,
        final=final,
        garbage=garbage - (state.garbage if state and not replace_all else 0),
        unknown=unknown - (state.unknown if state and not replace_all else 0),
        reason=reason,
        parsed_bytes=end,
        tails=tails,
    )


def _own_calls(path: Path, offset: int, objs: Sequence[dict[str, Any]]) -> OwnCalls:
    """memlane's tool calls among ``objs`` (Claude Code lines read from ``offset``),
    and those before ``offset`` whose results are among them."""
    own = OwnCalls()
    answered: set[str] = set()
    for obj in objs:
        own.note(obj)
        answered |= OwnCalls.result_ids(obj)
    own.look_back(path, offset, answered)
    return own


# -- ingestion ---------------------------------------------------------------------------------


@dataclass
class BackfillReport:
    operation: str = "backfill"
    sources: int = 0
    files_read: int = 0
    files_rewritten: int = 0
    documents_added: int = 0
    embedded: int = 0
    garbage_lines: int = 0
    unknown_entries: int = 0
    batches: int = 0
    # Transcript bytes parsed by this pass (complete lines only).
    bytes_read: int = 0
    seconds: float = 0.0
    notices: list[str] = field(default_factory=list)

    @property
    def activity(self) -> bool:
        return bool(self.documents_added or self.files_rewritten or self.embedded)

    def to_json(self) -> dict[str, Any]:
        return {
            "operation": self.operation,
            "sources": self.sources,
            "files_read": self.files_read,
            "files_rewritten": self.files_rewritten,
            "documents_added": self.documents_added,
            "embedded": self.embedded,
            "garbage_lines": self.garbage_lines,
            "unknown_entries": self.unknown_entries,
            "batches": self.batches,
            "bytes_read": self.bytes_read,
            "seconds": round(self.seconds, 3),
            "notices": list(self.notices),
        }


class SessionIngestor:
    """Reads sources into the store, embedding in batches of ``BATCH_SIZE``.

    Thread-safe: one lock serialises passes (hook worker, sweeper, backfill
    in one process); other processes are serialised by SQLite and made
    harmless by the store's uniqueness.
    """

    def __init__(
        self,
        store: SessionStore,
        embedder: Embedder | None,
        settings: SessionsSettings,
        sources: Callable[[], list[Source]],
        *,
        model: str | None = None,
        batch_size: int = BATCH_SIZE,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.settings = settings
        self.scan = sources
        self.model = model or (embedder.name if embedder is not None else None)
        self.batch_size = max(1, batch_size)
        self._lock = threading.Lock()
        self._model_bound = False
        self._bound_rebuilds = store.rebuilds
        self._rules_current = False  # the store's documents follow DOCS_RULES_VERSION
        self.notices: list[str] = []

    def _bind_model(self) -> None:
        # A recreated store has lost the model binding along with everything.
        if self._bound_rebuilds != self.store.rebuilds:
            self._model_bound = False
        if self._model_bound or self.embedder is None or self.model is None:
            return
        rebuilds = self.store.rebuilds
        if self.store.ensure_model(self.model, self.embedder.dimension):
            self.notices.append("embedding model changed: session vectors dropped, re-embedding")
        self._model_bound = True
        self._bound_rebuilds = rebuilds

    def _read(
        self, chosen: Sequence[Source], known: Mapping[str, SourceState], report: BackfillReport
    ) -> list[FileRead]:
        reads: list[FileRead] = []
        for source in chosen:
            read = read_source(source, known.get(str(source.path)), self.settings)
            if read is None:
                continue
            reads.append(read)
            report.files_read += 1
            report.bytes_read += read.parsed_bytes
            report.garbage_lines += read.garbage
            report.unknown_entries += read.unknown
            if read.replace:
                report.files_rewritten += 1
                trace("sessions", "rewrite", path=source.path, reason=read.reason)
        return reads

    def ingest(
        self,
        sources: Sequence[Source] | None = None,
        progress: Progress | None = None,
        *,
        operation: str = "backfill",
    ) -> BackfillReport:
        started = time.monotonic()
        with self._lock:
            chosen = list(self.scan() if sources is None else sources)
            for attempt in range(2):
                report = BackfillReport(operation=operation, sources=len(chosen))
                # Bound before reading: a changed model drops the old vectors,
                # and the pending pass below then re-embeds every document.
                self._bind_model()
                # Rows stored before redaction (an older memlane) are
                # rescanned once, before anything reads or embeds them.
                self.store.redact_stored()
                # A store recreated after damage (here or by another process)
                # has no sources rows: every transcript is read from byte 0.
                known = self.store.sources() if attempt == 0 else {}
                rebuilds = self.store.rebuilds
                reads = self._apply_rules(known, report) if attempt == 0 else []
                redone = {str(read.source.path) for read in reads}
                reads += self._read([s for s in chosen if str(s.path) not in redone], known, report)
                total = sum(len(r.docs) for r in reads)
                if reads:
                    trace("sessions", f"{operation}.start", files=len(reads), docs=total)
                self._write(reads, total, report, progress)
                if self.store.rebuilds == rebuilds:
                    break
                # Recreated in the middle of the pass: the batches committed
                # before went aside with the damaged file, while the fresh one
                # holds offsets past them. Read this pass's files again from
                # the start (rows already in the fresh file are kept: OR IGNORE).
                trace("sessions", f"{operation}.rebuilt", attempt=attempt)
            self._embed_pending(report, progress)
            if not self._rules_current and self.store.rebuilds == rebuilds:
                self.store.set_meta({META_DOCS_RULES: DOCS_RULES_VERSION})
                self._rules_current = True
            if operation != "hook" and operation != "sweep" and report.activity:
                self.store.checkpoint()
            if sources is None and self.store.rebuilds == rebuilds:
                # Every transcript was read into the file as it is now.
                self.store.reread_since_rebuild = True
            report.notices.extend(self.notices)
            self.notices.clear()
            notice = damage_notice(self.store, pop=False)
            if notice is not None:
                report.notices.append(notice)
        report.seconds = time.monotonic() - started
        if report.activity:
            trace(
                "sessions",
                f"{operation}.done",
                added=report.documents_added,
                embedded=report.embedded,
                seconds=f"{report.seconds:.3f}",
            )
        return report

    def _apply_rules(
        self, known: Mapping[str, SourceState], report: BackfillReport
    ) -> list[FileRead]:
        """Bring a store made under older document rules up to the current ones.

        Once per store: every indexed transcript that may hold documents the
        current rules leave out (or word differently) is parsed again; those
        documents are removed and the file is read whole in this pass, so
        the rest keeps its rows and vectors (nothing is embedded twice).
        """
        if self._rules_current:
            return []
        if self.store.meta().get(META_DOCS_RULES) == DOCS_RULES_VERSION:
            self._rules_current = True
            return []
        reads: list[FileRead] = []
        for path, state in known.items():
            source = Source(Path(path), state.format)
            try:
                data = read_regular_file(
                    source.path, max_bytes=TRANSCRIPT_MAX_BYTES, what="transcript"
                )
                if not may_hold_own_messages(data):
                    continue
            except (OSError, NotRegularFileError, FileTooLargeError):
                continue  # a deleted transcript keeps its documents: history is history
            read = read_source(source, None, self.settings)
            if read is None:
                continue
            fresh = {doc.key: doc.text for _, doc in read.docs}
            stored = self.store.docs_of(path)
            stale = [doc.key for doc in stored if fresh.get(doc.key) != doc.text]
            # Missing documents too: a pass killed after its removal must
            # still read the file again to store their current wording.
            if not stale and fresh.keys() <= {doc.key for doc in stored}:
                continue
            self.store.remove_docs(stale)
            trace("sessions", "rules.reread", path=path, removed=len(stale))
            reads.append(read)
            report.files_read += 1
            report.bytes_read += read.parsed_bytes
        return reads

    def _batches(self, reads: Sequence[FileRead]) -> Iterator[BatchWrite]:
        """The pass cut into batches of ``batch_size`` documents, each with the
        progress of every file it touches (a kill after its commit resumes
        right after its last line)."""
        batch = BatchWrite()
        states: dict[str, SourceState] = {}
        for read in reads:
            path = str(read.source.path)
            if read.replace:
                batch.replace.add(path)
            for position, doc in read.docs:
                batch.docs.append(doc)
                states[path] = read.state_at(position)
                if len(batch.docs) >= self.batch_size:
                    batch.states = list(states.values())
                    yield batch
                    batch, states = BatchWrite(), {}
            states[path] = read.final
        batch.states = list(states.values())
        if batch.docs or batch.states or batch.replace:
            yield batch

    def _write(
        self,
        reads: Sequence[FileRead],
        total: int,
        report: BackfillReport,
        progress: Progress | None,
    ) -> None:
        replaced = {str(read.source.path) for read in reads if read.replace}
        done = 0
        pending = self._batches(reads)
        while True:
            # EMBED_GROUP batches share one embed call, so the embedder can run
            # its batches concurrently (one 32-text call keeps one core busy);
            # each batch still commits alone, so a kill costs one group at most.
            group = list(itertools.islice(pending, EMBED_GROUP))
            if not group:
                return
            docs = [doc for batch in group for doc in batch.docs]
            vectors = self._vectors(docs, replaced=replaced, report=report)
            for batch in group:
                batch.vectors = {d.key: vectors[d.key] for d in batch.docs if d.key in vectors}
                report.documents_added += self.store.commit(batch)
                report.batches += 1
                done += len(batch.docs)
                if progress is not None:
                    progress(done, total, "messages")

    def _vectors(
        self, docs: Sequence[SessionDoc], *, replaced: set[str], report: BackfillReport
    ) -> dict[str, Any]:
        if self.embedder is None:
            return {}
        wanted = [doc for doc in docs if doc.embed]
        if not wanted:
            return {}
        # A resumed pass re-reads rows a killed one already committed: those
        # keep their vectors (unless their file is being replaced wholesale).
        have = self.store.existing(doc.key for doc in wanted if doc.transcript not in replaced)
        todo = list({doc.key: doc for doc in wanted if not have.get(doc.key)}.values())
        if not todo:
            return {}
        try:
            self._bind_model()
            matrix = self.embedder.embed([doc.text for doc in todo])
        except EmbedderError as exc:
            # Rows are stored without vectors and embedded by a later pass.
            self.notices.append(f"embedding failed ({exc.message}); documents stored lexical-only")
            trace("sessions", "embed.error", error=exc.message)
            return {}
        report.embedded += len(todo)
        return {doc.key: matrix[i] for i, doc in enumerate(todo)}

    def _embed_pending(self, report: BackfillReport, progress: Progress | None) -> None:
        """Vectors for rows stored without one (embedder was off or failing)."""
        if self.embedder is None or any("embedding failed" in n for n in self.notices):
            return
        while True:
            pending = self.store.missing_vectors(self.batch_size)
            if not pending:
                return
            try:
                self._bind_model()
                matrix = self.embedder.embed([text for _, text in pending])
            except EmbedderError as exc:
                self.notices.append(f"embedding failed ({exc.message})")
                return
            self.store.set_vectors({key: matrix[i] for i, (key, _) in enumerate(pending)})
            report.embedded += len(pending)
            if progress is not None:
                progress(report.embedded, report.embedded + len(pending), "vectors")


# -- hook path ---------------------------------------------------------------------------------


class SessionIndexer:
    """The hook path: ``index_new(path)`` enqueues; a worker thread ingests.

    The host's call costs a queue put (microseconds); the read, embed and
    write happen on the worker, which coalesces repeated calls for a file.
    """

    def __init__(self, ingestor: SessionIngestor) -> None:
        self.ingestor = ingestor
        self._queue: queue.Queue[Path | None] = queue.Queue()
        self._pending: set[Path] = set()
        self._pending_lock = threading.Lock()
        self._idle = threading.Event()
        self._idle.set()
        self._thread: threading.Thread | None = None
        self.last_error: str | None = None
        self.reports: int = 0

    def index_new(self, transcript_path: str | Path) -> None:
        path = Path(transcript_path)
        with self._pending_lock:
            if path in self._pending:
                return
            self._pending.add(path)
            self._idle.clear()
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="memlane-sessions-hook", daemon=True
                )
                self._thread.start()
        self._queue.put(path)

    def _run(self) -> None:
        while True:
            path = self._queue.get()
            if path is None:
                return
            with self._pending_lock:
                self._pending.discard(path)
            fmt = CLAUDE_CODE if "/.claude" in str(path) else PI
            try:
                self.ingestor.ingest([Source(path, fmt)], operation="hook")
                self.reports += 1
            except Exception as exc:  # the worker must survive any one file
                self.last_error = f"{type(exc).__name__}: {exc}"
                trace("sessions", "hook.error", path=path, error=self.last_error)
            with self._pending_lock:
                if not self._pending and self._queue.empty():
                    self._idle.set()

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every enqueued file was ingested; False on timeout."""
        return self._idle.wait(timeout)

    def close(self, timeout: float = 5.0) -> None:
        thread = self._thread
        if thread is not None:
            self._queue.put(None)
            thread.join(timeout)
            self._thread = None


# -- sweep path --------------------------------------------------------------------------------


class Sweeper:
    """Picks up transcripts written by other sessions and agents.

    ``tick()`` runs one sweep; ``start()`` runs it on a thread every
    ``interval_ms``: the base interval after activity, doubled after each
    idle sweep up to the cap. Status goes to the store's meta rows so any
    process (``memlane sessions status``) can read it.
    """

    def __init__(
        self,
        ingestor: SessionIngestor,
        settings: SessionsSettings,
        *,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.ingestor = ingestor
        self.base_ms = max(1, settings.sweep_interval_ms)
        self.max_ms = max(self.base_ms, settings.sweep_max_interval_ms)
        self.interval_ms = self.base_ms
        self.clock = clock
        self.cycles = 0
        self.last_error: str | None = None
        self._stop = threading.Event()
        self._threads_lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def _status(self, busy: bool) -> None:
        with contextlib.suppress(Exception):
            self.ingestor.store.set_meta(
                {
                    META_SWEEP_CYCLES: self.cycles,
                    META_SWEEP_BUSY: 1 if busy else 0,
                    META_SWEEP_LAST_ERROR: self.last_error,
                    META_SWEEP_INTERVAL_MS: self.interval_ms,
                    META_SWEEP_LAST_AT: utc_iso(self.clock.timestamp()),
                    META_SWEEP_PID: os.getpid(),
                }
            )

    def tick(self) -> BackfillReport | None:
        """One sweep; returns its report (None when it failed)."""
        self._status(busy=True)
        trace("sweep", "tick.start", cycle=self.cycles + 1, interval_ms=self.interval_ms)
        report: BackfillReport | None = None
        try:
            report = self.ingestor.ingest(operation="sweep")
            self.last_error = None
        except Exception as exc:  # a failed sweep is retried on the next tick
            self.last_error = f"{type(exc).__name__}: {exc}"
            trace("sweep", "tick.error", error=self.last_error)
        self.cycles += 1
        if report is not None and report.activity:
            self.interval_ms = self.base_ms
        else:
            self.interval_ms = min(self.interval_ms * 2, self.max_ms)
        self._status(busy=False)
        trace(
            "sweep",
            "tick.done",
            cycle=self.cycles,
            added=report.documents_added if report else None,
            next_ms=self.interval_ms,
        )
        return report

    def start(self) -> threading.Thread:
        # Under the lock: a stop() from another thread sees either no thread
        # or a started one, never one it cannot join yet.
        with self._threads_lock:
            if self._thread is not None and self._thread.is_alive():
                return self._thread
            self._stop.clear()
            self._thread = threading.Thread(
                target=self._loop, name="memlane-sessions-sweep", daemon=True
            )
            self._thread.start()
            return self._thread

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_ms / 1000):
            self.tick()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        with self._threads_lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout)


# -- the layer bound to a project (what the engine, CLI and hosts call) ------------------------


@dataclass(frozen=True)
class SessionHit:
    """A session search hit: the message and where it lives in its transcript."""

    score: float
    key: str
    session_id: str | None
    entry_id: str
    role: str
    timestamp: str | None
    transcript: str
    text: str

    @classmethod
    def of(cls, scored: ScoredDoc) -> SessionHit:
        d: StoredDoc = scored.doc
        return cls(
            score=scored.score,
            key=d.key,
            session_id=d.session_id,
            entry_id=d.entry_id,
            role=d.role,
            timestamp=d.timestamp,
            transcript=d.transcript,
            text=d.text,
        )

    @property
    def heading(self) -> str:
        return f"{self.role} {self.timestamp or '?'} session:{self.session_id} turn:{self.entry_id}"

    def to_hit(self) -> Hit:
        """As a core ``Hit``: chunk hash = document key, source = transcript
        path, heading = role, time, session and turn (memory_transcript's inputs)."""
        return Hit(
            score=self.score,
            chunk_hash=self.key,
            source=self.transcript,
            heading=self.heading,
            start_line=0,
            end_line=0,
            content=self.text,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "score": round(self.score, 6),
            "key": self.key,
            "session_id": self.session_id,
            "entry_id": self.entry_id,
            "role": self.role,
            "timestamp": self.timestamp,
            "transcript": self.transcript,
            "text": self.text,
        }


@dataclass(frozen=True)
class SessionSearch:
    query: str
    mode: str
    hits: list[SessionHit]
    notices: list[str] = field(default_factory=list)

    def to_search_result(self) -> SearchResult:
        mode: Any = self.mode
        return SearchResult(
            query=self.query,
            mode=mode,
            hits=[h.to_hit() for h in self.hits],
            notices=list(self.notices),
        )

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "query": self.query,
            "mode": self.mode,
            "hits": [h.to_json() for h in self.hits],
        }
        if self.notices:
            data["notices"] = list(self.notices)
        return data


_stores: dict[Path, SessionStore] = {}
_stores_lock = threading.Lock()


def sessions_path(mem: Memory) -> Path:
    return sessions_path_for(mem.index_path)


def open_store(mem: Memory) -> SessionStore:
    """The project's session store, one per process (its vector matrix stays warm)."""
    path = sessions_path(mem)
    with _stores_lock:
        store = _stores.get(path)
        if store is None:
            store = SessionStore(path, mem.config.index, mem.config.sessions, redact=redact_text)
            _stores[path] = store
        return store


def damage_notice(store: SessionStore, *, pop: bool) -> str | None:
    """The line telling the user the store was recreated after damage, or None.

    ``pop`` clears it (shown once per process): search, similar, status and
    stats pop it; ingestion only adds it to its report, since `sessions
    search` catches up first and shows the search's notices, not the report's.
    """
    reason = store.pop_rebuilt_reason() if pop else store.rebuilt_reason
    if reason is None:
        return None
    head = f"the sessions index was damaged and rebuilt: {reason}"
    if store.reread_since_rebuild:
        return f"{head}; its messages were read again from the transcripts"
    # Every source's offset went with the file, so the next backfill (or
    # sweep) re-reads every transcript without being told to.
    return f"{head}; run `memlane sessions backfill` to re-read the transcripts"


def close_stores() -> None:
    with _stores_lock:
        for store in _stores.values():
            store.close()
        _stores.clear()


def project_sources(mem: Memory, env: Mapping[str, str] | None = None) -> list[Source]:
    dirs = [mem.scope.repository_dir]
    if mem.scope.cwd != mem.scope.repository_dir:
        dirs.append(mem.scope.cwd)
    return discover_sources(dirs, env)


def _vector_space(mem: Memory) -> str:
    from memlane.embed.factory import vector_space

    return vector_space(mem.config.embedding)


class SessionsLayer:
    """The sessions layer of one project: ingestion, sweep and recall."""

    def __init__(self, mem: Memory, *, embedder: Embedder | str | None = "memory") -> None:
        """``embedder``: "memory" uses the Memory's (shared, loaded on first
        embed); an Embedder, or None (lexical only), overrides it."""
        self.mem = mem
        self.settings = mem.config.sessions
        if self.settings.debug:
            from memlane.core import trace

            trace.force_on()  # pi-lcm-memory's debug switch: the side-channel trace log
        self.store = open_store(mem)
        self._from_memory = embedder == "memory"
        chosen: Embedder | None = None
        if self._from_memory:
            chosen = mem.embedder
        elif embedder is not None and not isinstance(embedder, str):
            chosen = embedder
        self._embedder = chosen
        model = None
        if chosen is not None:
            model = _vector_space(mem) if self._from_memory else chosen.name
        self.ingestor = SessionIngestor(
            self.store, chosen, self.settings, lambda: project_sources(mem), model=model
        )
        self._indexer: SessionIndexer | None = None

    # ingestion
    def backfill(self, progress: Progress | None = None) -> BackfillReport:
        return self.ingestor.ingest(progress=progress)

    def index_new(self, transcript_path: str | Path) -> None:
        if self._indexer is None:
            self._indexer = SessionIndexer(self.ingestor)
        self._indexer.index_new(transcript_path)

    def flush(self, timeout: float | None = None) -> bool:
        return self._indexer.flush(timeout) if self._indexer is not None else True

    def sweeper(self) -> Sweeper:
        """A sweeper on this project's clock (the memory's)."""
        return Sweeper(self.ingestor, self.settings, clock=self.mem.clock)

    def reindex(self, progress: Progress | None = None) -> BackfillReport:
        self.store.clear()
        self.ingestor._model_bound = False
        report = self.ingestor.ingest(progress=progress, operation="reindex")
        return report

    def close(self) -> None:
        if self._indexer is not None:
            self._indexer.close()
            self._indexer = None

    # recall
    def search(
        self,
        query: str,
        k: int | None = None,
        *,
        mode: str = "hybrid",
        session: str | None = None,
        after: str | None = None,
        before: str | None = None,
        role: str | None = None,
    ) -> SessionSearch:
        k = self.settings.recall_default_top_k if k is None else k
        if not 1 <= k <= SEARCH_K_MAX:
            raise MemlaneError(f"k must be between 1 and {SEARCH_K_MAX}, got {k}")
        if mode not in SEARCH_MODES:
            raise MemlaneError(
                f"unknown search mode {mode!r}", f"use one of: {', '.join(SEARCH_MODES)}"
            )
        if role is not None and role not in ROLES:
            raise MemlaneError(f"unknown role {role!r}", f"use one of: {', '.join(ROLES)}")
        filters = SessionFilters(
            session=session or None,
            after=normalize_bound(after, "after"),
            before=normalize_bound(before, "before"),
            role=role,
        )
        notices: list[str] = []
        vector = None
        if self._from_memory:
            vector = self.mem.query_vector(query, mode, notices)
        elif mode != "lexical" and query.strip():
            # An embedder given explicitly (benchmarks, tests): no fallback to manage.
            if self._embedder is None:
                if mode == "semantic":
                    raise EmbedderError("semantic search needs an embedder (no embedder)")
            else:
                vector = self._embedder.embed_query(query)
        if mode == "semantic" and vector is None:
            return SessionSearch(query, "semantic", [], self._with_damage(notices))
        got, scored = self.store.search(query, vector, k, filters, lexical=mode != "semantic")
        return SessionSearch(
            query, got, [SessionHit.of(s) for s in scored], self._with_damage(notices)
        )

    def _with_damage(self, notices: list[str]) -> list[str]:
        # Popped after the store was touched: damage found by this very
        # search (and the fresh file it answered from) is reported with it.
        notice = damage_notice(self.store, pop=True)
        return [*notices, notice] if notice is not None else notices

    def resolve(self, key_or_entry: str) -> StoredDoc | None:
        """A document by its key, else by transcript entry id (its own text first)."""
        doc = self.store.get(key_or_entry)
        if doc is not None:
            return doc
        found = self.store.find_entry(key_or_entry)
        return found[0] if found else None

    def similar(self, key_or_entry: str, k: int = 10) -> SessionSearch:
        if not 1 <= k <= SEARCH_K_MAX:
            raise MemlaneError(f"k must be between 1 and {SEARCH_K_MAX}, got {k}")
        doc = self.resolve(key_or_entry)
        if doc is None:
            from memlane.core.errors import NotFoundError

            raise NotFoundError(
                f"no session document {key_or_entry!r}",
                "pass a key or an entry id from a session search hit",
            )
        scored = self.store.similar(doc.key, k)
        return SessionSearch(
            doc.text[:200], "semantic", [SessionHit.of(s) for s in scored], self._with_damage([])
        )

    def recent(self, n: int | None = None, exclude: str | None = None) -> list[SessionInfo]:
        return self.store.recent_sessions(self.settings.primer_top_k if n is None else n, exclude)

    def stats(self) -> dict[str, Any]:
        data = self.store.stats()
        data["embedding_provider"] = self.mem.config.embedding.provider
        data.pop("rebuilt", None)  # said by the notice, in words
        notice = damage_notice(self.store, pop=True)
        if notice is not None:
            data["notice"] = notice
        return data

    def status(self) -> dict[str, Any]:
        meta = self.store.meta()
        notice = damage_notice(self.store, pop=True)
        return {
            "sweep_cycles": int(meta.get(META_SWEEP_CYCLES) or 0),
            "busy": bool(meta.get(META_SWEEP_BUSY)),
            "last_error": meta.get(META_SWEEP_LAST_ERROR),
            "interval_ms": meta.get(META_SWEEP_INTERVAL_MS),
            "last_sweep_at": meta.get(META_SWEEP_LAST_AT),
            "sweeper_pid": meta.get(META_SWEEP_PID),
            "base_interval_ms": self.settings.sweep_interval_ms,
            # Only when set: the CLI prints every key, so it shows up there.
            **({"notice": notice} if notice is not None else {}),
        }


# -- module functions: what the tools, the CLI and the Session call --------------------------


def search_sessions(
    mem: Memory,
    query: str,
    k: int | None = None,
    mode: str = "hybrid",
    session: str | None = None,
    after: str | None = None,
    before: str | None = None,
    role: str | None = None,
) -> SearchResult:
    """memory_search kind "session": hits whose content is the message text,
    chunk hash the document key, source the transcript path, heading
    ``<role> <utc time> session:<id> turn:<entry id>``."""
    layer = SessionsLayer(mem)
    return layer.search(
        query, k, mode=mode, session=session, after=after, before=before, role=role
    ).to_search_result()


def similar_sessions(mem: Memory, key_or_entry: str, k: int = 10) -> SearchResult:
    """memory_similar on a session document (key or message id), itself excluded."""
    return SessionsLayer(mem).similar(key_or_entry, k).to_search_result()


def recent_sessions(
    mem: Memory, n: int | None = None, exclude: str | None = None
) -> list[SessionInfo]:
    """The primer's input: the latest sessions, newest first."""
    return SessionsLayer(mem).recent(n, exclude)
