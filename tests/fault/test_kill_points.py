"""Kill a real memlane process at every step of each write path; what was
acknowledged survives, what was not is whole or absent (issue 14).

Each area's scenario is traced once to list its steps (``core/faults.py``),
then run again per kill point on a fresh copy of the prepared project: the
quick form (``make test``) kills at the first reach of each step, the soak
(``make soak``) at every reach.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from unittest.mock import patch

import pytest
from harness import FaultHarness, Run, Scenario, Tally, files_holding, temp_leftovers

from fake_llm import FakeOpenAI
from helpers import open_memory
from memlane.transcripts.locate import pi_session_dir_name

pytestmark = pytest.mark.subprocess

STORE = Path(".memsearch") / "memory"
DAY = "2026-07-13"  # the scenarios' clock (harness.SCENARIO_NOW)


def store_of(project: Path) -> Path:
    return project / STORE


def home_of(project: Path) -> Path:
    return project.parent / "home"


def journal(project: Path) -> str:
    """Every daily file's text, checked whole: strict UTF-8, no torn anchor."""
    texts = []
    for path in sorted(store_of(project).glob("*.md")):
        if path.name == "MEMORY.md":
            continue
        data = path.read_bytes()
        text = data.decode("utf-8")  # raises on a torn multi-byte character
        assert text.count("<!--") == text.count("-->"), f"a torn anchor in {path.name}"
        assert not text or text.endswith("\n"), f"{path.name} ends inside an entry"
        texts.append(text)
    return "".join(texts)


def lexical_hits(project: Path, query: str) -> list[str]:
    """What the scenario's index answers (its MEMLANE_HOME, which is process-wide)."""
    with (
        patch.dict(os.environ, {"MEMLANE_HOME": str(home_of(project))}),
        open_memory(project) as mem,
    ):
        result = mem.search(query, mode="lexical", sync=False, min_score=0)
        return [hit.content for hit in result.hits]


def assert_no_temp_files(project: Path) -> None:
    leftovers = temp_leftovers(store_of(project))
    assert not leftovers, f"temporary files left in the store: {leftovers}"


# -- write + index ------------------------------------------------------------------

WRITES = [f"kiwi{n} note about the build cache number {n}" for n in range(4)]


def _check_writes(project: Path, run: Run) -> None:
    text = journal(project)
    for n, note in enumerate(WRITES):
        count = text.count(note)
        if f"w{n}" in run.acks:
            assert count == 1, f"acknowledged write w{n} appears {count} times"
        else:
            assert count in (0, 1), f"unacknowledged write w{n} appears {count} times"
        if count:
            hits = lexical_hits(project, f"kiwi{n}")
            assert any(note in hit for hit in hits), f"w{n} is in markdown but not in the index"


WRITE = Scenario(
    area="write",
    ops=[
        *({"kind": "cli", "id": f"w{n}", "args": ["write", note]} for n, note in enumerate(WRITES)),
        {"kind": "cli", "id": "index", "args": ["index"]},
    ],
    recover=[{"kind": "cli", "id": "recover-index", "args": ["index"]}],
    check=_check_writes,
)


# -- index on its own -----------------------------------------------------------------

SEEDED = [f"plum{n} decision about the retry budget {n}" for n in range(6)]


def _seed_journal(project: Path) -> None:
    store = store_of(project)
    store.mkdir(parents=True)
    body = "".join(
        f"\n### 09:{n:02d}\n<!-- session:s1 turn:t{n} transcript:none -->\n- {note}\n"
        for n, note in enumerate(SEEDED)
    )
    (store / f"{DAY}.md").write_text(f"# {DAY}\n\n## Session 09:00\n{body}", encoding="utf-8")
    (store / "2026-07-12.md").write_text(
        "# 2026-07-12\n\n### 08:00\n- plumextra an older note\n", encoding="utf-8"
    )


