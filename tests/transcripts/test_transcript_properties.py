"""Property tests: random trees, in-file branches, forks and cycles.

A small reference model (children, last descendant in file order, parent
walk) says which entries may appear; the reader must always show the target
and nothing off the target's root path and chosen continuation.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _transcript_builders import ClaudeSession, PiSession
from memlane.transcripts import Transcript, read_transcript

KINDS = ["user", "assistant", "assistant", "user", "tool", "compaction", "silent", "summary"]
CONVERSATION = {"user", "assistant"}
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@dataclass
class Spec:
    id: str
    parent: int | None  # index into the list, so ids can be anything
    kind: str
    sidechain: bool = False


@st.composite
def trees(draw: st.DrawFn, max_size: int = 30, sidechains: bool = False) -> list[Spec]:
    """Entries in file order; each parent is earlier, mostly the previous
    entry (a running conversation), sometimes an older one (a /tree branch)
    or none (a new root)."""
    size = draw(st.integers(1, max_size))
    specs: list[Spec] = []
    for i in range(size):
        parent: int | None = None
        if i:
            how = draw(st.sampled_from(["continue"] * 6 + ["branch"] * 3 + ["root"]))
            if how == "continue":
                parent = i - 1
            elif how == "branch":
                parent = draw(st.integers(0, i - 1))
        kind = draw(st.sampled_from(KINDS))
        side = False
        if sidechains and parent is not None:
            side = specs[parent].sidechain or (kind == "user" and draw(st.booleans()))
        specs.append(Spec(f"{i:04x}{draw(st.sampled_from('abc'))}", parent, kind, side))
    return specs


def reference_path(specs: list[Spec], target: int | None) -> list[str]:
    """Root→tip ids the reader may show, computed the plain way."""
    if target is None:
        mains = [i for i, s in enumerate(specs) if not s.sidechain]
        tip = mains[-1] if mains else len(specs) - 1
    else:
        children: dict[int, list[int]] = {}
        for i, s in enumerate(specs):
            if s.parent is not None:
                children.setdefault(s.parent, []).append(i)
        tip, stack = target, [target]
        while stack:
            for child in children.get(stack.pop(), []):
                if specs[child].sidechain == specs[target].sidechain:
                    stack.append(child)
                    tip = max(tip, child)
    path: list[str] = []
    node: int | None = tip
    while node is not None:
        path.append(specs[node].id)
        node = specs[node].parent
    return path[::-1]


def write_pi(specs: list[Spec], path: Path, parent_session: str | None = None) -> Path:
    s = PiSession("prop-session", parent_session)
    for spec in specs:
        parent = specs[spec.parent].id if spec.parent is not None else None
        if spec.kind == "user":
            s.user(f"user {spec.id}", spec.id, parent)
        elif spec.kind == "assistant":
            s.assistant(f"assistant {spec.id}", spec.id, parent, tool_calls=[("bash", {"c": 1})])
        elif spec.kind == "tool":
            s.tool_result(f"result {spec.id}", spec.id, parent)
        elif spec.kind == "compaction":
            s.entry("compaction", spec.id, parent, summary="sum", firstKeptEntryId=spec.id)
        elif spec.kind == "summary":
            s.entry("branch_summary", spec.id, parent, fromId="x", summary="left")
        else:
            s.entry("model_change", spec.id, parent, provider="p", modelId="m")
    return s.write(path)


def write_claude(specs: list[Spec], path: Path) -> Path:
    c = ClaudeSession()
    for spec in specs:
        parent = specs[spec.parent].id if spec.parent is not None else None
        kw = {"parent": parent, "sidechain": spec.sidechain}
        if spec.kind == "user":
            c.user(f"user {spec.id}", spec.id, **kw)
        elif spec.kind == "assistant":
            block = {"type": "text", "text": f"assistant {spec.id}"}
            c.assistant([block], f"msg_{spec.id}", spec.id, **kw)
        elif spec.kind == "tool":
            content = [{"type": "tool_result", "tool_use_id": "t", "content": "r"}]
            c.line("user", spec.id, message={"role": "user", "content": content}, **kw)  # type: ignore[arg-type]
        elif spec.kind == "compaction":
            # A compact boundary cuts parentUuid and keeps the link logically.
            c.line(
                "system",
                spec.id,
                None,
                sidechain=spec.sidechain,
                subtype="compact_boundary",
                logicalParentUuid=parent,
                compactMetadata={"trigger": "manual", "preTokens": 10},
            )
        elif spec.kind == "summary":
            c.user("summary text", spec.id, isCompactSummary=True, **kw)
        else:
            c.line(
                "system", spec.id, sidechain=spec.sidechain, parent=parent, subtype="turn_duration"
            )
    return c.write(path)


def check(t: Transcript, specs: list[Spec], target: int | None, context: int, limit: int) -> None:
    allowed = reference_path(specs, target)
    position = {entry_id: i for i, entry_id in enumerate(allowed)}
    shown = [entry_id for turn in t.turns for entry_id in (turn.ids or (turn.id,))]
    assert set(shown) <= set(allowed), (shown, allowed)
    order = [position[entry_id] for entry_id in shown]
    assert order == sorted(order)
    kinds = {spec.id: spec.kind for spec in specs}
    conv_path = [entry_id for entry_id in allowed if kinds[entry_id] in CONVERSATION]
    conv_shown = [turn.id for turn in t.turns if turn.role in CONVERSATION]
    if target is None:
        assert conv_shown == conv_path[-limit:]
        assert not any(turn.is_target for turn in t.turns)
        return
    target_id = specs[target].id
    assert [turn.id for turn in t.turns if turn.is_target] == [target_id]
    assert t.target == target_id
    at = position[target_id]
    before = [e for e in conv_path if position[e] < at][-context:] if context else []
    after = [e for e in conv_path if position[e] > at][:context] if context else []
    middle = [target_id] if kinds[target_id] in CONVERSATION else []
    assert conv_shown == before + middle + after


@SETTINGS
@given(
    specs=trees(),
    data=st.data(),
    context=st.integers(0, 4),
    limit=st.integers(1, 8),
)
def test_pi_random_trees(specs: list[Spec], data: st.DataObject, context: int, limit: int) -> None:
    target = data.draw(st.one_of(st.none(), st.integers(0, len(specs) - 1)))
    with tempfile.TemporaryDirectory() as tmp:
        path = write_pi(specs, Path(tmp) / "s.jsonl")
        turn = specs[target].id if target is not None else None
        t = read_transcript(path, turn, context=context, limit=limit)
    check(t, specs, target, context, limit)


@SETTINGS
@given(specs=trees(sidechains=True), data=st.data(), context=st.integers(0, 4))
def test_claude_random_trees_with_sidechains(
    specs: list[Spec], data: st.DataObject, context: int
) -> None:
    target = data.draw(st.one_of(st.none(), st.integers(0, len(specs) - 1)))
    with tempfile.TemporaryDirectory() as tmp:
        path = write_claude(specs, Path(tmp) / "s.jsonl")
        turn = specs[target].id if target is not None else None
        t = read_transcript(path, turn, context=context, limit=50)
    check(t, specs, target, context, 50)
    if target is None or not specs[target].sidechain:
        sides = {spec.id for spec in specs if spec.sidechain}
        assert not sides & {turn.id for turn in t.turns}


@SETTINGS
@given(
    old=trees(max_size=20),
    data=st.data(),
    context=st.integers(0, 3),
)
def test_forks_into_new_files(old: list[Spec], data: st.DataObject, context: int) -> None:
    """/fork copies one root path (same ids) into a new file that then grows
    on its own; the old file grows too. Each file shows only its own tree."""
    fork_at = data.draw(st.integers(0, len(old) - 1))
    ancestors: list[str] = []
    node: int | None = fork_at
    while node is not None:
        ancestors.append(old[node].id)
        node = old[node].parent
    copied_ids = set(ancestors)
    copied = [s for s in old if s.id in copied_ids]
    where = {s.id: i for i, s in enumerate(old)}
    remap = {where[s.id]: i for i, s in enumerate(copied)}
    fork = [Spec(s.id, remap[s.parent] if s.parent is not None else None, s.kind) for s in copied]
    grow = data.draw(st.lists(st.sampled_from(KINDS), max_size=6))
    for i, kind in enumerate(grow):
        fork.append(Spec(f"n{i:03d}", len(fork) - 1, kind))
    old_grown = list(old) + [
        Spec(f"o{i:03d}", len(old) + i - 1, kind) for i, kind in enumerate(grow)
    ]
    with tempfile.TemporaryDirectory() as tmp:
        old_path = write_pi(old_grown, Path(tmp) / "old.jsonl")
        fork_path = write_pi(fork, Path(tmp) / "fork.jsonl", parent_session=str(old_path))
        target_id = old[fork_at].id
        in_fork = read_transcript(fork_path, target_id, context=context)
        in_old = read_transcript(old_path, target_id, context=context)
        live_fork = read_transcript(fork_path, limit=50)
    check(in_fork, fork, fork.index(next(s for s in fork if s.id == target_id)), context, 50)
    check(in_old, old_grown, fork_at, context, 50)
    check(live_fork, fork, None, context, 50)
    assert in_fork.parent_session == str(old_path)
    assert not any(turn.id.startswith("o") for turn in in_fork.turns)
    assert not any(turn.id.startswith("n") for turn in in_old.turns)


@SETTINGS
@given(
    parents=st.lists(st.one_of(st.none(), st.integers(0, 11)), min_size=1, max_size=12),
    data=st.data(),
)
def test_arbitrary_parent_links_never_hang(parents: list[int | None], data: st.DataObject) -> None:
    """Parent links may point anywhere (later entries, itself, cycles)."""
    size = len(parents)
    lines = [json.dumps({"type": "session", "version": 3, "id": "s", "timestamp": "2026-01-01T00:00:00Z", "cwd": "/"})]  # fmt: skip
    for i, parent in enumerate(parents):
        role = "user" if i % 2 == 0 else "assistant"
        content = f"m{i}" if role == "user" else [{"type": "text", "text": f"m{i}"}]
        lines.append(
            json.dumps(
                {
                    "type": "message",
                    "id": f"id{i:02d}",
                    "parentId": f"id{parent % size:02d}" if parent is not None else None,
                    "timestamp": "2026-01-01T00:00:00Z",
                    "message": {"role": role, "content": content},
                }
            )
        )
    target = data.draw(st.one_of(st.none(), st.integers(0, size - 1)))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "s.jsonl"
        path.write_text("\n".join(lines) + "\n")
        t = read_transcript(path, f"id{target:02d}" if target is not None else None, context=20)
    shown = [turn.id for turn in t.turns]
    assert len(shown) == len(set(shown)) <= size
    if target is not None:
        assert f"id{target:02d}" in shown
    else:  # the live branch ends at the file's last entry, whatever its links
        assert shown and shown[-1] == f"id{size - 1:02d}"
