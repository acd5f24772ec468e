"""memlane dream (engine/topics/dream/, cli/dream_cmds.py): a store with planted
duplicates and contradictions, a plan from a fake OpenAI server on 127.0.0.1
(memlane's own provider over real HTTP), the diff, the atomic apply, the nudge."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from fake_llm import FakeOpenAI
from helpers import TOPIC_DAY, Cli, CliResult, FixedClock, open_memory
from memlane.core.errors import ConfigError, MemlaneError
from memlane.core.settings import TopicSettings
from memlane.engine.project import Memory
from memlane.engine.topics import dream as D
from memlane.llm.base import LLM
from memlane.store import topics

TODAY = date(2026, 7, 13)
# When the dreams of these tests run (the memory's clock): TODAY, mid-morning UTC.
DREAM_AT = datetime(2026, 7, 13, 10, 0, tzinfo=UTC)

DEBUGGING = """\
---
name: Debugging Tips
description: staging uses port 2222, key at ~/.ssh/staging
type: feedback
updated: 2026-05-01
owner: platform team
---

## SSH Gotcha
staging uses port 2222, key at ~/.ssh/staging

## MySQL Timeout
connection timeout after 30s on staging

## SSH gotcha
Staging uses port 2222; key at ~/.ssh/staging.
"""

INFRA = """\
---
name: Infra
description: staging SSH port
type: project
updated: 2026-07-10
---

## Staging SSH port
staging SSH moved to port 2200 on 2026-07-10
"""

PREFERENCES = """\
---
name: Preferences
description: the user packages with uv
type: user
updated: 2026-04-02
---

## Use uv
the user wants uv, never pip, for installs
"""

INDEX = """\
# Project memory
- [Debugging Tips](topics/debugging.md) — SSH Gotcha; MySQL Timeout; SSH gotcha
- [Infra](topics/infra.md) — Staging SSH port
- [Preferences](topics/preferences.md) — Use uv
"""

DAILY = {
    "2026-07-11.md": (
        "# 2026-07-11\n\n## Session 09:00\n\n### 09:05\n"
        "<!-- session:s1 turn:aaaa1111 transcript:none -->\n"
        "- the user asked to fix the flaky ssh test\n"
    ),
    "2026-07-12.md": (
        "# 2026-07-12\n\n## Session 14:00\n\n### 14:10\n"
        "<!-- session:s2 turn:bbbb2222 transcript:none -->\n"
        "- the user and the agent decided to pin ruff to 0.6.9 in pyproject.toml\n"
    ),
}

PLAN: dict[str, Any] = {
    "topics": [
        {
            "slug": "debugging",
            "description": "staging SSH on port 2200 with ~/.ssh/staging; MySQL timeout 30s",
            "entries": [
                {
                    "title": "SSH Gotcha",
                    "content": "staging SSH uses port 2200 (previously 2222), key at ~/.ssh/staging",
                    "updated": "2026-07-10",
                },
                {
                    "title": "MySQL Timeout",
                    "content": "connection timeout after 30s on staging",
                    "updated": "2026-05-01",
                },
            ],
        },
        {
            "slug": "tooling",
            "new": True,
            "name": "Tooling",
            "description": "pinned tool versions",
            "type": "project",
            "entries": [
                {
                    "title": "Ruff pinned to 0.6.9",
                    "content": "ruff is pinned to 0.6.9 in pyproject.toml",
                    "updated": "2026-07-12",
                }
            ],
        },
    ],
    "delete": ["infra"],
    "summary": [
        "merged the two SSH gotcha entries of debugging",
        "port 2200 (infra, 2026-07-10) replaces port 2222 (debugging, 2026-05-01)",
        "new topic tooling from the journal of 2026-07-12",
    ],
}

GOLDEN_DEBUGGING = """\
---
name: Debugging Tips
description: staging SSH on port 2200 with ~/.ssh/staging; MySQL timeout 30s
type: feedback
updated: 2026-07-13
owner: platform team
---

## SSH Gotcha
staging SSH uses port 2200 (previously 2222), key at ~/.ssh/staging

## MySQL Timeout
connection timeout after 30s on staging
"""

GOLDEN_TOOLING = """\
---
name: Tooling
description: pinned tool versions
type: project
updated: 2026-07-13
---

## Ruff pinned to 0.6.9
ruff is pinned to 0.6.9 in pyproject.toml
"""

GOLDEN_INDEX = """\
# Project memory
- [Debugging Tips](topics/debugging.md) — SSH Gotcha; MySQL Timeout
- [Preferences](topics/preferences.md) — Use uv
- [Tooling](topics/tooling.md) — Ruff pinned to 0.6.9
"""


@pytest.fixture
def store(project: Path) -> Path:
    """The root ``project``'s store, seeded: three topics, their index, two days of journal."""
    store = project / ".memsearch" / "memory"
    (store / "topics").mkdir(parents=True)
    (store / "topics" / "debugging.md").write_text(DEBUGGING, encoding="utf-8")
    (store / "topics" / "infra.md").write_text(INFRA, encoding="utf-8")
    (store / "topics" / "preferences.md").write_text(PREFERENCES, encoding="utf-8")
    (store / "MEMORY.md").write_text(INDEX, encoding="utf-8")
    for name, text in DAILY.items():
        (store / name).write_text(text, encoding="utf-8")
    return store


def dreaming(project: Path, **env: str) -> Memory:
    """The project's memory (lexical) on the dream clock."""
    return open_memory(project, clock=FixedClock(DREAM_AT), **env)


@contextmanager
def planner(answer: str) -> Iterator[LLM]:
    """memlane's OpenAI provider on a fake server that answers *answer*."""
    with FakeOpenAI(answer=answer) as server:
        yield server.llm()


@pytest.fixture(scope="module")
def plan_llm() -> Iterator[LLM]:
    """The LLM that answers ``PLAN``, shared by the module's tests (one server,
    one HTTP client: most tests only need a plan to act on)."""
    with planner(json.dumps(PLAN)) as llm:
        yield llm