def _check_index(project: Path, run: Run) -> None:
    journal(project)
    for n, note in enumerate(SEEDED):
        hits = lexical_hits(project, f"plum{n}")
        assert any(note in hit for hit in hits), f"seeded note {n} is missing from the index"
    assert any("plumextra" in hit for hit in lexical_hits(project, "plumextra"))
    state = json.loads((project / ".memsearch" / ".index-state.json").read_text())
    assert not state.get("last_error"), state


INDEX = Scenario(
    area="index",
    seed=_seed_journal,
    ops=[{"kind": "cli", "id": "index", "args": ["index"]}],
    recover=[{"kind": "cli", "id": "recover-index", "args": ["index"]}],
    check=_check_index,
)


# -- forget ----------------------------------------------------------------------------


def _check_forget(project: Path, run: Run) -> None:
    text = journal(project)
    gone = SEEDED[2]
    if "forget" in run.acks:
        assert gone not in text
    for n, note in enumerate(SEEDED):
        if n != 2:
            assert text.count(note) == 1, f"forget harmed entry {n}"
    # Recovery ran the forget again (or found it done): no copy anywhere.
    assert gone not in text
    holders = files_holding([project, home_of(project)], "plum2 decision")
    assert not holders, f"the forgotten text survives in {holders}"
    assert not lexical_hits(project, "plum2")
    assert_no_temp_files(project)


FORGET = Scenario(
    area="forget",
    seed=_seed_journal,
    setup=[{"kind": "cli", "id": "index", "args": ["index"]}],
    ops=[{"kind": "cli", "id": "forget", "args": ["forget", "--date", DAY, "--time", "09:02"]}],
    # The user's next step after a crash: forget again; "not found" is fine
    # (it was removed) as long as no copy is left anywhere.
    recover=[
        {
            "kind": "cli",
            "id": "again",
            "args": ["forget", "--date", DAY, "--time", "09:02"],
            "ok_codes": [0, 1],
        },
        {"kind": "cli", "id": "reindex", "args": ["index"]},
    ],
    check=_check_forget,
)


# -- topic add -----------------------------------------------------------------------------

FACTS = [(f"Fig fact {n}", f"fig{n} the deploy key lives in vault path {n}") for n in range(3)]


def _check_topics(project: Path, run: Run) -> None:
    store = store_of(project)
    topic = store / "topics" / "deploy.md"
    text = topic.read_text(encoding="utf-8") if topic.exists() else ""
    index = (
        (store / "MEMORY.md").read_text(encoding="utf-8") if (store / "MEMORY.md").exists() else ""
    )
    for n, (title, content) in enumerate(FACTS):
        count = text.count(f"## {title}\n")
        if f"t{n}" in run.acks:
            assert count == 1 and content in text, f"acknowledged topic entry t{n} lost"
            assert title in index, f"MEMORY.md does not list acknowledged entry t{n}"
        else:
            assert count in (0, 1)
        if count:
            assert content in text, f"entry t{n} has its title but not its content"
            # Whole: the next lock brought MEMORY.md up to date with the file.
            assert title in index, f"MEMORY.md misses entry t{n} its topic file holds"
    assert not (store / ".topics-index-pending.json").exists()
    assert_no_temp_files(project)


TOPIC = Scenario(
    area="topic",
    ops=[
        {
            "kind": "cli",
            "id": f"t{n}",
            "args": ["topic", "add", "-t", "deploy", "--title", title, content],
        }
        for n, (title, content) in enumerate(FACTS)
    ],
    # The next topic write takes the lock, which settles what a kill left.
    recover=[
        {
            "kind": "cli",
            "id": "next",
            "args": ["topic", "add", "-t", "other", "--title", "Next", "next fact"],
        }
    ],
    check=_check_topics,
)


# -- dream apply -------------------------------------------------------------------------------

