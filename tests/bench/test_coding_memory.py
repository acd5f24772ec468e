"""The coding-memory quality set, its store writer and the runner's own parts.

No model here: the one search goes through the command in lexical mode.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "quality"
sys.path.insert(0, str(BENCH))

from coding import (  # noqa: E402
    EntryLocator,
    isolated_env,
    parse_batch,
    parse_system,
    score_system,
)
from coding_store import (  # noqa: E402
    CodingSet,
    Entry,
    Query,
    Session,
    entry_time,
    load_set,
    session_uuid,
    transcript_path,
    turn_id,
    write_coding_store,
)

from helpers import Cli, make_project, open_memory  # noqa: E402
from memlane.core.types import Anchor  # noqa: E402
from memlane.store.anchor import parse_anchor  # noqa: E402
from memlane.store.chunker import chunk_markdown  # noqa: E402
from memlane.store.redaction import redact_for_storage  # noqa: E402

DATA = load_set()
QUESTION_CATEGORIES = {"paraphrase", "rare-term"}
UNRELATED_CATEGORIES = {"gibberish", "everyday", "other-code", "shared-word", "near-miss"}


def test_the_set_meets_its_minimums() -> None:
    assert len(DATA.sessions) >= 12
    assert all(len(s.entries) == 6 for s in DATA.sessions)
    assert len(DATA.entries) >= 72
    assert len(DATA.questions) >= 72
    assert len(DATA.unrelated) >= 36
    assert len({s.start.date() for s in DATA.sessions}) >= 6  # spread over days


def test_the_set_is_well_formed() -> None:
    entry_ids = [e.id for e in DATA.entries]
    assert len(set(entry_ids)) == len(entry_ids)
    assert len({s.id for s in DATA.sessions}) == len(DATA.sessions)
    queries = [*DATA.questions, *DATA.unrelated]
    assert len({q.id for q in queries}) == len(queries)
    texts = [" ".join(q.text.lower().split()) for q in queries]
    assert len(set(texts)) == len(texts)
    assert all(q.text.strip() and "\n" not in q.text for q in queries)  # one batch line each
    assert {q.gold for q in DATA.questions} == set(entry_ids)  # every entry is asked for
    assert {q.category for q in DATA.questions} == QUESTION_CATEGORIES
    assert {q.category for q in DATA.unrelated} == UNRELATED_CATEGORIES
    assert all(q.gold is None for q in DATA.unrelated)
    for entry in DATA.entries:
        assert 120 <= len(entry.text) <= 300, entry.id
        assert "\n" not in entry.text, entry.id  # one distilled bullet
        assert redact_for_storage(entry.text) == entry.text, entry.id  # stored as written
    assert len({turn_id(e) for e in entry_ids}) == len(entry_ids)


def test_the_store_holds_one_anchored_chunk_per_entry(tmp_path: Path) -> None:
    store = write_coding_store(DATA, make_project(tmp_path))
    days = sorted(p.name for p in store.glob("*.md"))
    assert days == sorted({f"{s.start.date().isoformat()}.md" for s in DATA.sessions})
    expected = {turn_id(e.id): (session_uuid(e.session), e.text) for e in DATA.entries}
    seen: dict[str, tuple[str, str]] = {}
    headings = 0
    for day in days:
        path = store / day
        text = path.read_text(encoding="utf-8")
        assert text.startswith(f"# {day.removesuffix('.md')}\n")
        headings += text.count("\n## Session ")
        for chunk in chunk_markdown(text, str(path), "m"):
            anchor = parse_anchor(chunk.content)
            assert anchor is not None and chunk.heading_level == 3
            assert anchor.turn not in seen
            seen[anchor.turn] = (anchor.session, chunk.content.splitlines()[-1].removeprefix("- "))
    assert seen == expected
    assert headings == len(DATA.sessions)


def test_the_store_is_byte_for_byte_what_memory_write_produces(tmp_path: Path) -> None:
    """Capture writes through ``Memory.write``; the set's writer must leave the same files."""
    first = DATA.sessions[0]
    written = write_coding_store(replace(DATA, sessions=(first,)), make_project(tmp_path, "a"))
    by_capture = make_project(tmp_path, "b")
    transcript = transcript_path(DATA, first)
    with open_memory(by_capture) as mem:
        for index, entry in enumerate(first.entries):
            anchor = Anchor(session_uuid(first.id), turn_id(entry.id), transcript)
            mem.write(entry.text, anchor, now=entry_time(first, index))
        captured = mem.scope.store
    name = f"{first.start.date().isoformat()}.md"
    assert (written / name).read_bytes() == (captured / name).read_bytes()