@pytest.fixture(scope="module")
def scripted() -> Iterator[tuple[FakeOpenAI, LLM]]:
    """A server whose answer each test sets first (``server.set(answer=...)``), and its LLM."""
    with FakeOpenAI() as server:
        yield server, server.llm()


def snapshot(store: Path) -> dict[str, bytes]:
    """Every file of the store except the derived/lock ones, as bytes."""
    return {
        str(p.relative_to(store)): p.read_bytes()
        for p in sorted(store.rglob("*"))
        if p.is_file() and p.name not in (".topics.lock",)
    }


def dailies(store: Path) -> dict[str, bytes]:
    return {name: (store / name).read_bytes() for name in DAILY}


# --- the golden run ---------------------------------------------------------------------------


def test_golden_merge_through_a_real_fake_openai_server(project: Path, store: Path) -> None:
    before_daily = dailies(store)
    with FakeOpenAI(answer="```json\n" + json.dumps(PLAN) + "\n```") as server:
        env = {
            "MEMLANE_LLM_PROVIDER": "openai",
            "MEMLANE_LLM_BASE_URL": server.base_url,
            "MEMLANE_LLM_MODEL": "fake-dreamer",
        }
        with dreaming(project, **env) as mem:
            llm = D.dream_llm(mem.config)
            plan = D.make_plan(mem, llm)
            assert len(server.requests) == 1
            body = server.requests[0].body
            assert body["model"] == "fake-dreamer"
            system = body["messages"][0]["content"]
            prompt = body["messages"][-1]["content"]
            assert "NEWER fact" in system
            # Orient: every topic with its date, the journal since the last dream.
            assert 'slug="debugging"' in prompt and 'updated="2026-05-01"' in prompt
            assert 'slug="infra"' in prompt and 'updated="2026-07-10"' in prompt
            assert "[2026-07-12 14:10]" in prompt and "pin ruff to 0.6.9" in prompt
            assert "<!--" not in prompt  # anchors are not journal text
            # Gather signal: the planted duplicate is pointed out.
            assert "duplicate: [debugging] 'SSH Gotcha' and [debugging] 'SSH gotcha'" in prompt

            diff = plan.diff()
            assert "-staging uses port 2222, key at ~/.ssh/staging" in diff
            assert "+staging SSH uses port 2200 (previously 2222), key at ~/.ssh/staging" in diff
            assert "-## SSH gotcha" in diff  # the duplicate is merged away
            assert "--- a/topics/infra.md\n+++ /dev/null" in diff
            assert "--- /dev/null\n+++ b/topics/tooling.md" in diff
            assert "+- [Tooling](topics/tooling.md) — Ruff pinned to 0.6.9" in diff
            assert "b/topics/preferences.md" not in diff  # untouched topics are not rewritten
            rendered = plan.render()
            assert rendered.startswith("Dream plan (openai/fake-dreamer): 4 file(s)")
            assert "- port 2200 (infra, 2026-07-10) replaces port 2222" in rendered

            D.apply_plan(plan, now=datetime(2026, 7, 13, 10, 0, tzinfo=UTC))
            notices = D.sync_index(mem)
            assert not [n for n in notices if "not updated" in n]
            hits = mem.search("port 2200", 5, kind="topic", sync=False).hits
            assert hits and hits[0].source.endswith("topics/debugging.md")
            assert not [f for f in mem.index.files() if f.endswith("infra.md")]

    topics = store / "topics"
    assert (topics / "debugging.md").read_text(encoding="utf-8") == GOLDEN_DEBUGGING
    assert (topics / "tooling.md").read_text(encoding="utf-8") == GOLDEN_TOOLING
    assert (topics / "preferences.md").read_text(encoding="utf-8") == PREFERENCES
    assert not (topics / "infra.md").exists()
    assert (store / "MEMORY.md").read_text(encoding="utf-8") == GOLDEN_INDEX
    assert dailies(store) == before_daily
    assert sorted(p.name for p in topics.iterdir()) == [
        "debugging.md",
        "preferences.md",
        "tooling.md",
    ]  # no temporary files or backups left behind
    meta = json.loads((store / D.DREAM_META).read_text(encoding="utf-8"))
    assert meta == {"last_dream_at": "2026-07-13T10:00:00Z", "sessions_since": 0, "nudged_at": None}


def test_dream_model_is_used_and_no_llm_is_a_clear_error(project: Path, store: Path) -> None:
    with (
        dreaming(project, MEMLANE_LLM_PROVIDER="none") as mem,
        pytest.raises(ConfigError) as caught,
    ):
        D.dream_llm(mem.config)
    assert "needs an LLM" in caught.value.message
    assert caught.value.hint and "llm.provider" in caught.value.hint
    assert "dream.model" in caught.value.hint

    with FakeOpenAI(answer='{"topics": [], "delete": [], "summary": []}') as server:
        env = {
            "MEMLANE_LLM_PROVIDER": "openai",
            "MEMLANE_LLM_BASE_URL": server.base_url,
            "MEMLANE_LLM_MODEL": "everyday",
            "MEMLANE_DREAM_MODEL": "deep-thinker",
        }
        with dreaming(project, **env) as mem:
            plan = D.make_plan(mem, D.dream_llm(mem.config))
        assert server.requests[0].body["model"] == "deep-thinker"
        assert plan.empty
        assert plan.render().startswith("Nothing to consolidate")


# --- nothing changes unless everything does ---------------------------------------------------


