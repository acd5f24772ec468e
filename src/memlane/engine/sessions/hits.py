"""What a session search returns: hits with where each message lives."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memlane.core.types import Hit, SearchResult
from memlane.index.session_docs import ScoredDoc, StoredDoc


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
        path, heading = role, time, session and turn (memory_transcript's inputs),
        which ``session`` and ``turn`` also carry."""
        return Hit(
            score=self.score,
            chunk_hash=self.key,
            source=self.transcript,
            heading=self.heading,
            start_line=0,
            end_line=0,
            content=self.text,
            session=self.session_id,
            turn=self.entry_id,
            kind="session",
            date=self.timestamp[:16] if self.timestamp else None,
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
