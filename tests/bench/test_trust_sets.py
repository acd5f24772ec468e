"""The trust benchmark's sets and parts (benchmarks/quality/trust.py, issue 27).

No model here: the one run of memlane's command is lexical, in this process.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "quality"
sys.path.insert(0, str(BENCH))

from coding_store import (  # noqa: E402
    CodingSet,
    entry_time,
    load_set,
    turn_id,
    write_coding_store,
)
from trust import CHANGED_DATA, below_best_leg, drive, morning_after  # noqa: E402
from trust_score import (  # noqa: E402
    changed_entry_ids,
    changed_metrics,
    field_seen,
    history_metrics,
    meets,
    query_record,
    small_store_pool,
    small_stores,
    unrelated_metrics,
)

from helpers import make_project  # noqa: E402
from memlane.store.redaction import redact_for_storage  # noqa: E402

CHANGED = load_set(CHANGED_DATA)
CODING = load_set()


def _times(data: CodingSet) -> dict[str, datetime]:
    return {e.id: entry_time(s, i) for s in data.sessions for i, e in enumerate(s.entries)}


def test_the_changed_set_meets_its_minimums() -> None:
    assert len(CHANGED.sessions) >= 10
    assert all(len(s.entries) == 6 for s in CHANGED.sessions)
    assert 60 <= len(CHANGED.entries) <= 80
    days = sorted(s.start for s in CHANGED.sessions)
    assert timedelta(weeks=5) <= days[-1] - days[0] <= timedelta(weeks=7)
    by_category = {
        c: [q for q in CHANGED.questions if q.category == c]
        for c in ("changed", "history", "paraphrase")
    }
    assert 15 <= len(by_category["changed"]) <= 20
    assert len(by_category["history"]) >= 4
    assert len(by_category["paraphrase"]) >= 20
    assert {q.category for q in CHANGED.questions} == set(by_category)
    near = [u for u in CHANGED.unrelated if u.category == "near-miss"]
    assert len(near) >= 12
    assert len([u for u in CODING.unrelated if u.category == "near-miss"]) >= 15


def test_the_changed_set_is_well_formed() -> None:
    entries = {e.id: e for e in CHANGED.entries}
    assert len(entries) == len(CHANGED.entries)
    queries = [*CHANGED.questions, *CHANGED.unrelated]
    assert len({q.id for q in queries}) == len(queries)
    texts = [" ".join(q.text.lower().split()) for q in queries]
    assert len(set(texts)) == len(texts)
    assert all(q.text.strip() and "\n" not in q.text for q in queries)
    assert all(q.gold is None for q in CHANGED.unrelated)
    for entry in CHANGED.entries:
        assert 120 <= len(entry.text) <= 300, entry.id
        assert "\n" not in entry.text, entry.id
        assert redact_for_storage(entry.text) == entry.text, entry.id
    # No turn id of one set is a turn id of the other: stores can share a home.
    assert not {turn_id(e) for e in entries} & {turn_id(e.id) for e in CODING.entries}


def test_changes_point_from_an_older_entry_to_a_newer_one() -> None:
    entries = {e.id for e in CHANGED.entries}
    when = _times(CHANGED)
    superseded = []
    for q in CHANGED.questions:
        if q.category == "changed":
            assert q.gold in entries and q.superseded in entries, q.id
            assert q.newer is None
            assert when[q.gold] > when[q.superseded], q.id  # gold dated after
            superseded.append(q.superseded)
        elif q.category == "history":
            assert q.gold in entries and q.newer in entries, q.id
            assert when[q.newer] > when[q.gold], q.id
            # the same change as one of the changed questions
            assert any(c.gold == q.newer and c.superseded == q.gold for c in CHANGED.questions)
        else:
            assert q.superseded is None and q.newer is None
    assert len(set(superseded)) == len(superseded)  # one change per older entry
    changed = changed_entry_ids(CHANGED)
    paraphrased = {q.gold for q in CHANGED.questions if q.category == "paraphrase"}
    assert not paraphrased & changed  # paraphrase questions ask about unchanged entries
    assert changed_entry_ids(CODING) == set()


def test_small_stores_are_deterministic_and_keep_their_dates() -> None:
    first = small_stores("changed", CHANGED, (3, 6), per_size=4)
    again = small_stores("changed", CHANGED, (3, 6), per_size=4)
    assert [s.data for s in first] == [s.data for s in again]
    assert [s.name for s in first] == [f"changed-{n}-{i:02d}" for n in (3, 6) for i in range(4)]
    pool = set(small_store_pool(CHANGED))
    starts = {s.id: s.start for s in CHANGED.sessions}
    for store in first:
        ids = [e.id for e in store.data.entries]
        assert len(ids) == store.size == len(set(ids)) and set(ids) <= pool
        assert all(s.start == starts[s.id] for s in store.data.sessions)
        assert {q.gold for q in store.data.questions} <= set(ids)
        assert {q.category for q in store.data.questions} <= {"paraphrase"}
        assert store.data.unrelated == CHANGED.unrelated
    assert len({tuple(e.id for e in s.data.entries) for s in first}) > 1  # not all alike
    other_seed = small_stores("changed", CHANGED, (3,), per_size=4, seed=1)
    assert [s.data for s in other_seed] != [s.data for s in first[:4]]


def _rec(hits: list[tuple[str, float, dict[str, Any]]], **query: Any) -> dict[str, Any]:
    return {
        "hits": [{"entry": e, "chunk": f"h-{e}", "score": s, **extra} for e, s, extra in hits],
        **query,
    }


def test_changed_metrics_rank_mark_and_order() -> None:
    marked = {"superseded_by": "h-new"}
    records = [
        _rec([("new", 0.9, {}), ("old", 0.5, marked)], gold="new", superseded="old"),
        _rec([("old", 0.9, {}), ("x", 0.6, {}), ("new", 0.4, {})], gold="new", superseded="old"),
        _rec([("old", 0.7, {})], gold="new", superseded="old"),
        _rec([], gold="new", superseded="old"),
    ]
    m = changed_metrics(records, marks_seen=True)
    assert m["newer_first"] == 0.25 and m["newer_top3"] == 0.5
    assert m["older_above_newer"] == 0.5 and m["older_returned"] == 0.75
    assert m["older_marked"] == 1 / 3 and m["older_marked_n"] == 3
    assert m["older_marked_to_newer"] == 0.5
    assert m["empty"] == 1
    assert changed_metrics(records, marks_seen=False)["older_marked"] is None
    assert field_seen(records, "superseded_by") and not field_seen(records, "band")
    history = history_metrics([_rec([("new", 0.9, {}), ("old", 0.5, {})], gold="old", newer="new")])
    assert history["hit@1"] == 0.0 and history["hit@3"] == 1.0
    assert history["newer_above_older"] == 1.0


def test_unrelated_metrics_push_and_band() -> None:
    records = [
        _rec([("a", 0.8, {"band": "strong"})]),
        _rec([("a", 0.3, {"band": "weak"})]),
        _rec([]),
        _rec([("b", 0.5, {"band": "possible"})]),
    ]
    m = unrelated_metrics(records, floor=0.5, bands_seen=True)
    assert m["answered"] == 0.75 and m["pushed"] == 0.5 and m["strong"] == 0.25
    assert m["top_max"] == 0.8
    assert unrelated_metrics(records, floor=0.5, bands_seen=False)["strong"] is None
    assert meets("pushed", 0.05) and not meets("pushed", 0.06)
    assert meets("newer_first", 0.9) and meets("hit@1", 0.1) is None


def test_the_default_is_flagged_below_its_better_leg() -> None:
    values = {"bm25": 0.4, "dense": 0.7, "default": 0.65, "e5-dense": 0.5, "e5-default": 0.5}
    assert below_best_leg("higher", values, "default") == "default 0.650 vs dense 0.700"
    assert below_best_leg("higher", values, "e5-default") is None
    assert below_best_leg("lower", values, "default") == "default 0.650 vs bm25 0.400"
    assert below_best_leg("higher", values, "dense") is None  # not a default
    assert below_best_leg("", values, "default") is None


def test_the_driver_runs_the_command_in_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEMLANE_EMBEDDING_PROVIDER", "none")
    monkeypatch.setenv("MEMLANE_NOW", "2026-06-12T09:00:00+00:00")  # the driver sets it
    store = small_stores("changed", CHANGED, (3,), per_size=1)[0]
    project = make_project(tmp_path, store.name)
    write_coding_store(store.data, project)
    queries = tmp_path / "q.txt"
    texts = [e.text for e in store.data.entries]
    queries.write_text("\n".join(texts) + "\n", encoding="utf-8")
    now = morning_after(CHANGED)
    search = ["-C", str(project), "search", "--batch", str(queries), "--json", "-k", "3"]
    jobs = [
        {"name": "reindex", "argv": ["-C", str(project), "reindex", "--json"], "now": now},
        {"name": "bm25", "argv": [*search, "--mode", "lexical"], "now": now},
    ]
    jobs_file, results = tmp_path / "jobs.json", tmp_path / "results.jsonl"
    jobs_file.write_text(json.dumps(jobs), encoding="utf-8")
    assert drive(jobs_file, results) == 0
    assert capfd.readouterr().out == ""  # every answer went to the results file
    lines = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines()]
    assert [line["name"] for line in lines] == ["reindex", "bm25"]
    assert json.loads(lines[0]["stdout"])["total_chunks"] == 3
    answers = [json.loads(line) for line in lines[1]["stdout"].splitlines()]
    assert [a["query"] for a in answers] == texts
    firsts = [a["hits"][0]["content"] for a in answers]
    assert all(turn_id(e.id) in hit for e, hit in zip(store.data.entries, firsts, strict=True))


def test_a_record_keeps_the_hit_fields_memlane_sends() -> None:
    query = CHANGED.questions[0]
    hits = [
        {"chunk_hash": "n1", "score": 0.9, "content": "new", "band": "strong", "age_days": 3},
        {"chunk_hash": "o1", "score": 0.4, "content": "old", "superseded_by": "n1",
         "date": "2026-05-04T09:05", "band": "weak"},
        {"chunk_hash": "x1", "score": 0.1, "content": "?"},
    ]  # fmt: skip
    entry = {"new": [query.gold], "old": [query.superseded], "?": []}
    record = query_record("changed", "changed", query, hits, lambda h: entry[h["content"]])
    assert record["gold"] == query.gold and record["superseded"] == query.superseded
    assert record["text"] == query.text and record["kind"] == "question"
    assert record["hits"] == [
        {"entry": query.gold, "chunk": "n1", "score": 0.9, "band": "strong", "age_days": 3},
        {"entry": query.superseded, "chunk": "o1", "score": 0.4, "band": "weak",
         "superseded_by": "n1", "date": "2026-05-04T09:05"},
        {"entry": None, "chunk": "x1", "score": 0.1},
    ]  # fmt: skip
    m = changed_metrics([record], marks_seen=field_seen([record], "superseded_by"))
    assert m["older_marked"] == 1.0 and m["older_marked_to_newer"] == 1.0