def test_failure_mid_apply_changes_nothing(project: Path, store: Path, plan_llm: LLM) -> None:
    with dreaming(project) as mem:
        plan = D.make_plan(mem, plan_llm)
    before = snapshot(store)  # make_plan only reads (and may create the lock file)
    assert [c.action for c in plan.changes] == ["update", "create", "delete", "update"]

    calls: list[Path] = []

    def flaky_replace(src: Path, dst: Path) -> None:
        calls.append(dst)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        os.replace(src, dst)

    with pytest.raises(D.DreamError) as caught:
        D.apply_plan(plan, now=DREAM_AT, hooks=D.ApplyHooks(replace=flaky_replace))
    assert "nothing was changed" in caught.value.message
    assert "No space left on device" in caught.value.message
    assert len(calls) == 2  # the first file had been renamed already
    assert snapshot(store) == before  # ... and was restored; no temp or backup is left

    def failing_unlink(path: Path) -> None:
        raise PermissionError(13, "Permission denied")

    with pytest.raises(D.DreamError):
        # Fails after two renames.
        D.apply_plan(plan, now=DREAM_AT, hooks=D.ApplyHooks(unlink=failing_unlink))
    assert snapshot(store) == before
    assert not (store / D.DREAM_META).exists()  # no dream was recorded

    D.apply_plan(plan, now=DREAM_AT)  # the same plan still applies cleanly afterwards
    assert (store / "topics" / "debugging.md").read_text(encoding="utf-8") == GOLDEN_DEBUGGING


def test_a_file_changed_after_planning_aborts_the_apply(
    project: Path, store: Path, plan_llm: LLM
) -> None:
    with dreaming(project) as mem:
        plan = D.make_plan(mem, plan_llm)
    edited = INFRA + "\n## New\nadded meanwhile\n"
    (store / "topics" / "infra.md").write_text(edited, encoding="utf-8")
    before = snapshot(store)
    with pytest.raises(D.DreamError, match="changed while the dream was planning"):
        D.apply_plan(plan, now=DREAM_AT)
    assert snapshot(store) == before
    assert (store / "topics" / "infra.md").read_text(encoding="utf-8") == edited


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ("I merged everything, all good!", "holds no JSON object"),
        ('{"topics": [ {"slug": "debugging", ', "not valid JSON"),
        ('["debugging"]', "holds no JSON object"),
        (
            '{"topics": [{"slug": "debuging", "entries": [{"title": "t", "content": "c"}]}]}',
            "unknown topic 'debuging'",
        ),
        ('{"delete": ["nope"]}', "deletes the unknown topic"),
        (
            '{"topics": [{"slug": "debugging", "entries": [{"title": "SSH", "content": "  "}]}]}',
            "has empty content",
        ),
        ('{"topics": [{"slug": "debugging", "entries": []}]}', "has no entries"),
        (
            '{"topics": [{"slug": "../../etc/passwd", "new": true, '
            '"entries": [{"title": "t", "content": "c"}]}]}',
            "is refused",
        ),
        (
            '{"topics": [{"slug": "Evil.md", "new": true, '
            '"entries": [{"title": "t", "content": "c"}]}]}',
            "is not a topic slug",
        ),
        (
            '{"topics": [{"slug": "con", "new": true, '
            '"entries": [{"title": "t", "content": "c"}]}]}',
            "reserved",
        ),
        ('{"delete": ["/tmp/x"]}', "is refused"),
        (
            '{"topics": [{"slug": "debugging", "entries": [{"title": "a", "content": "x"}, '
            '{"title": "a", "content": "y"}]}]}',
            "twice",
        ),
        (
            '{"topics": [{"slug": "debugging", "type": "gossip", '
            '"entries": [{"title": "a", "content": "x"}]}]}',
            "unknown type",
        ),
        (
            '{"topics": [{"slug": "debugging", "entries": [{"title": "a", "content": "x", '
            '"updated": "2099-01-01"}]}]}',
            "in the future",
        ),
        ('{"topics": [], "delete": [], "plan": "x"}', "unknown key"),
        (
            '{"topics": [{"slug": "debugging", "entries": [{"title": "a", "content": "x"}]}], '
            '"delete": ["debugging"]}',
            "both rewritten and deleted",
        ),
    ],
)
def test_a_malformed_plan_is_an_error_and_changes_nothing(
    project: Path, store: Path, scripted: tuple[FakeOpenAI, LLM], answer: str, message: str
) -> None:
    server, llm = scripted
    server.set(answer=answer)
    with dreaming(project) as mem:
        mem.sync()
        before = snapshot(store)
        with pytest.raises(D.DreamPlanError) as caught:
            D.make_plan(mem, llm)
    assert message in caught.value.message
    assert "nothing was changed" in caught.value.message
    assert caught.value.hint and "dream.model" in caught.value.hint
    assert snapshot(store) == before


def test_topics_past_the_budget_are_shown_by_title_and_cannot_be_rewritten(store: Path) -> None:
    orientation = D.orient(store)
    _, prompt, shown = D.build_prompt(orientation, [], today=TODAY, topics_budget=10)
    assert len(shown) == 1  # at least one topic is always shown whole
    hidden = sorted(set(orientation.topics) - shown)
    assert f'<topic slug="{hidden[0]}"' in prompt and 'shown="titles only"' in prompt
    answer = json.dumps(
        {"topics": [{"slug": hidden[0], "entries": [{"title": "a", "content": "b"}]}]}
    )
    with pytest.raises(D.DreamPlanError, match="was not shown"):
        D.parse_plan(answer, orientation.topics, shown=shown, today=TODAY)


# --- orient and gather ------------------------------------------------------------------------


def test_journal_since_the_last_dream_within_a_budget(store: Path) -> None:
    entries, truncated = D.journal_entries(store, None, 10_000)
    assert [(e.day, e.time) for e in entries] == [("2026-07-11", "09:05"), ("2026-07-12", "14:10")]
    assert not truncated
    assert entries[0].text == "- the user asked to fix the flaky ssh test"
    since = datetime(2026, 7, 12, 0, 0).astimezone()
    entries, _ = D.journal_entries(store, since, 10_000)
    assert [e.day for e in entries] == ["2026-07-12"]
    entries, truncated = D.journal_entries(store, None, 100)  # room for the newest only
    assert [e.day for e in entries] == ["2026-07-12"] and truncated


