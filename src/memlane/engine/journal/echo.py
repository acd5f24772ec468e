"""No echo chamber: what memlane handed the agent is not captured back as new memory.

An exchange in which the agent ran memlane's own tools (``memory_search``,
``memory_expand``, ``memory_transcript``, ``memory_similar``,
``memory_topic``, ``memory_write``, ``memory_forget``, ...) or which the
``/recall`` command started may answer by restating what those tools
returned. Captured, that restatement becomes a second, competing copy of the
memory it came from, which the next search ranks first: recall feeds on
itself. The rule (docs/session.md, "What is not captured again"):

* **Recalled text** of an exchange: every memlane tool result of the
  exchange, the text a ``memory_write`` / ``memory_topic add`` stored (it is
  in the store already), and the hidden message memlane injected before the
  prompt (auto-context hits, surfaced topics, recalled past messages).
* The answer is cut into sentences (per line, then at ``.``, ``!``, ``?``).
  A sentence is **restated** when at least ``RESTATED_COVERAGE`` of its
  distinct content words (lower-cased, crudely stemmed, stopwords and
  recall chatter such as "memory", "found", "according" left out) occur in
  the recalled text or in the question it answers (the user's sentences
  that end with ``?``, the query of a ``/recall``): restating the question
  adds nothing either. Statements in the user's prompt are weighed the
  same way (a new fact the user states is new); its questions and a whole
  ``/recall`` request are not.
* **Recall-only**: memlane's tools ran (or the prompt is a ``/recall``
  request), the host did not report any other tool call, and restated
  sentences hold at least ``ECHO_SHARE`` of the content words. Such an
  exchange is not captured at all.
* Otherwise the exchange is captured without its restated sentences: the
  new work is kept, the recalled text is not written a second time.

An exchange in which memlane ran no tool is judged by nothing here, even if
a hidden message was injected: that happens before most prompts, and new
work that talks about the same subject as a surfaced topic must not be
mistaken for an echo. The measure works on words; in scripts written
without spaces it rarely finds a restatement, so such answers are captured
as before (capture is maximal).
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memlane.core.words import FUNCTION_WORDS, light_stem

#: The text pi's ``/recall <query>`` command sends as the user's prompt
#: starts with this (integrations/pi/extensions/memlane/commands.ts).
RECALL_PROMPT_PREFIX = "Recall from long-term memory:"
#: A sentence whose distinct content words occur in the recalled text at
#: least this much is a restatement. High on purpose: new work on a
#: recalled subject reuses its words ("updated the deploy script to need the
#: release manager's approval" shares 4 of 7 words with the decision it
#: implements) and must be kept.
RESTATED_COVERAGE = 0.75
#: An exchange whose restated sentences carry at least this share of its
#: content words only recalled memory.
ECHO_SHARE = 0.7
#: What a captured answer reads when every sentence of it was restated
#: (the exchange is kept because other tools ran: the work is the news).
ALL_RESTATED = "(the answer restated what memlane recalled)"

_WORD_RE = re.compile(r"\w+")
_SENTENCE_END_RE = re.compile(r"(?<=[.!?])\s+")
_MCP_NAME_RE = re.compile(r"^mcp__(?P<server>.+)__(?P<tool>[A-Za-z0-9_]+)$")
# OpenCode names an MCP server's tools ``<server>_<tool>``: memlane's all start ``memory_``.
_OPENCODE_NAME_RE = re.compile(r"^(?P<server>[A-Za-z0-9_-]+?)_(?P<tool>memory_[A-Za-z0-9_]+)$")
# Words that carry no fact of their own: function words, and the words an
# agent wraps recalled text in ("according to memory, ...", "I found ...").
_WRAPPING_TEXT = """
okay ok sure here's there's it's that's i'm
memory memories recall recalled remember remembered remind reminded search searched
find found according note notes noted say says said mention mentioned record recorded
earlier previous previously past last session sessions journal entry entries topic
topics chunk chunks hash hashes result results match matched matches source sources
based cite cited citing shows shown saved store stored expand transcript
"""
_IGNORED = frozenset(light_stem(w) for w in (*FUNCTION_WORDS, *_WRAPPING_TEXT.split()))


def content_terms(text: str) -> set[str]:
    """The distinct content words of *text*, in the form they are compared in."""
    out: set[str] = set()
    for token in _WORD_RE.findall(text.casefold()):
        for part in token.split("_"):
            if len(part) < 2 and not part.isdigit():
                continue
            stem = light_stem(part)
            if stem not in _IGNORED:
                out.add(stem)
    return out


@functools.cache
def memlane_tool_names() -> frozenset[str]:
    """The agent tools memlane serves (engine.tools), by their bare names."""
    from memlane.engine.shared.tool_catalog import SPEC_BY_NAME

    return frozenset(SPEC_BY_NAME)


def is_memlane_tool(name: object) -> bool:
    """Whether a tool call in a transcript or host report is one of memlane's.

    pi registers the bare names; Claude Code prefixes an MCP server's tools
    with ``mcp__<server>__`` (``mcp__memlane__memory_search``, or the
    plugin form ``mcp__plugin_memlane_memlane__memory_search``), OpenCode
    with ``<server>_`` (``memlane_memory_search``): those
    count when the server's name says memlane, so another server's
    ``memory_search`` is not taken for ours.
    """
    if not isinstance(name, str):
        return False
    names = memlane_tool_names()
    if name in names:
        return True
    found = _MCP_NAME_RE.match(name) or _OPENCODE_NAME_RE.match(name)
    return bool(found and found["tool"] in names and "memlane" in found["server"].casefold())


def is_recall_prompt(text: str) -> bool:
    """Whether a user message is the prompt pi's ``/recall`` command sent."""
    return text.lstrip().startswith(RECALL_PROMPT_PREFIX)