DREAM_BEFORE = {
    "a.md": "---\nname: Alpha\ndescription: alpha facts\ntype: project\nupdated: 2026-07-01\n---\n\n"
    "## Port\nthe api listens on 8080\n\n## Port again\nThe API listens on port 8080.\n",
    "b.md": "---\nname: Beta\ndescription: beta facts\ntype: project\nupdated: 2026-07-02\n---\n\n"
    "## Cache\nredis holds the sessions\n",
}
DREAM_PLAN = {
    "topics": [
        {
            "slug": "a",
            "description": "alpha facts: the api port",
            "entries": [
                {"title": "Port", "content": "the api listens on 8080", "updated": "2026-07-01"}
            ],
        },
        {
            "slug": "c",
            "new": True,
            "name": "Gamma",
            "description": "cache facts",
            "type": "project",
            "entries": [
                {"title": "Cache", "content": "redis holds the sessions", "updated": "2026-07-02"}
            ],
        },
    ],
    "delete": ["b"],
    "summary": ["merged the duplicate port entries", "moved the cache fact to gamma"],
}


def _seed_topics(project: Path) -> None:
    topics = store_of(project) / "topics"
    topics.mkdir(parents=True)
    for name, text in DREAM_BEFORE.items():
        (topics / name).write_text(text, encoding="utf-8")
    (store_of(project) / "MEMORY.md").write_text(
        "# Project memory\n- [Alpha](topics/a.md) — Port; Port again\n"
        "- [Beta](topics/b.md) — Cache\n",
        encoding="utf-8",
    )


def _topic_files(project: Path) -> dict[str, str]:
    topics = store_of(project) / "topics"
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(topics.glob("*.md"))}


def _check_dream(project: Path, run: Run) -> None:
    files = _topic_files(project)
    other = {k: v for k, v in files.items() if k != "other.md"}
    before = set(other) == {"a.md", "b.md"} and other == DREAM_BEFORE
    after = set(other) == {"a.md", "c.md"} and "Port again" not in other["a.md"]
    if "dream" in run.acks:
        assert after, f"an applied dream is not whole: {sorted(other)}"
    else:
        assert before or after, f"a dream killed mid-apply left a mix: {sorted(other)}"
    leftovers = [p.name for p in store_of(project).rglob("*") if "dream-" in p.name and p.is_file()]
    assert not [n for n in leftovers if n != ".dream-meta.json"], leftovers
    assert_no_temp_files(project)


# -- sessions backfill ------------------------------------------------------------------------

MESSAGES = 80  # three transactions of BATCH_SIZE (32)