def test_gather_finds_duplicates_by_text_and_neighbours_by_index(
    project: Path, store: Path
) -> None:
    with dreaming(project) as mem:
        mem.sync()
        signals = D.gather(D.orient(store), mem)
    pairs = {(s.kind, frozenset((s.a, s.b))) for s in signals}
    assert (
        "duplicate",
        frozenset({("debugging", "SSH Gotcha"), ("debugging", "SSH gotcha")}),
    ) in pairs
    related = [s for s in signals if s.kind == "related"]
    assert any({s.a[0], s.b[0]} == {"debugging", "infra"} for s in related)
    assert not [s for s in related if "preferences" in (s.a[0], s.b[0])]  # nothing in common


# --- the nudge --------------------------------------------------------------------------------


def test_nudge_after_n_sessions_is_said_once(project: Path, store: Path) -> None:
    settings = TopicSettings(dream_nudge_after_sessions=3, dream_nudge_after_hours=24)
    now = datetime(2026, 7, 13, 12, 0, tzinfo=UTC)
    D.record_dream(store, now)
    for _ in range(2):
        D.note_session_start(store)
        assert D.nudge(store, settings, now) is None
    assert D.note_session_start(store).sessions_since == 3
    text = D.nudge(store, settings, now)
    assert text is not None and text.startswith("3 sessions since the last dream")
    assert "memlane dream" in text
    assert D.nudge(store, settings, now) is None  # said once
    D.note_session_start(store)
    assert D.nudge(store, settings, now + timedelta(hours=30)) is None  # still once
    D.record_dream(store, now + timedelta(hours=31))
    meta = D.read_meta(store)
    assert (meta.sessions_since, meta.nudged_at) == (0, None)
    assert D.nudge(store, settings, now + timedelta(hours=31)) is None
    assert D.nudge(store, TopicSettings(enabled=False), now + timedelta(days=9)) is None
    missing = project / "elsewhere" / "memory"
    assert D.note_session_start(missing).sessions_since == 0
    assert not missing.exists()  # counting a session never creates a store


def test_nudge_after_n_hours_is_said_once(store: Path) -> None:
    settings = TopicSettings(dream_nudge_after_sessions=5, dream_nudge_after_hours=24)
    start = datetime(2026, 7, 13, 8, 0, tzinfo=UTC)
    assert D.nudge(store, settings, start) is None  # never dreamt, no sessions yet
    D.record_dream(store, start)
    assert D.nudge(store, settings, start + timedelta(hours=23)) is None
    text = D.nudge(store, settings, start + timedelta(hours=25))
    assert text is not None and text.startswith("25 hours since the last dream")
    assert D.nudge(store, settings, start + timedelta(hours=50)) is None
    meta = json.loads((store / D.DREAM_META).read_text(encoding="utf-8"))
    assert meta["last_dream_at"] == "2026-07-13T08:00:00Z"
    assert meta["nudged_at"] == "2026-07-14T09:00:00Z"
    # pi-memory's own file (milliseconds) reads as a last dream time.
    (store / D.DREAM_META).write_text(json.dumps({"lastDreamAt": 1_784_000_000_000}))
    assert D.read_meta(store).last_dream_at == "2026-07-14T03:33:20Z"


# --- the command ------------------------------------------------------------------------------


def run_cli(project: Path, server: FakeOpenAI, *args: str, stdin: str = "") -> CliResult:
    """``memlane -C PROJECT dream ARGS`` in this process, on the dream clock."""
    env = {
        "MEMLANE_LLM_PROVIDER": "openai",
        "MEMLANE_LLM_BASE_URL": server.base_url,
        "MEMLANE_LLM_MODEL": "fake-dreamer",
        "MEMLANE_EMBEDDING_PROVIDER": "none",
    }
    return Cli(FixedClock(DREAM_AT))("-C", str(project), "dream", *args, env=env, input=stdin)


def test_cli_dry_run_decline_and_yes(project: Path, store: Path) -> None:
    before = snapshot(store)
    with FakeOpenAI(answer=json.dumps(PLAN), stream=False) as server:
        dry = run_cli(project, server, "--dry-run")
        assert dry.returncode == 0, dry.stderr
        assert "+staging SSH uses port 2200 (previously 2222)" in dry.stdout
        assert "(dry run: nothing was changed)" in dry.stdout
        assert snapshot(store) == before

        declined = run_cli(project, server, stdin="n\n")
        assert declined.returncode == 1, declined.stderr
        assert "Apply these changes?" in declined.stdout
        assert "Nothing was changed." in declined.stdout
        assert snapshot(store) == before

        closed = run_cli(project, server)  # no answer at all
        assert closed.returncode == 1 and snapshot(store) == before

        server.set(answer="this is not a plan")
        bad = run_cli(project, server, "--yes")
        assert bad.returncode == 1
        assert "memlane: error: the dream LLM's plan is unusable" in bad.stderr
        assert "Traceback" not in bad.stderr
        assert snapshot(store) == before

        server.set(answer=json.dumps(PLAN))
        applied = run_cli(project, server, "--yes", "--json")
        assert applied.returncode == 0, applied.stderr
        data = json.loads(applied.stdout)
        assert data["applied"] is True
        assert [c["file"] for c in data["changes"]] == [
            "topics/debugging.md",
            "topics/tooling.md",
            "topics/infra.md",
            "MEMORY.md",
        ]
    today = TODAY.isoformat()  # the CLI plans for its clock's day
    topics = store / "topics"
    assert (topics / "debugging.md").read_text(encoding="utf-8") == GOLDEN_DEBUGGING.replace(
        "2026-07-13", today
    )
    assert (store / "MEMORY.md").read_text(encoding="utf-8") == GOLDEN_INDEX
    assert not (topics / "infra.md").exists()
    assert dailies(store) == {name: text.encode() for name, text in DAILY.items()}
    assert json.loads((store / D.DREAM_META).read_text())["sessions_since"] == 0


