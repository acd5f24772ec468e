"""The topic file codec: parse and render ``<store>/topics/<slug>.md``.

A topic file is flat frontmatter (``name``, ``description``, ``type``,
``updated``) followed by one ``## <title>`` block per entry. Files are kept
byte for byte: a parsed file renders back to exactly its text, and an edit
touches only the frontmatter lines and entry blocks it changes, so hand
edits (extra blank lines, unknown keys) survive.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from memlane.core.errors import MemlaneError

DESCRIPTION_MAX_CHARS = 150
TITLE_MAX_CHARS = 200
FRONTMATTER_KEYS = ("name", "description", "type", "updated")

_FENCE = "---"
_ENTRY_HEADING_RE = re.compile(r"^##[ \t]+(.*?)[ \t]*#*[ \t]*$")
_CONTENT_HEADING_RE = re.compile(r"^(#{1,2})(?=[ \t])")
_FRONT_LINE_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*)[ \t]*:[ \t]?(.*)$")
_PLAIN_VALUE_RE = re.compile(r"^[^\s\"'#\[\]{}&*!|>%@`,?:-][^\n]*$")
_YAMLISH_SCALAR_RE = re.compile(
    r"^(?:true|false|yes|no|on|off|null|~|[-+]?(?:\d[\d_]*)?\.?\d+(?:[eE][-+]?\d+)?)$",
    re.IGNORECASE,
)
_LINE_RE = re.compile(r"[^\n]*\n|[^\n]+\Z")


def _lines(text: str) -> list[str]:
    """Lines with their ends, split at ``\\n`` only (as the chunker counts them)."""
    return _LINE_RE.findall(text)


# --- frontmatter ----------------------------------------------------------------------------


def parse_value(raw: str) -> str:
    """A frontmatter value: plain, ``"double"`` (JSON escapes) or ``'single'`` quoted."""
    text = raw.strip()
    if len(text) >= 2 and text[0] == '"' and text[-1] == '"':
        try:
            value = json.loads(text)
        except ValueError:
            return text[1:-1]
        return value if isinstance(value, str) else text[1:-1]
    if len(text) >= 2 and text[0] == "'" and text[-1] == "'":
        return text[1:-1].replace("''", "'")
    return text


def render_value(value: str) -> str:
    """A frontmatter value, quoted only when a YAML reader would misread it plain."""
    if (
        value
        and _PLAIN_VALUE_RE.match(value)
        and value == value.strip()
        and ": " not in value
        and " #" not in value
        and not _YAMLISH_SCALAR_RE.match(value)
    ) or re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        return value
    return json.dumps(value, ensure_ascii=False)


# --- topic file -----------------------------------------------------------------------------


@dataclass
class TopicEntry:
    """One ``## title`` block, kept verbatim (heading line to the next heading)."""

    title: str
    text: str

    @property
    def body(self) -> str:
        """The entry's text without its heading, trimmed."""
        return self.text.split("\n", 1)[1].strip() if "\n" in self.text else ""


