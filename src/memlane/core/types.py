"""Plain value types shared by store, index, engine and every host.

Store and index never import each other: they meet here. Every result type
has ``to_json()`` so the CLI, the sidecar and MCP show the same thing.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

Kind = Literal["journal", "topic", "session"]
SearchMode = Literal["hybrid", "lexical", "semantic"]
#: What ``Memory.search`` may be asked for: a ``Kind``, or "all" (notes and sessions).
SearchKind = Literal["journal", "topic", "session", "all"]
#: One project's memory, or every project's notes.
SearchScope = Literal["project", "all"]
#: Best match first, or newest first.
SearchOrder = Literal["relevance", "newest"]
#: How far to trust a hit (engine/recall/trust.py).
Band = Literal["strong", "possible", "weak"]

_HTML_COMMENT_RE = re.compile(r"<!--.*?-->", re.DOTALL)
_BLANK_RUN_RE = re.compile(r"\n{3,}")


def content_hash_of(content: str) -> str:
    """memsearch's content hash: first 16 hex of sha256 over the UTF-8 text."""
    return hashlib.sha256(content.encode("utf-8")).hexdigest()[:16]


def chunk_id_of(source: str, start_line: int, end_line: int, content_hash: str, model: str) -> str:
    """memsearch's chunk id (the chunk hash shown to agents)."""
    raw = f"markdown:{source}:{start_line}:{end_line}:{content_hash}:{model}"
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:16]


def embedding_text_of(content: str) -> str:
    """Only the embedding input is cleaned: comments removed, 3+ newlines -> 2."""
    cleaned = _HTML_COMMENT_RE.sub("", content)
    return _BLANK_RUN_RE.sub("\n\n", cleaned).strip()


#: Version of the rule that turns a chunk into the embedder's input. It is
#: part of the vector-space id (embed/factory.py): changing the rule
#: re-embeds every stored chunk. 2: the previous entry as context; 3: a note
#: as it stands (ADR 0010).
EMBED_INPUT_VERSION = 3
#: How much of the previous chunk's text its BM25 context column holds.
EMBED_CONTEXT_CHARS = 300
_HEADING_LINE_RE = re.compile(r"^#{1,6}[ \t]+.*$\n?", re.MULTILINE)


def context_of(previous: str) -> str:
    """What a chunk takes from the chunk before it for the BM25 context
    column: the start of its cleaned text, headings dropped. A reply ("yes,
    that one") is then found by the words of what it answers; the embedding
    input never includes it (a note is embedded as it stands, ADR 0010)."""
    context = _HEADING_LINE_RE.sub("", embedding_text_of(previous)).strip()
    return context[:EMBED_CONTEXT_CHARS].strip()


# Everything str.splitlines() breaks a line at: a field holding one could
# start a forged line (a "### 00:00" heading) in the daily file.
_LINE_BREAKS_RE = re.compile("[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
_SPACE_RE = re.compile(r"\s")
NO_ANCHOR_VALUE = "none"


def anchor_field(value: str, *, spaces: bool) -> str:
    """``value`` made safe for one field of an anchor comment.

    The one sanitiser every anchor goes through (``Anchor`` applies it to
    each field): lone surrogates become U+FFFD, "-->" (which would close the
    comment) and line breaks are removed, and for the fields the anchor
    pattern reads as one word (session, turn) whitespace becomes "_". Applied
    twice it changes nothing, so a parsed anchor stays as it was read.
    """
    text = "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in str(value))
    text = _LINE_BREAKS_RE.sub(" ", text)
    while "-->" in text:
        text = text.replace("-->", "")
    text = text.strip()
    if not spaces:
        text = _SPACE_RE.sub("_", text)
    return text


@dataclass(frozen=True)
class Anchor:
    """``<!-- session:<id> turn:<entry id> transcript:<path> -->``.

    Whatever a host sends as a session id, entry id or transcript path, the
    fields are sanitised here (``anchor_field``), so no value can end the
    comment early or add a line to the file, and the rendered anchor parses
    back to the same fields.
    """

    session: str
    turn: str
    transcript: str

    def __post_init__(self) -> None:
        fields = {
            "session": anchor_field(self.session, spaces=False) or NO_ANCHOR_VALUE,
            "turn": anchor_field(self.turn, spaces=False),
            "transcript": anchor_field(self.transcript, spaces=True) or NO_ANCHOR_VALUE,
        }
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    def render(self) -> str:
        return f"<!-- session:{self.session} turn:{self.turn} transcript:{self.transcript} -->"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Chunk:
    """One heading section (or piece of one) of a markdown file."""

    content: str
    source: str
    heading: str
    heading_level: int
    start_line: int
    end_line: int
    content_hash: str
    chunk_hash: str

    @property
    def embedding_text(self) -> str:
        return embedding_text_of(self.content)

    def to_json(self) -> dict[str, Any]:
        return {
            "heading": self.heading,
            "heading_level": self.heading_level,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "content_hash": self.content_hash,
            "chunk_hash": self.chunk_hash,
            "content": self.content,
        }


@dataclass(frozen=True)
class Entry:
    """A memory entry as written to a daily file."""

    path: str
    time: str  # HH:MM
    text: str  # the markdown that was appended, verbatim
    anchor: Anchor | None = None
    session_heading_written: bool = False
    redactions: int = 0  # secrets replaced in the text before it was written

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "time": self.time,
            "text": self.text,
            "anchor": self.anchor.to_json() if self.anchor else None,
            "session_heading_written": self.session_heading_written,
            "redactions": self.redactions,
        }