def test_cli_json_needs_yes_or_dry_run(project: Path, store: Path) -> None:
    with FakeOpenAI(answer=json.dumps(PLAN)) as server:
        result = run_cli(project, server, "--json")
    assert result.returncode == 2
    assert "--json needs --yes or --dry-run" in result.stderr
    assert not server.requests


def test_plan_json_is_stable_for_hosts(project: Path, store: Path, plan_llm: LLM) -> None:
    with dreaming(project) as mem:
        plan = D.make_plan(mem, plan_llm)
    data = plan.to_json()
    assert data["model"] == "openai/fake-model"
    assert data["journal_entries"] == 2
    assert data["summary"] == PLAN["summary"]
    assert {c["action"] for c in data["changes"]} == {"update", "create", "delete"}
    assert all(c["diff"].startswith("--- ") for c in data["changes"])
    with pytest.raises(MemlaneError):
        D.parse_plan('{"topics": 3}', [], today=TODAY)


def test_run_for_hosts_asks_before_applying(project: Path, store: Path) -> None:
    before = snapshot(store)
    shown: list[str] = []

    def decline(plan: D.DreamPlan) -> bool:
        shown.append(plan.render())
        return False

    with FakeOpenAI(answer=json.dumps(PLAN)) as server, dreaming(project) as mem:
        outcome = D.run(mem, decline, llm=server.llm())
        assert not outcome.applied and "+++ b/topics/tooling.md" in shown[0]
        assert snapshot(store) == before
        outcome = D.run(mem, lambda plan: True, llm=server.llm())
        assert len(server.requests) == 2  # each run planned with the LLM
    assert outcome.applied and outcome.to_json()["applied"] is True
    assert (store / "topics" / "debugging.md").read_text(encoding="utf-8") == GOLDEN_DEBUGGING
    assert (store / "MEMORY.md").read_text(encoding="utf-8") == GOLDEN_INDEX


# --- the plan hand-off (--save-plan / --apply-plan) -------------------------------------------


def _saved_plan(project: Path, path: Path, llm: LLM) -> D.DreamPlan:
    with dreaming(project) as mem:
        plan = D.make_plan(mem, llm)
    D.save_plan(plan, path)
    return plan


def test_plan_round_trips_through_json_and_a_file(
    project: Path, store: Path, tmp_path: Path, plan_llm: LLM
) -> None:
    path = tmp_path / "plan.json"
    plan = _saved_plan(project, path, plan_llm)
    assert D.DreamPlan.from_json(json.loads(json.dumps(plan.to_json())), store=store) == plan
    assert path.stat().st_mode & 0o777 == 0o600  # it holds the topics' text
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["format_version"] == D.PLAN_FORMAT_VERSION
    assert data["store"] == str(store)
    infra = next(c for c in data["changes"] if c["file"] == "topics/infra.md")
    assert (infra["before"], infra["after"]) == (INFRA, None)
    tooling = next(c for c in data["changes"] if c["file"] == "topics/tooling.md")
    assert (tooling["before"], tooling["after"]) == (None, GOLDEN_TOOLING)

    loaded = D.load_plan(path, store)
    assert loaded == plan and loaded.from_file == path
    assert loaded.render() == plan.render()
    D.apply_plan(loaded, now=DREAM_AT)
    assert (store / "topics" / "debugging.md").read_text(encoding="utf-8") == GOLDEN_DEBUGGING
    assert (store / "topics" / "tooling.md").read_text(encoding="utf-8") == GOLDEN_TOOLING
    assert (store / "MEMORY.md").read_text(encoding="utf-8") == GOLDEN_INDEX
    assert not (store / "topics" / "infra.md").exists()
    assert dailies(store) == {name: text.encode() for name, text in DAILY.items()}


def _tamper_file(relpath: str) -> Any:
    def change(data: dict[str, Any]) -> None:
        data["changes"][0]["file"] = relpath
        del data["changes"][0]["diff"]  # the diff names the file; only the path is under test

    return change


def _set(key: str, value: Any) -> Any:
    def change(data: dict[str, Any]) -> None:
        data[key] = value

    return change


def _set_change(key: str, value: Any) -> Any:
    def change(data: dict[str, Any]) -> None:
        data["changes"][0][key] = value

    return change


def _twice(data: dict[str, Any]) -> None:
    data["changes"].append(dict(data["changes"][0]))


@pytest.mark.parametrize(
    ("tamper", "message"),
    [
        (_tamper_file("../outside.md"), "neither MEMORY.md nor a file in topics/"),
        (_tamper_file("topics/../../outside.md"), "neither MEMORY.md nor a file in topics/"),
        (_tamper_file("topics/...md"), "is refused"),
        (_tamper_file("/etc/passwd"), "neither MEMORY.md nor a file in topics/"),
        (_tamper_file("2026-07-12.md"), "neither MEMORY.md nor a file in topics/"),
        (_tamper_file(".dream-meta.json"), "neither MEMORY.md nor a file in topics/"),
        (_tamper_file("topics/sub/x.md"), "neither MEMORY.md nor a file in topics/"),
        (_tamper_file("topics/con.md"), "is refused"),
        (_tamper_file("topics/Evil.md"), "is refused"),
        (_tamper_file("topics/x\x00.md"), "is refused"),
        (_set("store", "/tmp/another/store"), "made for the store /tmp/another/store"),
        (_set("format_version", 99), "format_version is 99"),
        (_set("format_version", None), "format_version is None"),
        (_set("extra", 1), "unknown key(s) extra"),
        (_set("changes", "all of them"), "no changes list"),
        (_set_change("after", "## sneaky\nnot what was shown\n"), "is not the diff of its texts"),
        (_set_change("action", "create"), "action 'create'"),
        (_set_change("before", 3), "before must be text"),
        (_set_change("shell", "rm -rf /"), "unknown key(s) shell"),
        (_twice, "twice"),
    ],
)
def test_a_tampered_plan_is_refused_and_changes_nothing(
    project: Path, store: Path, tmp_path: Path, tamper: Any, message: str, plan_llm: LLM
) -> None:
    path = tmp_path / "plan.json"
    _saved_plan(project, path, plan_llm)
    outside = project / "outside.md"
    outside.write_text("keep me\n", encoding="utf-8")
    data = json.loads(path.read_text(encoding="utf-8"))
    tamper(data)
    path.write_text(json.dumps(data), encoding="utf-8")
    before = snapshot(store)
    with pytest.raises(D.DreamPlanError) as caught:
        D.load_plan(path, store)
    assert message in caught.value.message
    assert "nothing was changed" in caught.value.message
    assert caught.value.hint and "--save-plan" in caught.value.hint
    assert snapshot(store) == before
    assert outside.read_text(encoding="utf-8") == "keep me\n"


