"""Reading one transcript from its stored offset: the documents of its new
complete lines, and whether it was rewritten (then it is read whole).

A file that grew is read on from its offset; one that shrank, changed inode,
changed its first bytes or the bytes just before the offset (or no longer
has a line end there) was rewritten. Only complete lines are consumed: a
partial last line waits for its newline. Garbage lines and unknown entry
types are counted, never fatal.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, BinaryIO

from memlane.core.regular_file import FileTooLargeError, NotRegularFileError
from memlane.core.settings import SessionsSettings
from memlane.engine.sessions.docs import documents, embeds
from memlane.engine.sessions.own_messages import OwnCalls
from memlane.index.session_docs import SessionDoc, SourceState
from memlane.transcripts.codex import session_id_of as codex_session_id
from memlane.transcripts.formats import message_reader, sniff
from memlane.transcripts.jsonl import open_transcript_file, parse_line
from memlane.transcripts.locate import Source
from memlane.transcripts.model import CLAUDE_CODE, CODEX, PI_SHAPED

# The rewrite check hashes this many leading bytes (or fewer, as many as
# the file had when first read).
HEAD_BYTES = 1024
# ... and this many bytes just before the stored offset: an in-place rewrite
# that keeps the head (and does not shrink) changes them. A few lines' worth
# (pi and Claude lines run 0.3-2 KiB), still one small read per changed file.
TAIL_BYTES = 4096

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
        fmt = sniff(parse_line(line) for line in raw_lines) or source.format
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
    own = (
        _own_calls(path, offset, [obj for _, obj in entries])
        if fmt in (CLAUDE_CODE, CODEX)
        else None
    )
    read_message = message_reader(fmt)
    for position, obj in entries:
        if fmt in PI_SHAPED:
            if obj.get("type") == "session" and session_id is None:
                sid = obj.get("id")
                session_id = sid if isinstance(sid, str) else None
        elif session_id is None and isinstance(obj.get("sessionId"), str):
            session_id = obj["sessionId"]
        elif session_id is None and fmt == CODEX:
            session_id = codex_session_id(obj)
        found = documents(read_message(obj), fmt, own)
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
                        if fmt in PI_SHAPED
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