@dataclass
class TopicFile:
    """A parsed topic file. ``render()`` gives back exactly the parsed text."""

    front: list[str] = field(default_factory=list)  # frontmatter lines, with "\n"
    has_front: bool = False
    preamble: str = ""  # between the frontmatter and the first entry
    fences: tuple[str, str] = (f"{_FENCE}\n", f"{_FENCE}\n")  # as written (CRLF kept)
    entries: list[TopicEntry] = field(default_factory=list)

    @classmethod
    def parse(cls, text: str) -> TopicFile:
        lines = _lines(text)
        out = cls()
        rest = lines
        if lines and lines[0].rstrip("\r\n") == _FENCE:
            for i in range(1, len(lines)):
                if lines[i].rstrip("\r\n") == _FENCE:
                    out.has_front = True
                    out.fences = (lines[0], lines[i])
                    out.front = lines[1:i]
                    rest = lines[i + 1 :]
                    break
        preamble: list[str] = []
        current: list[str] | None = None
        title = ""
        for line in rest:
            match = _ENTRY_HEADING_RE.match(line.rstrip("\r\n"))
            if match is not None:
                if current is not None:
                    out.entries.append(TopicEntry(title, "".join(current)))
                current, title = [line], match.group(1).strip()
            elif current is not None:
                current.append(line)
            else:
                preamble.append(line)
        if current is not None:
            out.entries.append(TopicEntry(title, "".join(current)))
        out.preamble = "".join(preamble)
        return out

    def render(self) -> str:
        head = "".join([self.fences[0], *self.front, self.fences[1]]) if self.has_front else ""
        return head + self.preamble + "".join(entry.text for entry in self.entries)

    def get(self, key: str) -> str | None:
        for line in self.front:
            match = _FRONT_LINE_RE.match(line.rstrip("\r\n"))
            if match is not None and match.group(1) == key:
                return parse_value(match.group(2))
        return None

    def set(self, key: str, value: str) -> None:
        """Set one frontmatter field, rewriting only its line (appended if new)."""
        line = f"{key}: {render_value(value)}\n"
        self.has_front = True
        for i, existing in enumerate(self.front):
            match = _FRONT_LINE_RE.match(existing.rstrip("\r\n"))
            if match is not None and match.group(1) == key:
                self.front[i] = line
                return
        if self.front and not self.front[-1].endswith("\n"):
            self.front[-1] += "\n"
        self.front.append(line)

    @property
    def titles(self) -> list[str]:
        return [entry.title for entry in self.entries]

    def append_entry(self, title: str, content: str) -> TopicEntry:
        """Add a block after the last, separated from it by one blank line."""
        entry = TopicEntry(title, f"## {title}\n{content}\n")
        if self.entries:
            last = self.entries[-1]
            if not last.text.endswith("\n"):
                last.text += "\n"
            if not last.text.endswith("\n\n"):
                last.text += "\n"
        elif self.preamble.strip() == "":
            self.preamble = "\n" if self.has_front else ""
        else:
            self.preamble = self.preamble.rstrip("\n") + "\n\n"
        self.entries.append(entry)
        return entry

    def remove_entry(self, index: int) -> TopicEntry:
        removed = self.entries.pop(index)
        if self.entries and index == len(self.entries):
            # The new last block should not leave a dangling blank line.
            self.entries[-1].text = self.entries[-1].text.rstrip("\n") + "\n"
        return removed


def entry_at_line(parsed: TopicFile, line: int) -> TopicEntry | None:
    """The entry whose block holds 1-based *line* of the rendered file."""
    current = 1
    if parsed.has_front:
        current += len(parsed.front) + 2
    current += len(_lines(parsed.preamble))
    for entry in parsed.entries:
        size = len(_lines(entry.text))
        if current <= line < current + size:
            return entry
        current += size
    return None


# --- entry text -----------------------------------------------------------------------------


def normalize_title(title: str) -> str:
    cleaned = " ".join(title.split()).lstrip("#").strip()
    if not cleaned:
        raise MemlaneError(
            "the entry title is empty",
            "give a short, self-contained title: it is what future sessions see in MEMORY.md",
        )
    if len(cleaned) > TITLE_MAX_CHARS:
        raise MemlaneError(
            f"the entry title is too long ({len(cleaned)} characters, at most {TITLE_MAX_CHARS})",
            "keep the title to one line and put the details in the content",
        )
    return cleaned


def normalize_content(content: str) -> str:
    lines = [line.rstrip() for line in content.strip("\n").splitlines()]
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        raise MemlaneError("nothing to save: the content is empty", "pass the knowledge to keep")
    # A level-1 or level-2 heading inside the content would split the entry
    # (or forge another one), so it becomes a level-3 heading.
    return "\n".join(_CONTENT_HEADING_RE.sub("###", line) for line in lines)


def first_line(text: str) -> str:
    for line in text.splitlines():
        cleaned = " ".join(line.strip().lstrip("#-*+ ").split())
        if cleaned:
            if len(cleaned) > DESCRIPTION_MAX_CHARS:
                cleaned = cleaned[: DESCRIPTION_MAX_CHARS - 1].rstrip() + "…"
            return cleaned
    return ""