def test_a_plan_through_a_topic_link_out_of_the_store_is_refused(
    project: Path, store: Path, tmp_path: Path, plan_llm: LLM
) -> None:
    path = tmp_path / "plan.json"
    plan = _saved_plan(project, path, plan_llm)
    target = tmp_path / "elsewhere.md"
    target.write_text(GOLDEN_TOOLING, encoding="utf-8")
    (store / "topics" / "tooling.md").symlink_to(target)  # the file the plan creates
    with pytest.raises(D.DreamPlanError, match="is refused"):
        D.DreamPlan.from_json(plan.to_json(), store=store)
    assert target.read_text(encoding="utf-8") == GOLDEN_TOOLING


def test_a_plan_whose_base_file_changed_is_refused_and_says_to_plan_again(
    project: Path, store: Path, tmp_path: Path, plan_llm: LLM
) -> None:
    path = tmp_path / "plan.json"
    _saved_plan(project, path, plan_llm)
    edited = DEBUGGING + "\n## Added by hand\nwhile the user read the diff\n"
    (store / "topics" / "debugging.md").write_text(edited, encoding="utf-8")
    before = snapshot(store)
    plan = D.load_plan(path, store)  # valid as a file; stale as a plan
    with pytest.raises(D.DreamError) as caught:
        D.apply_plan(plan, now=DREAM_AT)
    assert "topics/debugging.md changed since the plan" in caught.value.message
    assert "nothing was changed" in caught.value.message
    assert caught.value.hint and caught.value.hint.startswith("plan again")
    assert snapshot(store) == before
    assert not (store / D.DREAM_META).exists()


def test_cli_save_plan_then_apply_plan(project: Path, store: Path, tmp_path: Path) -> None:
    before = snapshot(store)
    path = tmp_path / "saved.json"
    with FakeOpenAI(answer=json.dumps(PLAN), stream=False) as server:
        refused = run_cli(project, server, "--save-plan", str(path))
        assert refused.returncode == 2 and "--save-plan needs --dry-run" in refused.stderr

        dry = run_cli(project, server, "--dry-run", "--save-plan", str(path), "--json")
        assert dry.returncode == 0, dry.stderr
        shown = json.loads(dry.stdout)
        assert shown["applied"] is False and shown["dry_run"] is True
        assert "+staging SSH uses port 2200 (previously 2222)" in shown["rendered"]
        assert shown["rendered"].startswith("Dream plan (openai/fake-dreamer): 4 file(s)")
        assert snapshot(store) == before
        saved = json.loads(path.read_text(encoding="utf-8"))
        # The file is the plan that was shown, nothing more and nothing less.
        assert saved == {
            k: v for k, v in shown.items() if k not in ("rendered", "applied", "dry_run")
        }
        assert len(server.requests) == 1

        # The LLM would now answer something else; the saved plan is what applies.
        server.set(answer='{"topics": [], "delete": ["preferences"], "summary": []}')
        applied = run_cli(project, server, "--apply-plan", str(path), "--yes", "--json")
        assert applied.returncode == 0, applied.stderr
        assert len(server.requests) == 1  # applying asks no LLM
        data = json.loads(applied.stdout)
        assert data["applied"] is True and data["changes"] == saved["changes"]

        again = run_cli(project, server, "--apply-plan", str(path), "--yes")
        assert again.returncode == 1
        assert "changed since the plan in" in again.stderr and "plan again" in again.stderr
        assert "Traceback" not in again.stderr

    today = TODAY.isoformat()  # the CLI plans for its clock's day
    topics = store / "topics"
    assert (topics / "debugging.md").read_text(encoding="utf-8") == GOLDEN_DEBUGGING.replace(
        "2026-07-13", today
    )
    assert (topics / "tooling.md").read_text(encoding="utf-8") == GOLDEN_TOOLING.replace(
        "2026-07-13", today
    )
    assert (topics / "preferences.md").read_text(encoding="utf-8") == PREFERENCES
    assert not (topics / "infra.md").exists()
    assert (store / "MEMORY.md").read_text(encoding="utf-8") == GOLDEN_INDEX
    assert dailies(store) == {name: text.encode() for name, text in DAILY.items()}
    assert json.loads((store / D.DREAM_META).read_text())["sessions_since"] == 0
    with dreaming(project) as mem:  # re-indexed by the apply
        hits = mem.search("port 2200", 5, kind="topic", sync=False).hits
        assert hits and hits[0].source.endswith("topics/debugging.md")


