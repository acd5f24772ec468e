"""``memlane forget`` of one of several entries written in the same minute."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import NOW, Cli
from memlane.core.errors import NotFoundError
from memlane.engine.journal.chunk_ids import resolve_chunk
from memlane.engine.project import Memory
from memlane.engine.shared.tool_catalog import SPECS
from memlane.engine.tools.dispatch import Tools

LEXICAL = {"MEMLANE_EMBEDDING_PROVIDER": "none"}
DAY = NOW.date().isoformat()
TIME = NOW.strftime("%H:%M")
NOTES = (
    "the websocket test is flaky because of the retry timer",
    "the cache is invalidated on every deploy by the hook",
    "payments use the sandbox key in staging",
)


def _write_same_minute(cli: Cli, project: Path) -> Path:
    for note in NOTES:
        assert cli("write", note, env=LEXICAL).returncode == 0
    daily = project / ".memsearch" / "memory" / f"{DAY}.md"
    assert daily.read_text(encoding="utf-8").count(f"### {TIME}\n") == 3
    return daily


def test_a_bare_time_of_several_entries_lists_them_with_the_command(
    cli: Cli, project: Path
) -> None:
    daily = _write_same_minute(cli, project)
    assert cli("index", env=LEXICAL).returncode == 0
    before = daily.read_bytes()
    out = cli("forget", "--date", DAY, "--time", TIME, env=LEXICAL)
    assert out.returncode != 0
    assert daily.read_bytes() == before
    assert "3 entries" in out.stderr and "nothing was removed" in out.stderr
    for position, note in enumerate(NOTES, start=1):
        assert f"{TIME}#{position} (line " in out.stderr
        assert note in out.stderr
    assert f"memlane forget --date {DAY} --time {TIME}#N" in out.stderr
    # Each candidate's chunk hash is the one search shows for it.
    found = json.loads(cli("search", "websocket flaky", "--json", env=LEXICAL).stdout)
    assert f"chunk {found['hits'][0]['chunk_hash']}" in out.stderr
    assert "Traceback" not in out.stderr


def test_the_position_removes_exactly_that_entry(cli: Cli, project: Path) -> None:
    daily = _write_same_minute(cli, project)
    out = cli("forget", "--date", DAY, "--time", f"{TIME}#2", env=LEXICAL)
    assert out.returncode == 0, out.stderr
    assert NOTES[1] in out.stdout
    text = daily.read_text(encoding="utf-8")
    assert NOTES[1] not in text
    assert NOTES[0] in text and NOTES[2] in text


def test_a_position_past_the_last_entry_removes_nothing(cli: Cli, project: Path) -> None:
    daily = _write_same_minute(cli, project)
    before = daily.read_bytes()
    out = cli("forget", "--date", DAY, "--time", f"{TIME}#4", env=LEXICAL)
    assert out.returncode != 0
    assert "only 3 entries" in out.stderr and f"{TIME}#3 (line" in out.stderr
    assert daily.read_bytes() == before
    for bad in (f"{TIME}#0", f"{TIME}#x", f"{TIME}#"):
        out = cli("forget", "--date", DAY, "--time", bad, env=LEXICAL)
        assert out.returncode != 0 and "HH:MM#N" in out.stderr, bad
    assert daily.read_bytes() == before


def test_the_first_eight_characters_of_a_hash_from_search_remove_that_entry(
    cli: Cli, project: Path
) -> None:
    daily = _write_same_minute(cli, project)
    assert cli("index", env=LEXICAL).returncode == 0
    found = json.loads(cli("search", "cache invalidated deploy", "--json", env=LEXICAL).stdout)
    chunk_hash = found["hits"][0]["chunk_hash"]
    out = cli("forget", chunk_hash[:8], env=LEXICAL)
    assert out.returncode == 0, out.stderr
    text = daily.read_text(encoding="utf-8")
    assert NOTES[1] not in text and NOTES[0] in text and NOTES[2] in text
    out = cli("forget", "0000000", env=LEXICAL)  # seven: too short to be unique
    assert out.returncode != 0 and "first 8" in out.stderr


def test_memory_forget_takes_the_same_position(memory: Memory) -> None:
    for note in NOTES:
        memory.write(note)
    tools = Tools(memory)
    result = tools.call("memory_forget", {"date": DAY, "time": f"{TIME}#3"})
    assert NOTES[2] in result.text
    text = (memory.scope.store / f"{DAY}.md").read_text(encoding="utf-8")
    assert NOTES[2] not in text and NOTES[0] in text
    spec = next(s for s in SPECS if s.name == "memory_forget")
    assert "HH:MM#N" in json.dumps(spec.json_schema())


def test_a_prefix_several_chunks_share_is_refused_with_the_list(memory: Memory) -> None:
    for i in range(20):
        memory.write(f"note number {i} about subsystem {i * 7}")
    memory.sync()
    source = str(memory.scope.store.resolve() / f"{DAY}.md")
    hashes = sorted(memory.index.chunk_hashes(source))
    # Twenty hashes over sixteen first characters: two share one.
    first = next(h[0] for h in hashes if sum(g[0] == h[0] for g in hashes) > 1)
    sharing = [h for h in hashes if h.startswith(first)]
    with pytest.raises(NotFoundError) as info:
        resolve_chunk(memory, first, min_chars=1)
    assert f"{len(sharing)} chunks start with {first}" in info.value.message
    assert all(h in info.value.message for h in sharing)
    assert resolve_chunk(memory, sharing[0]).chunk_hash == sharing[0]
