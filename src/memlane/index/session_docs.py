"""The documents of the sessions index: what is stored (one message, its
tool calls, or a summary), what a read or a search returns, the filters, and
how far each transcript was read. Backend-neutral: the SQLite store and a
Milvus one trade in the same values."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from memlane.index.protocol import SearchFilters

ROLES = ("user", "assistant", "summary", "tool")
DOC_KIND = "session"


def doc_key(transcript: str, entry_id: str, part: str = "") -> str:
    """The 16-hex handle of a document (what a hit's chunk hash shows)."""
    raw = f"session:{transcript}\0{entry_id}\0{part}".encode()
    return hashlib.sha256(raw).hexdigest()[:16]


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class SessionDoc:
    """A document to store: one message (or its tool calls, or a summary)."""

    transcript: str
    entry_id: str
    session_id: str | None
    role: str  # user | assistant | summary | tool
    timestamp: str | None  # UTC ISO "...Z"
    text: str
    embed: bool  # gets a vector (else lexical only)
    part: str = ""

    @property
    def key(self) -> str:
        return doc_key(self.transcript, self.entry_id, self.part)


@dataclass(frozen=True)
class StoredDoc:
    key: str
    transcript: str
    entry_id: str
    part: str
    role: str
    timestamp: str | None
    session_id: str | None
    text: str

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "session_id": self.session_id,
            "entry_id": self.entry_id,
            "part": self.part,
            "role": self.role,
            "timestamp": self.timestamp,
            "transcript": self.transcript,
            "text": self.text,
        }


@dataclass(frozen=True)
class ScoredDoc:
    doc: StoredDoc
    score: float  # in [0, 1]


@dataclass(frozen=True)
class SessionFilters:
    """The sessions layer's filters; the index protocol's ``SearchFilters``
    reads the role as ``source_prefix`` (the column that holds it)."""

    session: str | None = None
    after: str | None = None  # inclusive, compared with the UTC ISO timestamp
    before: str | None = None  # exclusive
    role: str | None = None

    def shared(self) -> SearchFilters | None:
        filters = SearchFilters(
            source_prefix=self.role, session=self.session, after=self.after, before=self.before
        )
        return None if filters.is_empty() else filters


def search_filters(filters: SearchFilters | SessionFilters | None) -> SearchFilters | None:
    """Either kind of filter as the protocol's ``SearchFilters`` (None when empty)."""
    if isinstance(filters, SessionFilters):
        return filters.shared()
    return None if filters is None or filters.is_empty() else filters


@dataclass(frozen=True)
class SourceState:
    """How far one transcript file was read, and how it looked then."""

    path: str
    format: str  # "pi" | "claude-code"
    session_id: str | None
    offset: int
    size: int
    mtime_ns: int
    inode: int
    head_len: int
    head_hash: str
    garbage: int = 0
    unknown: int = 0
    # Hash of the (up to) TAIL_BYTES bytes just before ``offset``; "" when
    # offset is 0 or the row predates schema version 2.
    tail_hash: str = ""


@dataclass(frozen=True)
class SessionInfo:
    """One past session, for the primer."""

    session_id: str
    transcript: str
    first_at: str | None
    last_at: str | None
    messages: int
    first_user: str  # the first user message: what the session set out to do
    last_summary: str | None  # the latest compaction/branch summary, if any
    # The transcript's format, which names the agent it came from ("pi",
    # "claude-code", or whatever another reader records); None when unknown.
    format: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "transcript": self.transcript,
            "first_at": self.first_at,
            "last_at": self.last_at,
            "messages": self.messages,
            "first_user": self.first_user,
            "last_summary": self.last_summary,
            "format": self.format,
        }


@dataclass
class BatchWrite:
    """One transaction: documents, their vectors, and source progress."""

    docs: list[SessionDoc] = field(default_factory=list)
    vectors: dict[str, npt.NDArray[np.float32]] = field(default_factory=dict)
    states: list[SourceState] = field(default_factory=list)
    replace: set[str] = field(default_factory=set)  # transcripts whose old rows go first