def test_cli_apply_plan_refuses_a_tampered_plan_and_a_declined_one(
    project: Path, store: Path, tmp_path: Path, plan_llm: LLM
) -> None:
    path = tmp_path / "saved.json"
    _saved_plan(project, path, plan_llm)
    before = snapshot(store)
    with FakeOpenAI(answer="never asked") as server:
        declined = run_cli(project, server, "--apply-plan", str(path), stdin="n\n")
        assert declined.returncode == 1, declined.stderr
        assert "+++ b/topics/tooling.md" in declined.stdout
        assert "Nothing was changed." in declined.stdout
        assert snapshot(store) == before

        data = json.loads(path.read_text(encoding="utf-8"))
        data["changes"][0]["file"] = "../../escape.md"
        path.write_text(json.dumps(data), encoding="utf-8")
        tampered = run_cli(project, server, "--apply-plan", str(path), "--yes")
        assert tampered.returncode == 1
        assert "the dream plan file is unusable" in tampered.stderr
        assert "Traceback" not in tampered.stderr

        missing = run_cli(project, server, "--apply-plan", str(tmp_path / "none.json"), "--yes")
        assert missing.returncode == 1 and "cannot read the dream plan" in missing.stderr
        assert not server.requests
    assert snapshot(store) == before
    assert not (project / "escape.md").exists()


# --- a crash mid-apply: the dream intents --------------------------------------------------------

# Applies a saved plan and SIGKILLs itself: after the first rename ("first"),
# after the last one but before the intents say committed ("last"), or after
# the commit mark but before the backups and the intents file are removed
# ("committed"). A real kill: no finally, no except, nothing of the
# in-process rollback runs.
_KILL = """\
import os, signal, sys
from pathlib import Path
from memlane.engine.topics import dream as D
store, plan_file, when = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
plan = D.load_plan(plan_file, store)
last = sum(c.after is not None for c in plan.changes)
renames = 0
def replace(src, dst):
    global renames
    os.replace(src, dst)
    renames += 1
    if (when == "first" and renames == 1) or (when == "last" and renames == last):
        os.kill(os.getpid(), signal.SIGKILL)
def kill():
    os.kill(os.getpid(), signal.SIGKILL)
hooks = D.ApplyHooks(replace=replace, committed=kill if when == "committed" else lambda: None)
from datetime import datetime, timezone
D.apply_plan(plan, now=datetime(2026, 7, 13, 10, 0, tzinfo=timezone.utc), hooks=hooks)
sys.exit(3)
"""


def _kill_mid_apply(store: Path, plan_file: Path, when: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _KILL, str(store), str(plan_file), when],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == -9, done.stderr
    assert (store / ".dream-journal.json").is_file()


def _side_files(store: Path) -> list[str]:
    return sorted(
        str(p.relative_to(store))
        for p in store.rglob(".*")
        if p.name.endswith((".dream-backup", ".dream.tmp")) or p.name == ".dream-journal.json"
    )


@pytest.mark.subprocess
@pytest.mark.parametrize("next_step", ["apply_plan", "make_plan", "topics.add", "list_topics"])
def test_a_kill_after_the_first_rename_is_rolled_back_by_whatever_comes_next(
    project: Path, store: Path, tmp_path: Path, next_step: str, plan_llm: LLM
) -> None:
    from memlane.store import topics as T

    plan_file = tmp_path / "plan.json"
    _saved_plan(project, plan_file, plan_llm)
    before = snapshot(store)

    _kill_mid_apply(store, plan_file, "first")
    # Half a dream on disk: debugging.md rewritten, its original only in a backup.
    assert (store / "topics" / "debugging.md").read_text(encoding="utf-8") == GOLDEN_DEBUGGING
    assert any(name.endswith(".dream-backup") for name in _side_files(store))
    pending = D.pending_recovery(store)
    assert pending is not None and "half-done" in pending and "topics/debugging.md" in pending

    if next_step == "apply_plan":
        D.apply_plan(
            D.load_plan(plan_file, store), now=DREAM_AT
        )  # rolls back, then applies cleanly
        assert (store / "topics" / "debugging.md").read_text(encoding="utf-8") == GOLDEN_DEBUGGING
        assert (store / "topics" / "tooling.md").read_text(encoding="utf-8") == GOLDEN_TOOLING
        assert (store / "MEMORY.md").read_text(encoding="utf-8") == GOLDEN_INDEX
        assert not (store / "topics" / "infra.md").exists()
        assert _side_files(store) == []
        return
    if next_step == "make_plan":
        with dreaming(project) as mem:
            again = D.make_plan(mem, plan_llm)
        assert again.changes == D.load_plan(plan_file, store).changes
    elif next_step == "topics.add":
        T.add(store, content="a note", topic="notes", title="Note", today=TODAY)
        after = snapshot(store)
        touched = {"MEMORY.md", "topics/notes.md"}
        assert {k: v for k, v in after.items() if k not in touched} == {
            k: v for k, v in before.items() if k not in touched
        }
        index = after["MEMORY.md"].decode()
        assert "topics/infra.md" in index and "SSH gotcha" in index  # the original index
        assert _side_files(store) == [] and D.pending_recovery(store) is None
        return
    else:
        assert [t.slug for t in T.list_topics(store)] == ["debugging", "infra", "preferences"]
    assert snapshot(store) == before  # byte for byte, no intents file, backup or temp left
    assert D.pending_recovery(store) is None
    D.apply_plan(D.load_plan(plan_file, store), now=DREAM_AT)  # the same saved plan applies now
    assert (store / "MEMORY.md").read_text(encoding="utf-8") == GOLDEN_INDEX
    assert _side_files(store) == []


@pytest.mark.subprocess
def test_a_kill_after_the_last_rename_but_before_the_commit_mark_is_rolled_back(
    project: Path, store: Path, tmp_path: Path, plan_llm: LLM
) -> None:
    plan_file = tmp_path / "plan.json"
    _saved_plan(project, plan_file, plan_llm)
    before = snapshot(store)

    _kill_mid_apply(store, plan_file, "last")
    # Every file is the dream's, but the intents never said committed: all or nothing.
    assert (store / "MEMORY.md").read_text(encoding="utf-8") == GOLDEN_INDEX
    report = D.recover_interrupted_dream(store)
    assert report.outcome == "rolled back"
    assert sorted(report.restored) == ["MEMORY.md", "topics/debugging.md", "topics/infra.md"]
    assert report.removed == ["topics/tooling.md"]
    message = report.render()
    assert message is not None and "restored" in message and "topics/tooling.md" in message
    assert snapshot(store) == before
    assert D.recover_interrupted_dream(store).render() is None  # nothing left to do