def _seed_transcripts(project: Path) -> None:
    from _transcript_builders import PiSession

    sessions = home_of(project) / "pi-agent" / "sessions" / pi_session_dir_name(str(project))
    sessions.mkdir(parents=True)
    for s in range(2):
        session = PiSession(session_id=f"sess-{s}")
        for i in range(MESSAGES // 4):
            session.user(f"grape{s}x{i} how do we rotate the signing key {i}")
            session.assistant(f"rotate it with the vault command number {s}{i}")
        (sessions / f"2026-07-1{s}_sess-{s}.jsonl").write_text("\n".join(session.lines) + "\n")


def _check_backfill(project: Path, run: Run) -> None:
    home = home_of(project)
    databases = [p for p in home.rglob("*.sqlite") if "session" in p.name]
    assert databases, "no session index was written"
    with sqlite3.connect(databases[0]) as conn:
        texts = [row[0] for row in conn.execute("SELECT content FROM chunks")]
    assert len(texts) == MESSAGES, f"{len(texts)} messages indexed, {MESSAGES} expected"
    assert len(set(texts)) == MESSAGES, "a message was indexed twice"


BACKFILL = Scenario(
    area="backfill",
    seed=_seed_transcripts,
    ops=[{"kind": "cli", "id": "backfill", "args": ["sessions", "backfill"]}],
    recover=[{"kind": "cli", "id": "again", "args": ["sessions", "backfill"]}],
    check=_check_backfill,
)


# -- capture ----------------------------------------------------------------------------

EXCHANGES = [
    {"id": f"x{n}", "user": f"melon{n} why does the cache miss", "assistant": f"key {n} expires"}
    for n in range(5)
]


def _check_capture(project: Path, run: Run) -> None:
    text = journal(project)
    for exchange in EXCHANGES:
        count = text.count(f"turn:{exchange['id']} ")
        if exchange["id"] in run.acks:
            assert count == 1, f"acknowledged capture {exchange['id']} appears {count} times"
        else:
            assert count in (0, 1), f"unacknowledged capture {exchange['id']} appears {count} times"
    capture_dir = [p for p in project.parent.rglob("*.jsonl") if "capture" in str(p)]
    pending = [p for p in capture_dir if p.stat().st_size and "melon" in p.read_text()]
    assert not pending, f"capture logs still hold exchanges: {pending}"


def _capture_scenario(server: FakeOpenAI) -> Scenario:
    return Scenario(
        area="capture",
        ops=[{"kind": "capture", "id": "shutdown", "session": "s1", "exchanges": EXCHANGES}],
        # The next session start finishes what the killed one left.
        recover=[
            {
                "kind": "capture",
                "id": "next",
                "session": "s2",
                "exchanges": [],
                "wait_recovery": True,
            }
        ],
        check=_check_capture,
        env={
            "MEMLANE_LLM_PROVIDER": "openai",
            "MEMLANE_LLM_BASE_URL": server.base_url,
            "MEMLANE_LLM_MODEL": "fake-model",
            "MEMLANE_EXTRACT_MEMORIES_ENABLED": "off",
        },
    )


def test_a_capture_killed_at_any_step_is_written_once(
    harness: FaultHarness, tally: Tally, soak: bool
) -> None:
    with FakeOpenAI(answer="- the cache key expires after an hour") as server:
        _exercise(harness, _capture_scenario(server), tally, soak)


# -- the runs ---------------------------------------------------------------------------------------


def _exercise(harness: FaultHarness, scenario: Scenario, tally: Tally, soak: bool) -> None:
    points = harness.steps(scenario, every=soak)
    assert points, f"{scenario.area}: the scenario reached no fault step"
    broken = []
    for point in points:
        tally.tried[scenario.area] += 1
        try:
            harness.kill_at(scenario, point)
        except AssertionError as exc:
            broken.append(f"{scenario.area} killed at {point}: {exc}")
            continue
        tally.held[scenario.area] += 1
    tally.failures.extend(broken)
    assert not broken, "\n".join(broken)


@pytest.mark.parametrize("scenario", [WRITE, INDEX, FORGET, TOPIC, BACKFILL], ids=lambda s: s.area)
def test_every_kill_point_keeps_every_acknowledged_write(
    harness: FaultHarness, scenario: Scenario, tally: Tally, soak: bool
) -> None:
    _exercise(harness, scenario, tally, soak)


def test_a_dream_killed_at_any_step_is_whole_or_absent(
    harness: FaultHarness, tally: Tally, soak: bool
) -> None:
    # The plan is saved by the real `dream --dry-run --save-plan` from a fake
    # LLM in the set-up, at the same absolute place as every later run.
    plan = harness.workdir / "dream" / "work" / "plan.json"
    with FakeOpenAI(answer=json.dumps(DREAM_PLAN)) as server:
        scenario = Scenario(
            area="dream",
            seed=_seed_topics,
            setup=[
                {
                    "kind": "cli",
                    "id": "plan",
                    "args": ["dream", "--dry-run", "--save-plan", str(plan)],
                }
            ],
            ops=[
                {
                    "kind": "cli",
                    "id": "dream",
                    "args": ["dream", "--apply-plan", str(plan), "--yes"],
                }
            ],
            recover=[
                {
                    "kind": "cli",
                    "id": "next",
                    "args": ["topic", "add", "-t", "other", "--title", "Next", "x"],
                }
            ],
            check=_check_dream,
            env={
                "MEMLANE_LLM_PROVIDER": "openai",
                "MEMLANE_LLM_BASE_URL": server.base_url,
                "MEMLANE_LLM_MODEL": "fake-model",
            },
        )
        _exercise(harness, scenario, tally, soak)
