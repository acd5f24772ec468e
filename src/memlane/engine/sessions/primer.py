"""The sessions layer inside a session: the primer and heuristic auto-recall.

Both follow pi-lcm-memory (its README):

* **primer**: at session start, the latest sessions of the project in a
  ``## Project memory`` block of at most ``primer_token_budget`` tokens, part
  of the stable snapshot, plus one line for the user;
* **auto-recall**: a prompt that refers to the past ("remember", "last
  time", "on en a parlé", "上次" …) gets a ``## Recall`` hidden message with
  the best matching past messages, within ``auto_recall_token_budget``;
  the search is for the rest of the prompt (``recall_query``).

Tokens are counted as characters / 4, the usual rough rate for English
prose; the budgets are ceilings, not targets.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime

from memlane.core.types import Hit

CHARS_PER_TOKEN = 4

# Phrases that point at earlier work, in the languages people most often
# prompt coding agents in. Matched case-insensitively on word boundaries
# where the script has them.
_PAST_PHRASES = {
    "en": (
        r"remember(?:ed)?",
        r"recall",
        r"earlier",
        r"previous(?:ly)?",
        r"last time",
        r"(?:like|as) (?:before|last time)",
        r"(?:we|you|i) (?:discussed|talked about|decided|agreed|did|fixed|tried|chose)",
        r"last (?:week|month|session|sprint|night)",
        r"yesterday",
        r"the other day",
        r"a while ago",
        r"did we (?:ever|already)",
        r"have we (?:ever|already)",
        r"what was the (?:decision|reason|fix)",
        r"back when",
    ),
    "fr": (
        r"souviens",
        r"rappelle[- ]toi",
        r"précédemment",
        r"auparavant",
        r"comme (?:la dernière fois|avant|d'habitude)",
        r"la dernière fois",
        r"la fois (?:dernière|précédente)",
        r"(?:on|nous) (?:a|avons) (?:discuté|parlé|décidé)",
        r"la semaine dernière",
        r"hier",
    ),
    "de": (
        r"erinner\w*",
        r"vorhin",
        r"früher",
        r"wie (?:vorher|zuvor|beim letzten mal|letztes mal|das letzte mal)",
        r"(?:beim|das) letzte(?:n)? mal",
        r"letzte(?:s|n)? mal",
        r"weißt du noch",
        r"zuvor",
        r"(?:haben|hatten) wir (?:besprochen|entschieden|gemacht)",
        r"letzte woche",
        r"gestern",
    ),
    "es": (
        r"recuerd\w*",
        r"acuérdate",
        r"anteriormente",
        r"como (?:la última vez|antes)",
        r"la última vez",
        r"la vez pasada",
        r"(?:hablamos|discutimos|decidimos)",
        r"la semana pasada",
        r"ayer",
    ),
    "pt": (
        r"lembr\w*",
        r"como (?:da|na) última vez",
        r"(?:da|na) última vez",
        r"como antes",
        r"(?:conversamos|discutimos|decidimos)",
        r"semana passada",
        r"ontem",
    ),
    "it": (
        r"ricord\w*",
        r"come (?:l['’]ultima volta|prima|la volta scorsa)",
        r"l['’]ultima volta",
        r"la volta scorsa",
        r"abbiamo (?:discusso|parlato|deciso)",
        r"la settimana scorsa",
        r"ieri",
    ),
    "nl": (
        r"herinner\w*",
        r"(?:zoals|net als) (?:de )?vorige keer",
        r"(?:de )?vorige keer",
        r"weet je nog",
        r"eerder",
        r"vorige week",
        r"gisteren",
    ),
    "ru": (
        r"помнишь",
        r"вспомни",
        r"как (?:в прошлый раз|раньше)",
        r"в прошлый раз",
        r"ранее",
        r"(?:мы )?обсуждали",
        r"на прошлой неделе",
        r"вчера",
    ),
}
# Scripts without spaces between words: plain substrings.
_PAST_SUBSTRINGS = (
    "记得",
    "之前",
    "上次",
    "以前",
    "上周",
    "我们讨论过",
    "覚えて",
    "前回",
    "以前",
    "先週",
    "この前",
    "기억",
    "지난번",
    "저번",
    "지난주",
)
_PAST_RE = re.compile(
    r"(?<!\w)(?:" + "|".join(p for ps in _PAST_PHRASES.values() for p in ps) + r")(?!\w)",
    re.IGNORECASE,
)

AUTO_RECALL_MODES = ("off", "heuristic", "always")


def refers_to_the_past(prompt: str) -> bool:
    """True when the prompt points at earlier work ("like last time", "上次" …)."""
    if _PAST_RE.search(prompt):
        return True
    return any(s in prompt for s in _PAST_SUBSTRINGS)


def recall_query(prompt: str) -> str:
    """What a recall searches for: the prompt without the words that point
    at the past ("Wie beim letzten Mal: deploy to staging" → "deploy to
    staging"), which name no topic and, in another language than the past
    messages, only dilute the match. The whole prompt when nothing is left."""
    rest = _PAST_RE.sub(" ", prompt)
    for phrase in _PAST_SUBSTRINGS:
        rest = rest.replace(phrase, " ")
    rest = " ".join(rest.split()).strip(" :,;.!?-–—")
    return rest if any(ch.isalnum() for ch in rest) else prompt


def wants_recall(prompt: str, mode: str) -> bool:
    if mode == "always":
        return bool(prompt.strip())
    if mode == "heuristic":
        return refers_to_the_past(prompt)
    return False


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def render_recall(hits: Sequence[Hit], token_budget: int) -> str:
    """``## Recall``: one line per past message, within the token budget.

    Each line names where the message lives (session and turn, from the
    hit's heading) so the agent can open it with memory_transcript.
    """
    budget = token_budget * CHARS_PER_TOKEN
    head = "## Recall\nPast messages of this project that may be what the prompt refers to:"
    lines = [head]
    used = len(head)
    for hit in hits:
        where = f"[{hit.heading}] {hit.source}" if hit.heading else hit.source
        room = budget - used - len(where) - 8
        if room < 40:
            break
        line = f"- {_one_line(hit.content, min(room, 400))}\n  ({where})"
        lines.append(line)
        used += len(line) + 1
    return "\n".join(lines) if len(lines) > 1 else ""


def _day(iso: str | None) -> str:
    if not iso:
        return "unknown date"
    try:
        return datetime.fromisoformat(iso.replace("Z", "+00:00")).astimezone().date().isoformat()
    except ValueError:
        return iso[:10]


def primer(sessions: Sequence[object], token_budget: int) -> tuple[str | None, str | None]:
    """(``## Project memory`` block, the one line for the user), or (None, None).

    ``sessions`` are ``SessionInfo`` rows, newest first.
    """
    if not sessions:
        return None, None
    budget = token_budget * CHARS_PER_TOKEN
    head = "## Project memory\nRecent sessions in this project (newest first):"
    lines = [head]
    used = len(head)
    for info in sessions:
        gist = getattr(info, "last_summary", None) or getattr(info, "first_user", "") or ""
        day = _day(getattr(info, "last_at", None))
        count = getattr(info, "messages", 0)
        line = f"- {day} ({count} messages): {_one_line(gist, 160)}"
        if used + len(line) + 1 > budget:
            break
        lines.append(line)
        used += len(line) + 1
    last = _day(getattr(sessions[0], "last_at", None))
    noun = "session" if len(sessions) == 1 else "sessions"
    user_line = f"[memory] {len(sessions)} prior {noun}; last on {last}"
    return ("\n".join(lines) if len(lines) > 1 else None), user_line