@pytest.mark.subprocess
def test_a_kill_after_the_commit_mark_keeps_the_applied_dream(
    project: Path, store: Path, tmp_path: Path, plan_llm: LLM
) -> None:
    from memlane.store import topics as T

    plan_file = tmp_path / "plan.json"
    _saved_plan(project, plan_file, plan_llm)

    _kill_mid_apply(store, plan_file, "committed")
    assert json.loads((store / ".dream-journal.json").read_text())["state"] == "committed"
    pending = D.pending_recovery(store)
    assert pending is not None and "fully applied" in pending

    # A reader settles it: the dream stands, its backups and the intents file go.
    assert [t.slug for t in T.list_topics(store)] == ["debugging", "preferences", "tooling"]
    assert (store / "topics" / "debugging.md").read_text(encoding="utf-8") == GOLDEN_DEBUGGING
    assert (store / "topics" / "tooling.md").read_text(encoding="utf-8") == GOLDEN_TOOLING
    assert (store / "MEMORY.md").read_text(encoding="utf-8") == GOLDEN_INDEX
    assert not (store / "topics" / "infra.md").exists()
    assert _side_files(store) == []
    assert D.pending_recovery(store) is None
    assert dailies(store) == {name: text.encode() for name, text in DAILY.items()}


@pytest.mark.subprocess
def test_a_recovery_interrupted_itself_finishes_next_time(
    project: Path, store: Path, tmp_path: Path, plan_llm: LLM
) -> None:
    from memlane.store import dream_intents as di

    plan_file = tmp_path / "plan.json"
    _saved_plan(project, plan_file, plan_llm)
    before = snapshot(store)
    _kill_mid_apply(store, plan_file, "last")
    # A recovery killed after putting back one backup: that backup is gone.
    intents = di.read(store)
    assert intents is not None and intents[0] == di.APPLYING
    first = intents[1][0]
    assert first.backup is not None
    os.replace(first.backup, first.target)

    report = D.recover_interrupted_dream(store)
    assert report.outcome == "rolled back"
    assert first.target.relative_to(store).as_posix() not in report.restored
    assert snapshot(store) == before
    D.apply_plan(D.load_plan(plan_file, store), now=DREAM_AT)
    assert (store / "MEMORY.md").read_text(encoding="utf-8") == GOLDEN_INDEX


def test_a_damaged_intents_file_stops_writes_and_says_so(store: Path) -> None:
    from memlane.core.errors import StoreError
    from memlane.store import topics as T

    before = snapshot(store)
    (store / ".dream-journal.json").write_text(
        json.dumps(
            {
                "format_version": 1,
                "state": "applying",
                "changes": [{"target": "../../outside.md", "backup": "absent", "temp": None}],
            }
        ),
        encoding="utf-8",
    )
    with pytest.raises(StoreError, match="unusable"):
        T.add(store, content="x", topic="notes", title="Note", today=TODAY)
    pending = D.pending_recovery(store)
    assert pending is not None and "unusable" in pending
    before[".dream-journal.json"] = (store / ".dream-journal.json").read_bytes()
    assert snapshot(store) == before  # nothing touched, the intents file kept for a human


def test_leftovers_without_an_intents_file_are_reported_not_silently_left(store: Path) -> None:
    topics = store / "topics"
    # What a crash of a memlane without the intents file left: infra.md's only
    # copy in a backup, a redundant backup of preferences.md, a temp file.
    lost = topics / ".infra.md.4242.0a1b2c3d.dream-backup"
    os.replace(topics / "infra.md", lost)
    redundant = topics / ".preferences.md.4242.0a1b2c3e.dream-backup"
    os.link(topics / "preferences.md", redundant)
    temp = store / ".MEMORY.md.4242.0a1b2c3f.dream.tmp"
    temp.write_text("half a dream\n", encoding="utf-8")

    pending = D.pending_recovery(store)
    assert pending is not None
    for path in (lost, redundant, temp):
        assert str(path.relative_to(store)) in pending

    report = D.recover_interrupted_dream(store)
    assert report.outcome is None
    assert sorted(report.cleaned) == [
        ".MEMORY.md.4242.0a1b2c3f.dream.tmp",
        "topics/.preferences.md.4242.0a1b2c3e.dream-backup",
    ]
    assert report.leftovers == [
        "topics/.infra.md.4242.0a1b2c3d.dream-backup (an earlier topics/infra.md, now missing)"
    ]
    assert lost.read_text(encoding="utf-8") == INFRA  # never deleted: it is the only copy
    assert not redundant.exists() and not temp.exists()
    message = D.pending_recovery(store)
    assert message is not None and ".infra.md.4242.0a1b2c3d.dream-backup" in message
    # ... and said again every time until a human decides.
    again = D.recover_interrupted_dream(store).render()
    assert again is not None and "infra.md" in again


def test_hand_written_secrets_never_reach_the_dream_llm(project: Path) -> None:
    """Text typed into a topic file by hand is redacted before the dream prompt leaves."""
    from memlane.engine.topics.dream import build_prompt, orient

    store = dreaming(project).scope.store
    topics.add(
        store,
        content="the deploy uses the staging profile",
        topic="deploy",
        title="Profile",
        today=TOPIC_DAY,
    )
    key = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY"
    path = store / "topics" / "deploy.md"
    path.write_text(path.read_text() + f"\n## Keys\nAWS_SECRET_ACCESS_KEY={key}\n")
    _, prompt, _ = build_prompt(orient(store), [], today=date(2026, 11, 30))
    assert key not in prompt and "AWS_SECRET_ACCESS_KEY=" in prompt
