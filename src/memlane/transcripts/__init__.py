"""L3 recall: read the conversation a memory entry was distilled from.

A pure file read (no index, no embedder), so it keeps working when search
does not. ``read_transcript`` indexes the file once (ids, parent links,
offsets), resolves the anchored entry, follows the tree from it, and
re-reads only the entries it shows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import IO, Any

from memlane.core.errors import StoreError
from memlane.core.settings import TRANSCRIPT_CONTEXT, TRANSCRIPT_LIMIT, TURN_CHAR_CAP
from memlane.transcripts import claude, codex, model, pi
from memlane.transcripts.draft import Draft
from memlane.transcripts.formats import format_of
from memlane.transcripts.jsonl import SNIFF_LINES, open_transcript, parse_line, read_at, scan
from memlane.transcripts.model import ToolCall, Transcript, Turn
from memlane.transcripts.render import build_turn
from memlane.transcripts.tree import (
    CONVERSATION_KINDS,
    K_ASSISTANT,
    K_SILENT,
    K_TOOL,
    Index,
    Node,
    Unit,
    choose_window,
    find_tip,
    live_tip,
    resolve_target,
    units_of,
    walk_to_root,
)

__all__ = ["ToolCall", "Transcript", "Turn", "read_transcript"]


def read_transcript(
    path: str | Path,
    turn: str | None = None,
    *,
    context: int = TRANSCRIPT_CONTEXT,
    limit: int = TRANSCRIPT_LIMIT,
    turn_char_cap: int = TURN_CHAR_CAP,
) -> Transcript:
    """The turns around entry *turn* (an id or unique prefix) on its branch, or
    the last *limit* turns of the live branch when *turn* is None.

    Raises NotFoundError for a missing file or an unknown/ambiguous turn, and
    StoreError for a directory, an unreadable or empty file, or content that is
    neither a pi session nor a Claude Code transcript.
    """
    file = Path(path).expanduser()
    shown_path = str(file)
    turn = turn.strip() if turn else None
    with open_transcript(file) as handle:
        index = _build_index(handle, shown_path)
        notes = index.notes()
        target = resolve_target(index, turn) if turn else None
        tip = find_tip(index, target) if target else live_tip(index)
        path_nodes, walk_notes = walk_to_root(index, tip) if tip else ([], [])
        notes.extend(walk_notes)
        if target is not None and target.sidechain:
            notes.append(f"entry {target.id} is in a sidechain (a subagent's conversation)")
        units = units_of(path_nodes)
        window, _ = choose_window(units, target, max(context, 0), max(limit, 1))
        reader = _DRAFTS.get(index.format, claude.draft)
        turns, changed = _render_window(handle, window, target, reader, turn_char_cap)
    if changed:
        notes.append(
            f"{changed} entr{'y' if changed == 1 else 'ies'} changed while the file was read "
            "(rewritten by its session?); read it again to see them"
        )
    return Transcript(
        path=shown_path,
        format=index.format,
        session_id=index.session_id,
        target=target.id if target else None,
        turns=tuple(turns),
        branch_entries=len(path_nodes),
        branch_turns=sum(1 for u in units if u.kind in CONVERSATION_KINDS),
        parent_session=index.parent_session,
        notes=tuple(notes),
    )


def _render_window(
    stream: IO[bytes],
    window: list[Unit],
    target: Node | None,
    read: Callable[[dict[str, Any]], Draft],
    turn_char_cap: int,
) -> tuple[list[Turn], int]:
    """Turns for the window's units, re-reading only their entries; tool
    results are counted onto the assistant turn that called them. Also returns
    how many entries no longer matched the index (the file changed under us)."""
    turns: list[Turn] = []
    changed = 0
    last_assistant: int | None = None
    folded = 0
    for unit in window:
        hit = target is not None and target.id in unit.ids
        if not hit and unit.kind in (K_SILENT, K_TOOL):
            if unit.kind == K_TOOL and last_assistant is not None:
                folded += len(unit.nodes)
            continue
        if last_assistant is not None and folded:
            turns[last_assistant] = _with_folded(turns[last_assistant], folded)
        folded = 0
        drafts: list[tuple[str, Draft]] = []
        for node in unit.nodes:
            obj = read_at(stream, node.offset)
            if obj is None or _entry_id(obj) not in (node.id, None):
                changed += 1
                continue
            drafts.append((node.id, read(obj)))
        if not drafts:
            continue
        turns.append(build_turn(drafts, is_target=hit, folded=0, turn_char_cap=turn_char_cap))
        last_assistant = len(turns) - 1 if unit.kind == K_ASSISTANT else None
    if last_assistant is not None and folded:
        turns[last_assistant] = _with_folded(turns[last_assistant], folded)
    return turns, changed


def _entry_id(obj: dict[str, Any]) -> str | None:
    value = obj.get("uuid", obj.get("id"))  # Claude Code's uuid, pi's id
    return value if isinstance(value, str) else None


def _build_index(stream: IO[bytes], shown_path: str) -> Index:
    index: Index | None = None
    indexer: pi.PiIndexer | claude.ClaudeIndexer | codex.CodexIndexer | None = None
    garbage = 0
    lines = 0
    # Valid JSON seen before the format is known, kept to be counted as
    # unknown entries rather than as unreadable lines.
    undecided: list[str] = []
    for order, (offset, line) in enumerate(scan(stream)):
        lines += 1
        obj = parse_line(line)
        if obj is None:
            garbage += 1
            if indexer is None and lines >= SNIFF_LINES:
                break
            continue
        if indexer is None:
            fmt = format_of(obj)
            if fmt is None:
                if lines >= SNIFF_LINES:
                    break
                undecided.append(str(obj.get("type")))
                continue
            index = Index(shown_path, fmt)
            if fmt == model.CODEX:
                indexer = codex.CodexIndexer(index)
            else:
                indexer = (
                    pi.PiIndexer(index) if fmt in model.PI_SHAPED else claude.ClaudeIndexer(index)
                )
        indexer.add(obj, order, offset)
    if index is None:
        raise StoreError(
            f"not a pi session, Claude Code or Codex transcript: {shown_path}",
            "pass the session .jsonl file the anchor's transcript: field names",
        )
    index.garbage_lines += garbage
    index.unknown_types.update(undecided)
    return index


_DRAFTS: dict[str, Callable[[dict[str, Any]], Draft]] = {
    model.PI: pi.draft,
    model.CLAUDE_CODE: claude.draft,
    model.CODEX: codex.draft,
    model.OPENCODE: pi.draft,  # the copy's lines are pi's shapes
}


def _with_folded(turn: Turn, folded: int) -> Turn:
    return replace(turn, folded_results=turn.folded_results + folded)