@dataclass(frozen=True)
class Hit:
    """One search result."""

    score: float
    chunk_hash: str
    source: str
    heading: str
    start_line: int
    end_line: int
    content: str
    project: str | None = None  # origin project, for cross-repo hits
    #: A past message (a kind "session" hit): its session and turn in the
    #: transcript ``source``, memory_transcript's inputs. Such a hit has no
    #: line range (start_line and end_line are 0).
    session: str | None = None
    turn: str | None = None
    #: "journal", "topic" or "session", when the search knew it (a hit from
    #: another project's store is left unset).
    kind: Kind | None = None
    #: When the memory was written: "YYYY-MM-DD" or "YYYY-MM-DDTHH:MM" (a
    #: journal entry's day and time, a topic file's last update, a message's
    #: time), and its age in whole days on the search's clock.
    date: str | None = None
    age_days: int | None = None
    #: How far to trust the hit (engine/recall/trust.py): "strong",
    #: "possible" or "weak".
    band: Band | None = None
    #: The chunk hash of a newer hit about the same thing: this one is outdated.
    superseded_by: str | None = None

    @classmethod
    def of(
        cls, chunk: Chunk, score: float, project: str | None = None, kind: Kind | None = None
    ) -> Hit:
        """A search hit for an indexed chunk."""
        return cls(
            score=score,
            chunk_hash=chunk.chunk_hash,
            source=chunk.source,
            heading=chunk.heading,
            start_line=chunk.start_line,
            end_line=chunk.end_line,
            content=chunk.content,
            project=project,
            kind=kind,
        )

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "score": round(self.score, 6),
            "chunk_hash": self.chunk_hash,
            "source": self.source,
            "heading": self.heading,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "content": self.content,
        }
        if self.project is not None:
            data["project"] = self.project
        if self.kind is not None:
            data["kind"] = self.kind
        for name in ("date", "age_days", "band", "superseded_by"):
            value = getattr(self, name)
            if value is not None:
                data[name] = value
        if self.turn is not None:
            # Where the message is: its turn, not a line range it does not have.
            del data["start_line"], data["end_line"]
            data["session"] = self.session
            data["turn"] = self.turn
        return data


@dataclass(frozen=True)
class SearchResult:
    query: str
    mode: SearchMode
    hits: list[Hit]
    notices: list[str] = field(default_factory=list)
    #: The floor the hits were held to, and how many fell below it.
    min_score: float = 0.0
    below_min_score: int = 0

    def at_least(self, min_score: float, keep: int = 0) -> SearchResult:
        """Only the hits scoring ``min_score`` or more (``search.min_score``);
        the first ``keep`` hits stay whatever they score."""
        kept = [h for i, h in enumerate(self.hits) if i < keep or h.score >= min_score]
        return replace(
            self,
            hits=kept,
            min_score=max(self.min_score, min_score),
            below_min_score=self.below_min_score + len(self.hits) - len(kept),
        )

    @property
    def nothing_relevant(self) -> bool:
        """Every match scored below the floor: the store holds nothing relevant."""
        return not self.hits and self.below_min_score > 0

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"mode": self.mode, "hits": [h.to_json() for h in self.hits]}
        if self.min_score > 0:
            data["min_score"] = self.min_score
            data["below_min_score"] = self.below_min_score
        if not self.hits:
            data["nothing_relevant"] = True
        if self.notices:
            data["notices"] = list(self.notices)
        return data


@dataclass(frozen=True)
class Section:
    """The whole heading section a chunk came from (L2 recall)."""

    chunk_hash: str
    source: str
    heading: str
    start_line: int
    end_line: int
    content: str
    anchor: Anchor | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "chunk_hash": self.chunk_hash,
            "source": self.source,
            "heading": self.heading,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "content": self.content,
        }
        data["anchor"] = self.anchor.to_json() if self.anchor else None
        return data


@dataclass(frozen=True)
class Exchange:
    """One settled user/assistant exchange, as a host reports it (the sidecar protocol, hosts/pi/sidecar.py).

    ``entry_id`` is the host's id for the exchange (pi's session entry id,
    Claude Code's message uuid); with ``session_id`` and ``transcript_path``
    it becomes the entry's anchor, which L3 recall follows back.
    ``tools`` names every tool the agent called during the exchange, when
    the host reports them (None when it does not): capture tells an answer
    that only restated recalled memory from one that also did work
    (engine/journal/echo.py).
    """

    user: str
    assistant: str
    aborted: bool = False
    entry_id: str | None = None
    session_id: str | None = None
    transcript_path: str | None = None
    tools: tuple[str, ...] | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)