# -- what memlane handed the agent during one exchange ----------------------------------


@dataclass(frozen=True)
class Recalled:
    """memlane's tool calls of one exchange and every text memlane handed the agent."""

    tools: tuple[str, ...] = ()
    texts: tuple[str, ...] = ()


# Arguments whose text a tool stores: already in memory once it returns.
_STORED_ARGUMENTS = ("text", "content", "title")


class RecallLog:
    """Collects, between two settled exchanges, what memlane handed the agent."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tools: list[str] = []
        self._texts: list[str] = []

    def note_tool(self, name: str, arguments: Mapping[str, Any], result_text: str) -> None:
        texts = [result_text]
        texts += [
            value for key in _STORED_ARGUMENTS if isinstance(value := arguments.get(key), str)
        ]
        with self._lock:
            self._tools.append(name)
            self._texts.extend(texts)

    def note_injection(self, text: str) -> None:
        with self._lock:
            self._texts.append(text)

    def take(self) -> Recalled:
        """What was collected since the last ``take``; the log starts over."""
        with self._lock:
            taken = Recalled(tuple(self._tools), tuple(self._texts))
            self._tools.clear()
            self._texts.clear()
        return taken


# -- the verdict -----------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """How much of an exchange restated what memlane recalled."""

    recall_only: bool
    share: float  # of the content words, in restated sentences
    restated: int  # sentences of the answer that restated recalled text
    assistant: str  # the answer without them
    tools: tuple[str, ...]

    @property
    def reason(self) -> str:
        used = ", ".join(dict.fromkeys(self.tools)) or "the /recall command"
        return (
            f"the answer only restated what memlane recalled ({self.share:.0%} of it came "
            f"from {used}); it is in memory already"
        )


@dataclass(frozen=True)
class _Sentence:
    text: str
    weight: int  # distinct content words
    restated: bool


def _sentences(line: str, known: set[str]) -> list[_Sentence]:
    out = []
    for piece in _SENTENCE_END_RE.split(line.strip()):
        if not piece:
            continue
        terms = content_terms(piece)
        covered = len(terms & known) / len(terms) if terms else 0.0
        out.append(_Sentence(piece, len(terms), bool(terms) and covered >= RESTATED_COVERAGE))
    return out


def _is_question(sentence: str) -> bool:
    return sentence.rstrip().endswith("?")


def _asked(user: str) -> set[str]:
    """The content words of what the user asked: questions, or a /recall query."""
    if is_recall_prompt(user):
        query = user.lstrip()[len(RECALL_PROMPT_PREFIX) :].split("\n\n", 1)[0]
        return content_terms(query)
    out: set[str] = set()
    for line in user.splitlines():
        for piece in _SENTENCE_END_RE.split(line.strip()):
            if _is_question(piece):
                out |= content_terms(piece)
    return out


def _user_statements(user: str, known: set[str]) -> list[_Sentence]:
    """The prompt's sentences that state something (its questions ask, they add nothing)."""
    return [
        sentence
        for line in user.splitlines()
        for sentence in _sentences(line, known)
        if not _is_question(sentence.text)
    ]


def judge(
    user: str,
    assistant: str,
    recalled: Recalled,
    *,
    other_tools: Sequence[str] = (),
) -> Verdict | None:
    """The echo verdict of one exchange; None when memlane took no part in it.

    ``other_tools`` are the host's report of the exchange's tool calls that
    are not memlane's (edits, commands, reads): with any of them the
    exchange did its own work and is never recall-only.
    """
    recall_prompt = is_recall_prompt(user)
    if not recalled.tools and not recall_prompt:
        return None
    known = _asked(user)
    for text in recalled.texts:
        known |= content_terms(text)
    measured = [] if recall_prompt else _user_statements(user, known)
    kept_lines: list[str] = []
    restated = 0
    for line in assistant.splitlines():
        sentences = _sentences(line, known)
        measured += sentences
        if not any(s.restated for s in sentences):
            kept_lines.append(line)
            continue
        restated += sum(1 for s in sentences if s.restated)
        kept = [s.text for s in sentences if not s.restated]
        if kept:
            indent = line[: len(line) - len(line.lstrip())]
            kept_lines.append(indent + " ".join(kept))
    total = sum(s.weight for s in measured)
    share = sum(s.weight for s in measured if s.restated) / total if total else 0.0
    kept_text = "\n".join(kept_lines).strip()
    return Verdict(
        recall_only=share >= ECHO_SHARE and not other_tools,
        share=share,
        restated=restated,
        assistant=kept_text if kept_text or not restated else ALL_RESTATED,
        tools=recalled.tools,
    )
