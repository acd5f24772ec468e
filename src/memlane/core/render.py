"""Plain-text renderings of results, shared by the CLI, the sidecar and MCP,
so every surface shows the same thing."""

from __future__ import annotations

import os

from memlane.core.confidence import BAND_MEANINGS, POSSIBLE, STRONG
from memlane.core.types import Hit, SearchResult, Section

SNIPPET_CHARS = 240


def short_path(path: str, base: str | None) -> str:
    if base is None:
        return path
    try:
        rel = os.path.relpath(path, base)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def snippet(content: str, limit: int = SNIPPET_CHARS) -> str:
    """One line of a chunk's text: anchors and headings dropped, clipped."""
    lines = [
        ln.strip()
        for ln in content.splitlines()
        if ln.strip() and not ln.lstrip().startswith(("<!--", "#"))
    ]
    text = " ".join(lines) or content.strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def hit_location(hit: Hit, base: str | None = None) -> str:
    """``path:start-end`` for a note; a session message has no line range in
    its transcript, so only the path (its heading names the turn)."""
    where = short_path(hit.source, base)
    if hit.start_line <= 0:
        return where
    return f"{where}:{hit.start_line}-{hit.end_line}"


def when_written(hit: Hit) -> str:
    """``2026-03-02 09:12, 12 days ago``: a hit's date and age, "" when unknown."""
    if hit.date is None:
        return ""
    when = hit.date.replace("T", " ")
    if hit.age_days is None:
        return when
    if hit.age_days == 0:
        return f"{when}, today"
    return f"{when}, {hit.age_days} day{'' if hit.age_days == 1 else 's'} ago"


def hit_labels(hit: Hit) -> str:
    """``[strong; 2026-03-02 09:12, 12 days ago]``: a hit's band and date, after
    its score, hash and place (which parsers of the first three keep reading)."""
    parts = [p for p in (hit.band or "", when_written(hit)) if p]
    return f"[{'; '.join(parts)}]" if parts else ""


def superseded_note(hit: Hit) -> str:
    """The line an outdated hit carries, "" for a current one."""
    if not hit.superseded_by:
        return ""
    return f"OUTDATED: superseded by the newer {hit.superseded_by}; prefer that one"


def render_hit(hit: Hit, base: str | None = None) -> str:
    where = hit_location(hit, base)
    heading = f"  {hit.heading}" if hit.heading else ""
    origin = f"  [{hit.project}]" if hit.project else ""
    labels = hit_labels(hit)
    lines = [
        f"{hit.score:.3f}  {hit.chunk_hash}  {where}{heading}{origin}"
        + (f"  {labels}" if labels else ""),
        f"       {snippet(hit.content)}",
    ]
    outdated = superseded_note(hit)
    if outdated:
        lines.append(f"       {outdated}")
    return "\n".join(lines)


CLI_EXPAND_HINT = "memlane expand HASH"
TOOL_EXPAND_HINT = "memory_expand(chunk_hash)"


#: What a score and its band mean, said under every list of hits
#: (index/legs/relevance.py, core/confidence.py).
SCORE_MEANING = (
    f"Scores estimate relevance in [0, 1]: strong ({STRONG:g} and above) is "
    f"{BAND_MEANINGS['strong']}, possible ({POSSIBLE:g} and above) is "
    f"{BAND_MEANINGS['possible']}, weak is {BAND_MEANINGS['weak']}. A hit marked "
    "OUTDATED was replaced by a newer entry."
)


def search_hints(result: SearchResult, expand_hint: str = CLI_EXPAND_HINT) -> dict[str, str]:
    """The sentences a search result says besides its hits, by role: ``headline``
    (the first line), ``score_meaning`` and ``next`` (what to do next).

    ``render_search`` is built from these, and the tools hand them out as
    structured fields too, so a client that shows only the structured form
    still carries them.
    """
    if not result.hits:
        if result.nothing_relevant:
            weaker = result.below_min_score
            return {
                "headline": (
                    f"Nothing relevant to {result.query!r} in memory ({result.mode} search): "
                    f"{weaker} weaker {'match' if weaker == 1 else 'matches'} scored below the "
                    f"minimum score {result.min_score:g}."
                ),
                "next": "Search with min_score 0 to see them anyway.",
            }
        return {
            "headline": (
                f"No memories match {result.query!r} ({result.mode} search); the result is empty."
            )
        }
    count = len(result.hits)
    return {
        "headline": (
            f"{count} {'hit' if count == 1 else 'hits'} for {result.query!r} ({result.mode} search)"
        ),
        "score_meaning": SCORE_MEANING,
        "next": f"Expand a hash: {expand_hint}",
    }


def render_search(
    result: SearchResult, base: str | None = None, expand_hint: str = CLI_EXPAND_HINT
) -> str:
    hints = search_hints(result, expand_hint)
    notes = [f"note: {n}" for n in result.notices]
    if not result.hits:
        head = " ".join(v for k, v in hints.items() if k in ("headline", "next"))
        return "\n".join([head, *notes])
    lines = [hints["headline"], *notes]
    lines += [render_hit(h, base) for h in result.hits]
    lines.append(f"{hints['score_meaning']} {hints['next']}")
    return "\n".join(lines)


def render_section(section: Section, base: str | None = None) -> str:
    lines = [
        f"Source: {short_path(section.source, base)} (lines {section.start_line}-{section.end_line})"
    ]
    if section.heading:
        lines.append(f"Heading: {section.heading}")
    if section.anchor:
        lines.append(f"Session: {section.anchor.session}  Turn: {section.anchor.turn}")
        lines.append(f"Transcript: {section.anchor.transcript}")
    lines.append("")
    lines.append(section.content)
    return "\n".join(lines)


def render_injection(hits: list[Hit], budget: int, base: str | None = None) -> str:
    """Auto-context hits in memory_search's shape with their whole text.

    Each hit keeps its header line (score, chunk hash, source) so it chains
    into memory_expand; hits are added whole while they fit in *budget*
    characters, and the first one is clipped rather than dropped.
    """
    head = "Relevant project memory (auto-context; expand a hash with memory_expand):"
    parts = [head]
    used = len(head)
    for hit in hits:
        where = hit_location(hit, base)
        labels = hit_labels(hit)
        head_line = f"{hit.score:.3f}  {hit.chunk_hash}  {where}" + (
            f"  {labels}" if labels else ""
        )
        block = f"{head_line}\n{hit.content.strip()}"
        room = budget - used - 2
        if len(block) > room:
            if len(parts) > 1 or room < 80:
                break
            block = block[: room - 1].rstrip() + "…"
        parts.append(block)
        used += len(block) + 2
    return "\n\n".join(parts) if len(parts) > 1 else ""