def _tiny_set() -> CodingSet:
    start = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    entries = (
        Entry("a1", "Deploys need the release manager's approval in the releases channel.", "a"),
        Entry("a2", "The checkout test was flaky because it depended on the wall clock.", "a"),
    )
    return CodingSet(
        project="tiny",
        cwd="/home/dev/tiny",
        sessions=(Session("a", start, entries),),
        questions=(
            Query("q1", "who signs off on shipping?", "paraphrase", "a1"),
            Query("q2", "why did checkout fail at random?", "paraphrase", "a2"),
            Query("q3", "the release manager?", "rare-term", "a1"),
        ),
        unrelated=(Query("u1", "xyzzy plugh", "gibberish", None),),
    )


def test_hits_map_back_by_anchor_or_by_line(tmp_path: Path) -> None:
    data = _tiny_set()
    store = write_coding_store(data, make_project(tmp_path))
    locator = EntryLocator(data, store)
    source = str(store / "2026-03-02.md")
    lines = (store / "2026-03-02.md").read_text(encoding="utf-8").splitlines()
    second_heading = [i for i, line in enumerate(lines, 1) if line.startswith("### ")][1]
    by_anchor = {"content": f"turn:{turn_id('a1')} x", "source": "/elsewhere", "start_line": 1}
    by_line = {"content": "no anchor here", "source": source, "start_line": second_heading}
    unknown = {"content": "", "source": "/elsewhere", "start_line": 1, "chunk_hash": "h9"}
    assert locator.ranked([by_line, by_anchor, by_line, unknown]) == ["a2", "a1"]
    scored = [{**hit, "score": 0.5} for hit in (by_anchor, unknown)]
    assert locator.labelled(scored) == [("a1", 0.5), ("h9", 0.5)]


def test_scores_ranks_empty_answers_and_silence(tmp_path: Path) -> None:
    data = _tiny_set()
    locator = EntryLocator(data, write_coding_store(data, make_project(tmp_path)))

    def hit(entry_id: str, score: float) -> dict[str, object]:
        return {"content": f"turn:{turn_id(entry_id)}", "score": score, "chunk_hash": entry_id}

    result = score_system(
        data,
        locator,
        [[hit("a2", 0.9), hit("a1", 0.4)], [hit("a2", 0.8)], [], []],
    )
    assert result["overall"]["hit@1"] == 1 / 3 and result["overall"]["hit@3"] == 2 / 3
    assert result["overall"]["mrr"] == (0.5 + 1.0) / 3
    assert result["by_category"]["rare-term"]["hit@3"] == 0.0
    assert result["questions_with_no_hit"] == 1
    assert result["unrelated_no_hit_share"] == 1.0
    assert result["top_score"]["questions"]["max"] == 0.9
    first = result["queries"][0]
    assert first["rank"] == 2 and first["hits"] == [("a2", 0.9), ("a1", 0.4)]


def test_systems_and_the_isolated_environment(tmp_path: Path) -> None:
    assert parse_system("bm25").args == ("--mode", "lexical")
    assert parse_system("rrf").env["MEMLANE_INDEX_FUSION"] == "rrf"
    assert parse_system("convex@0.3").env == {
        "MEMLANE_INDEX_FUSION": "convex",
        "MEMLANE_INDEX_ALPHA": "0.3",
    }
    base = {"PATH": "/bin", "MEMLANE_INDEX_FUSION": "wrrf", "MEMSEARCH_DIR": "x"}
    env = isolated_env(tmp_path / "home", "2026-04-09T09:00:00+00:00", base)
    assert env["MEMLANE_HOME"] == str(tmp_path / "home") and env["PATH"] == "/bin"
    assert "MEMLANE_INDEX_FUSION" not in env and "MEMSEARCH_DIR" not in env
    assert env["PYTHONPATH"].split(":")[0].endswith("src")


def test_a_lexical_batch_through_the_command(project: Path, cli: Cli) -> None:
    store = write_coding_store(DATA, project)
    lexical = {"MEMLANE_EMBEDDING_PROVIDER": "none"}
    assert cli("reindex", "--json", env=lexical).returncode == 0
    chosen = DATA.entries[::20]
    queries = [e.text for e in chosen] + ["xyzzy plugh"]
    result = cli(
        "search", "--batch", "-", "--json", "-k", "5", "--mode", "lexical",
        env=lexical, input="\n".join(queries),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    hits = parse_batch(result.stdout, queries)
    locator = EntryLocator(DATA, store)
    assert [locator.ranked(h)[:1] for h in hits[:-1]] == [[e.id] for e in chosen]
    assert all(json.loads(line)["mode"] == "lexical" for line in result.stdout.splitlines())
