"""``memlane write --supersedes`` and ``memlane search --newest-first`` through
the command line, with the bundled model (the shared ``cli`` fixture)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from helpers import Cli, FixedClock


def _hits(cli: Cli, *args: str) -> list[dict[str, object]]:
    done = cli("search", *args, "--json")
    assert done.returncode == 0, done.stderr
    hits: list[dict[str, object]] = json.loads(done.stdout)["hits"]
    return hits


def test_a_written_correction_marks_what_it_replaces(cli: Cli) -> None:
    assert cli("write", "The staging database is PostgreSQL 14 on port 5433.").returncode == 0
    (old,) = [h for h in _hits(cli, "staging database") if "PostgreSQL 14" in str(h["content"])]
    done = cli("write", "Staging runs PostgreSQL 16 now.", "--supersedes", str(old["chunk_hash"]))
    assert done.returncode == 0, done.stderr
    assert f"It supersedes {old['chunk_hash']}" in done.stdout
    hits = _hits(cli, "which postgres version does staging run?")
    assert "PostgreSQL 16" in str(hits[0]["content"]) and "superseded_by" not in hits[0]
    marked = next(h for h in hits if h["chunk_hash"] == old["chunk_hash"])
    assert marked["superseded_by"] == hits[0]["chunk_hash"]
    text = cli("search", "which postgres version does staging run?").stdout
    assert "OUTDATED: superseded by the newer" in text


def test_a_correction_of_an_unknown_memory_is_refused_clearly(cli: Cli) -> None:
    assert cli("write", "The staging database is PostgreSQL 14.").returncode == 0
    done = cli("write", "Staging runs 16.", "--supersedes", "feedfacefeedface")
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "no memory has the chunk hash 'feedfacefeedface'" in done.stderr
    assert "memlane search" in done.stderr
    assert len(_hits(cli, "staging", "--min-score", "0")) == 1


def test_hits_carry_their_date_and_come_newest_first_when_asked(project: Path) -> None:
    for day, text in ((2, "Redis fronts the hot cache."), (25, "The hot cache holds carts.")):
        on_that_day = Cli(FixedClock(datetime(2026, 11, day, 10, 0, tzinfo=UTC)), cwd=project)
        assert on_that_day("write", text).returncode == 0
    cli = Cli(FixedClock(datetime(2026, 11, 30, 10, 0, tzinfo=UTC)), cwd=project)
    by_date = _hits(cli, "hot cache", "--newest-first")
    assert [str(h["date"])[:10] for h in by_date] == ["2026-11-25", "2026-11-02"]
    assert [h["age_days"] for h in by_date] == [5, 28]
    assert all(h["band"] in ("strong", "possible", "weak") for h in by_date)
