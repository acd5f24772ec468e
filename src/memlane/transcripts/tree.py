"""The entry tree of a transcript: the id index, target resolution, the tip,
the walk to the root and the window of turns shown around the target.

Only ids, parent links, file order, byte offsets and a coarse kind are kept
per entry, so a transcript of many MB costs one parse per line and a few
small objects; the full JSON of an entry is re-read (by offset) only for the
handful of entries that end up rendered.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from memlane.core.errors import NotFoundError

# Coarse kinds, decided while indexing so the window can be chosen before any
# entry is re-read.
K_USER = "user"
K_ASSISTANT = "assistant"
K_TOOL = "tool"  # a tool result: folded into the assistant turn before it
K_MARKER = "marker"  # compaction, branch summary, bash, custom message: one line
K_SILENT = "silent"  # model changes, labels, metadata: on the path, never shown
CONVERSATION_KINDS = frozenset({K_USER, K_ASSISTANT})


@dataclass(slots=True)
class Node:
    id: str
    parent: str | None
    order: int
    offset: int
    kind: str
    sidechain: bool = False
    # Claude Code writes one assistant reply as several lines with the same
    # message id; the group lets them render as one turn.
    group: str | None = None


@dataclass
class Index:
    path: str
    format: str
    nodes: dict[str, Node] = field(default_factory=dict)
    ordered: list[Node] = field(default_factory=list)
    session_id: str | None = None
    parent_session: str | None = None
    garbage_lines: int = 0
    unknown_types: Counter[str] = field(default_factory=Counter)
    duplicate_ids: int = 0
    missing_ids: int = 0

    def add(self, node: Node) -> None:
        if node.id in self.nodes:
            # The first occurrence wins: a later duplicate is more likely a
            # corrupted append than the entry an anchor was written for.
            self.duplicate_ids += 1
            return
        self.nodes[node.id] = node
        self.ordered.append(node)

    def notes(self) -> list[str]:
        out: list[str] = []
        if self.garbage_lines:
            out.append(
                f"skipped {_count(self.garbage_lines, 'unreadable line')} "
                "(not a JSON object, or truncated)"
            )
        if self.unknown_types:
            kinds = ", ".join(f"{name} ×{n}" for name, n in sorted(self.unknown_types.items()))
            total = sum(self.unknown_types.values())
            out.append(f"skipped {_count(total, 'entry', 'entries')} of unknown type: {kinds}")
        if self.duplicate_ids:
            out.append(
                f"ignored {_count(self.duplicate_ids, 'entry', 'entries')} repeating an earlier id"
            )
        if self.missing_ids:
            out.append(f"skipped {_count(self.missing_ids, 'entry', 'entries')} without an id")
        return out


def _count(n: int, singular: str, plural: str | None = None) -> str:
    return f"{n} {singular if n == 1 else (plural or singular + 's')}"


def resolve_target(index: Index, turn: str) -> Node:
    """The entry *turn* names: an exact id, else a unique id prefix."""
    exact = index.nodes.get(turn)
    if exact is not None:
        return exact
    matches = [node for node in index.ordered if node.id.startswith(turn)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        hint = "check the anchor's turn id, or omit turn to see the live branch"
        if index.parent_session:
            hint += f"; this session was forked from {index.parent_session}, which may hold it"
        raise NotFoundError(
            f"no entry with id or id prefix {turn!r} in transcript {index.path}", hint
        )
    raise NotFoundError(
        f"turn {turn!r} is ambiguous: {len(matches)} entries of transcript {index.path} "
        "start with it",
        "pass more characters of the entry id",
    )


def find_tip(index: Index, target: Node) -> Node:
    """The target's last descendant in file order, or the target itself.

    Following the latest descendant (not the file's last line) keeps a later
    branch off another part of the tree out of the answer, while still showing
    how the anchored exchange continued. Sidechains (Claude Code subagents) are
    only followed from a sidechain target.
    """
    children: dict[str, list[Node]] = {}
    for node in index.ordered:
        if node.parent is not None:
            children.setdefault(node.parent, []).append(node)
    tip = target
    seen = {target.id}
    stack = [target]
    while stack:
        node = stack.pop()
        for child in children.get(node.id, ()):
            if child.id in seen or child.sidechain != target.sidechain:
                continue
            seen.add(child.id)
            stack.append(child)
            if child.order > tip.order:
                tip = child
    return tip


def live_tip(index: Index) -> Node | None:
    """The tip of the live branch: the last main-chain entry the file holds.

    pi appends every new entry as a child of the current leaf, so the last
    entry written is the leaf a resumed session continues from; the branch
    itself is then defined by parent links, not by the lines around it.
    """
    for node in reversed(index.ordered):
        if not node.sidechain:
            return node
    return index.ordered[-1] if index.ordered else None


def walk_to_root(index: Index, tip: Node) -> tuple[list[Node], list[str]]:
    """The path root→tip by parent links, with a cycle guard."""
    path: list[Node] = []
    notes: list[str] = []
    seen: set[str] = set()
    node: Node | None = tip
    while node is not None:
        if node.id in seen:
            notes.append(
                f"parent links form a cycle at entry {node.id}; the branch is shown from there"
            )
            break
        seen.add(node.id)
        path.append(node)
        if node.parent is None:
            break
        parent = index.nodes.get(node.parent)
        if parent is None:
            notes.append(
                f"entry {node.id} names parent {node.parent}, which is not in this file; "
                "the branch is shown from there"
            )
        node = parent
    path.reverse()
    return path, notes


@dataclass
class Unit:
    """Consecutive path entries that render as one turn (or one marker)."""

    nodes: list[Node]
    kind: str

    @property
    def ids(self) -> set[str]:
        return {node.id for node in self.nodes}


def units_of(path: list[Node]) -> list[Unit]:
    units: list[Unit] = []
    last_assistant: Unit | None = None
    for node in path:
        if (
            node.kind == K_ASSISTANT
            and node.group is not None
            and last_assistant is not None
            and last_assistant.nodes[-1].group == node.group
        ):
            last_assistant.nodes.append(node)
            continue
        unit = Unit([node], node.kind)
        units.append(unit)
        if node.kind == K_ASSISTANT:
            last_assistant = unit
        elif node.kind not in (K_SILENT, K_TOOL):
            last_assistant = None
    return units


def choose_window(
    units: list[Unit], target: Node | None, context: int, limit: int
) -> tuple[list[Unit], int]:
    """The units to show and the index (into that list) of the target's unit.

    Around a target: *context* conversation turns on either side of it, plus
    the markers between them. Without one: the last *limit* turns. Tool
    results and silent entries in that span stay in the list (they are folded
    or dropped at rendering) so the renderer can count them.
    """
    conv = [i for i, unit in enumerate(units) if unit.kind in CONVERSATION_KINDS]
    if target is None:
        if conv:
            start = conv[max(0, len(conv) - max(limit, 1))]
        else:
            start = max(0, len(units) - max(limit, 1))
        return units[start:], -1
    t = next(i for i, unit in enumerate(units) if target.id in unit.ids)
    before = [i for i in conv if i < t][-context:] if context > 0 else []
    after = [i for i in conv if i > t][:context] if context > 0 else []
    start = before[0] if before else t
    end = after[-1] if after else t
    return units[start : end + 1], t - start
