"""Extraction (engine/topics/extraction.py, proposals.py, duplicates.py) with a real fake LLM
server on 127.0.0.1.

``DUPLICATE_PAIRS`` is the calibration set for ``DUPLICATE_COSINE`` and
``DUPLICATE_OVERLAP``: an existing entry and a proposal that restates it
(True) or states a different fact about the same system (False).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from fake_llm import FakeOpenAI
from helpers import TOPIC_DAY, FixedClock, open_memory
from memlane.core.settings import LlmSettings, TopicSettings
from memlane.core.types import Exchange
from memlane.engine.project import Memory
from memlane.engine.topics import duplicates, proposals
from memlane.engine.topics import extraction as X
from memlane.llm.base import LLM
from memlane.llm.factory import make_llm
from memlane.store import topics as store_topics

DUPLICATE_PAIRS: list[tuple[str, str, bool]] = [
    (
        "SSH Gotcha\nstaging uses port 2222, the key is at ~/.ssh/staging_ed25519",
        "Staging SSH port\nSSH to the staging server goes through port 2222 with the "
        "staging_ed25519 key",
        True,
    ),
    (
        "MySQL Timeout\nconnections to the staging MySQL drop after 30 s idle; the pool sets "
        "pool_recycle=25",
        "Staging MySQL idle timeout\nThe staging MySQL closes idle connections after 30 "
        "seconds, so pool_recycle is set to 25",
        True,
    ),
    (
        "Formatter\nformat with ruff format, line length 100; no black",
        "Use ruff for formatting\nThe project formats code with ruff format at line length "
        "100, not black",
        True,
    ),
    (
        "Rebase\nrebase feature branches on main; no merge commits",
        "Prefer rebase over merge\nThe user wants feature branches rebased on main rather "
        "than merge commits",
        True,
    ),
    (
        "Amounts\nall amounts are integers in cents; never floats",
        "Money stored in cents\nMonetary amounts are always integer cents, never floating point",
        True,
    ),
    (
        "Token lifetime\naccess tokens live 15 minutes, refresh tokens 30 days",
        "Access token expiry\nJWT access tokens expire after 15 minutes; refresh tokens last "
        "30 days",
        True,
    ),
    (
        "Real database\nuse the real Postgres container (docker compose up db), mocks hid a bug",
        "Integration tests need real Postgres\nIntegration tests run against the real Postgres "
        "container instead of mocks, which once hid a bug",
        True,
    ),
    (
        "TTL\nproduct pages are cached in Redis for 300 seconds",
        "Product page cache TTL\nProduct pages stay in the Redis cache for 5 minutes (300 s)",
        True,
    ),
    (
        "SSH Gotcha\nstaging uses port 2222, the key is at ~/.ssh/staging_ed25519",
        "Production SSH bastion\nProduction servers are reached through the bastion host "
        "bastion.acme.io on port 22",
        False,
    ),
    (
        "MySQL Timeout\nconnections to the staging MySQL drop after 30 s idle; the pool sets "
        "pool_recycle=25",
        "MySQL charset\nThe staging MySQL database must use utf8mb4 or emoji in product names "
        "fail to insert",
        False,
    ),
    (
        "Formatter\nformat with ruff format, line length 100; no black",
        "Import sorting\nImports are sorted by ruff's isort rules (I001), with first-party "
        "package memlane",
        False,
    ),
    (
        "Rebase\nrebase feature branches on main; no merge commits",
        "Branch naming\nFeature branches are named feat/<ticket>-<short-description>",
        False,
    ),
    (
        "Amounts\nall amounts are integers in cents; never floats",
        "Currency codes\nEvery amount is stored with its ISO 4217 currency code; only EUR and "
        "USD are accepted",
        False,
    ),
    (
        "Token lifetime\naccess tokens live 15 minutes, refresh tokens 30 days",
        "Password hashing\nPasswords are hashed with argon2id; bcrypt hashes are rehashed at "
        "next login",
        False,
    ),
    (
        "Real database\nuse the real Postgres container (docker compose up db), mocks hid a bug",
        "Test database reset\nEach integration test runs in a transaction that is rolled back, "
        "so the Postgres container is reused",
        False,
    ),
    (
        "TTL\nproduct pages are cached in Redis for 300 seconds",
        "Redis memory limit\nThe Redis instance has maxmemory 512mb with allkeys-lru eviction",
        False,
    ),
    (
        "Refresh race\ntwo tabs refreshing at once invalidated each other; refresh calls are "
        "serialised with a lock in auth/refresh.py",
        "Logout clears refresh token\nLogging out revokes the refresh token server-side in "
        "auth/logout.py",
        False,
    ),
    (
        "Webhooks\nverify the Stripe-Signature header before handling a webhook event",
        "Stripe webhook retries\nStripe retries failed webhooks for 3 days, so handlers must be "
        "idempotent on event id",
        False,
    ),
]

EXISTING = [
    ("Debugging", "SSH Gotcha", "staging uses port 2222, the key is at ~/.ssh/staging_ed25519"),
    (
        "Debugging",
        "MySQL Timeout",
        "connections to the staging MySQL drop after 30 s idle; the pool sets pool_recycle=25",
    ),
    ("Git Workflow", "Rebase", "rebase feature branches on main; no merge commits"),
    ("Payments", "Amounts", "all amounts are integers in cents; never floats"),
]

EXCHANGE = Exchange(
    user="the staging deploy failed again, can you check? btw always use pnpm, never npm",
    assistant="The deploy failed because the staging runner's disk was full; I pruned "
    "docker images with docker system prune -af and re-ran the job. Noted: pnpm only.",
)


@pytest.fixture
def model_mem(project: Path, clock: FixedClock) -> Iterator[Memory]:
    """The project's memory with the bundled model (the duplicate cosine needs it)."""
    mem = open_memory(project, clock=clock, lexical=False)
    assert mem.embedding.embedder is not None
    yield mem
    mem.close()


def seed(mem: Memory) -> None:
    for topic, title, content in EXISTING:
        store_topics.add(
            mem.scope.store, content=content, topic=topic, title=title, today=TOPIC_DAY
        )
    mem.sync()


def llm_for(server: FakeOpenAI) -> LLM:
    llm = make_llm(LlmSettings(provider="openai", base_url=server.base_url, model="fake-model"))
    assert llm is not None
    return llm


def settings(**changes: Any) -> TopicSettings:
    return replace(TopicSettings(), **changes)


def answer(*items: dict[str, Any]) -> str:
    return json.dumps(list(items))


def entries(mem: Memory) -> dict[str, list[str]]:
    return {info.slug: info.titles for info in store_topics.list_topics(mem.scope.store)}


# --- the happy paths ----------------------------------------------------------------------------


def test_durable_learnings_are_written(memory: Memory) -> None:
    reply = answer(
        {
            "topic": "Preferences",
            "title": "Use pnpm, never npm",
            "content": "The user wants pnpm for every package command; npm is not used.",
            "type": "user",
        },
        {
            "topic": "Deployment",
            "title": "Staging runner disk fills up with docker images",
            "content": "Staging deploys fail when the runner's disk is full; "
            "`docker system prune -af` on the runner frees it.",
            "type": "feedback",
        },
    )
    with FakeOpenAI(answer=reply) as server:
        report = X.extract(memory, EXCHANGE, llm_for(server), settings=settings(), timeout_s=5)
        sent = server.requests[0].body["messages"]
    assert report.status == "written", report.to_json()
    assert [w["title"] for w in report.written] == [
        "Use pnpm, never npm",
        "Staging runner disk fills up with docker images",
    ]
    assert entries(memory) == {
        "deployment": ["Staging runner disk fills up with docker images"],
        "preferences": ["Use pnpm, never npm"],
    }
    parsed = store_topics.read_topic(memory.scope.store, "preferences")
    assert parsed.get("type") == "user"
    index = (memory.scope.store / "MEMORY.md").read_text(encoding="utf-8")
    assert "- [Preferences](topics/preferences.md) — Use pnpm, never npm" in index
    assert sent[0]["role"] == "system" and "Never propose" in sent[0]["content"]
    assert EXCHANGE.user in sent[-1]["content"] and "(no topics yet)" in sent[-1]["content"]
    assert report.model and report.elapsed_ms > 0


def test_one_time_task_writes_nothing(memory: Memory) -> None:
    with FakeOpenAI(answer="[]") as server:
        report = X.extract(
            memory,
            Exchange(user="rename foo to bar in utils.py", assistant="Renamed foo to bar."),
            llm_for(server),
            settings=settings(),
            timeout_s=5,
        )
    assert report.status == "nothing" and report.proposed == 0 and report.error is None
    assert entries(memory) == {}


def test_the_exchange_is_clipped_to_max_context_tokens(memory: Memory) -> None:
    huge = Exchange(user="why? " * 5000, assistant="because " * 20000)
    with FakeOpenAI(answer="[]") as server:
        X.extract(
            memory,
            huge,
            llm_for(server),
            settings=settings(extract_memories_max_context_tokens=500),
            timeout_s=5,
        )
        prompt = server.requests[0].body["messages"][-1]["content"]
    assert "characters omitted" in prompt
    # 500 tokens ~ 2000 characters of exchange, plus the fixed framing.
    assert len(prompt) < 2000 + 600


def test_the_index_is_shown_and_an_existing_topic_keeps_its_type(memory: Memory) -> None:
    seed(memory)
    reply = answer(
        {
            "topic": "git-workflow.md",
            "title": "Conventional commit messages",
            "content": "Commit messages follow conventional commits: feat:, fix:, docs:.",
            "type": "reference",
        }
    )
    with FakeOpenAI(answer=f"```json\n{reply}\n```") as server:
        report = X.extract(memory, EXCHANGE, llm_for(server), settings=settings(), timeout_s=5)
        prompt = server.requests[0].body["messages"][-1]["content"]
    assert "- [Git Workflow](topics/git-workflow.md) — Rebase" in prompt
    assert report.status == "written"
    parsed = store_topics.read_topic(memory.scope.store, "git-workflow")
    assert parsed.titles == ["Rebase", "Conventional commit messages"]
    assert parsed.get("type") == "feedback"  # not re-labelled by one proposal


# --- de-duplication -----------------------------------------------------------------------------


def _learning(text: str) -> proposals.Learning:
    title, content = text.split("\n", 1)
    return proposals.Learning("t", "t", title, content, "feedback")


def test_duplicate_thresholds_separate_the_calibration_pairs(model_mem: Memory) -> None:
    for existing, proposal, is_duplicate in DUPLICATE_PAIRS:
        found = duplicates.near_duplicate(model_mem, _learning(proposal), [existing])
        assert (found is not None) == is_duplicate, (proposal, found)


def test_duplicate_overlap_without_a_model(memory: Memory) -> None:
    for existing, proposal, is_duplicate in DUPLICATE_PAIRS:
        found = duplicates.near_duplicate(memory, _learning(proposal), [existing])
        assert (found is not None) == is_duplicate, (proposal, found)


def test_near_duplicates_of_existing_entries_are_skipped(model_mem: Memory) -> None:
    seed(model_mem)
    reply = answer(
        {  # a restatement of Debugging / SSH Gotcha
            "topic": "Infrastructure",
            "title": "Staging SSH port",
            "content": "SSH to the staging server goes through port 2222 with the "
            "staging_ed25519 key.",
            "type": "project",
        },
        {  # the same title as an existing entry
            "topic": "Billing",
            "title": "amounts!",
            "content": "Invoices are rendered in the customer's currency.",
            "type": "project",
        },
        {  # the same content, other words around it
            "topic": "Payments",
            "title": "Cents only",
            "content": "All amounts are integers in cents; never floats.",
            "type": "project",
        },
    )
    new = {
        "topic": "Payments",
        "title": "Stripe webhook retries",
        "content": "Stripe retries failed webhooks for 3 days, so handlers must be "
        "idempotent on the event id.",
        "type": "project",
    }
    with FakeOpenAI(answer=reply) as server:
        llm = llm_for(server)
        report = X.extract(model_mem, EXCHANGE, llm, settings=settings(), timeout_s=5)
        assert report.status == "nothing", report.to_json()
        reasons = [s["reason"] for s in report.skipped]
        assert reasons[0].startswith("near duplicate (0.")
        assert "SSH to the staging" not in reasons[0] and "staging uses port 2222" in reasons[0]
        assert reasons[1] == "same title in topics/payments.md"
        assert reasons[2] == "same content in topics/payments.md"
        # A related but different fact is kept; proposing it again (not yet
        # indexed: the session's indexer runs later) is caught from the file.
        server.set(answer=answer(new))
        assert X.extract(model_mem, EXCHANGE, llm, settings=settings(), timeout_s=5).wrote
        reworded = "Failed Stripe webhooks are retried for three days: make handlers idempotent."
        server.set(answer=answer({**new, "title": "Webhook retry window", "content": reworded}))
        again = X.extract(model_mem, EXCHANGE, llm, settings=settings(), timeout_s=5)
    assert again.status == "nothing", again.to_json()
    assert again.skipped[0]["reason"].startswith("near duplicate")
    assert entries(model_mem)["payments"] == ["Amounts", "Stripe webhook retries"]
    assert "infrastructure" not in entries(model_mem)


def test_duplicates_within_one_answer(memory: Memory) -> None:
    item = {
        "topic": "Tooling",
        "title": "Use pnpm",
        "content": "Use pnpm for every package command, never npm.",
        "type": "user",
    }
    with FakeOpenAI(answer=answer(item, {**item, "topic": "Preferences"})) as server:
        report = X.extract(memory, EXCHANGE, llm_for(server), settings=settings(), timeout_s=5)
    assert len(report.written) == 1 and report.skipped[0]["reason"].startswith("same title")


# --- validation ---------------------------------------------------------------------------------


def test_invalid_proposals_are_skipped_with_a_reason(memory: Memory) -> None:
    good = {
        "topic": "Preferences",
        "title": "Short answers",
        "content": "The user prefers short answers with one code example.",
        "type": "user",
    }
    bad: list[Any] = [
        "just a string",
        {**good, "topic": "../../etc/passwd"},
        {**good, "topic": "con"},
        {**good, "type": "opinion"},
        {**good, "title": "x" * 200},
        {**good, "content": "ok"},
        {**good, "content": 42},
        {**good, "extra": True},
    ]
    with FakeOpenAI(answer=json.dumps(bad[:2])) as server:
        llm = llm_for(server)
        first = X.extract(memory, EXCHANGE, llm, settings=settings(), timeout_s=5)
        assert first.status == "nothing" and len(first.skipped) == 2
        skipped: list[str] = []
        for chunk in (bad[2:5], bad[5:8]):
            server.set(answer=json.dumps(chunk))
            report = X.extract(memory, EXCHANGE, llm, settings=settings(), timeout_s=5)
            assert not report.written
            skipped += [s["reason"] for s in report.skipped]
        server.set(answer=json.dumps([good, {**good, "title": "b"}, {**good, "title": "c"}] * 2))
        capped = X.extract(memory, EXCHANGE, llm, settings=settings(), timeout_s=5)
    assert [s["reason"].split(":")[0] for s in first.skipped] == ["invalid", "invalid"]
    assert "separator" in first.skipped[1]["reason"]
    assert "reserved" in skipped[0] and "unknown type" in skipped[1] and "title" in skipped[2]
    assert "content" in skipped[3] and "content" in skipped[4] and "unknown keys" in skipped[5]
    assert len(capped.written) == 1  # b and c are near copies of the first
    assert [s["reason"] for s in capped.skipped][-3:] == ["over 3 per exchange"] * 3
    assert list(entries(memory)) == ["preferences"]
    assert not list((memory.scope.store).glob("etc*"))


# --- failures are reported, never raised --------------------------------------------------------


@pytest.mark.parametrize(
    ("behaviour", "error"),
    [
        ({"answer": "Sure! Here are the learnings: none really."}, "no JSON array"),
        ({"answer": '[{"topic": "a", "title": '}, "malformed JSON"),
        ({"answer": '{"topic": "a"}'}, "not an array"),
        ({"answer": ""}, "empty answer"),
        ({"status": 500}, "500"),
    ],
)
def test_bad_answers_are_reported(memory: Memory, behaviour: dict[str, Any], error: str) -> None:
    daily = memory.write("the journal entry of this exchange")
    before = Path(daily.path).read_text(encoding="utf-8")
    with FakeOpenAI(**behaviour) as server:
        report = X.extract(memory, EXCHANGE, llm_for(server), settings=settings(), timeout_s=5)
    assert report.status == "failed" and error in (report.error or ""), report.to_json()
    assert entries(memory) == {}
    assert Path(daily.path).read_text(encoding="utf-8") == before


def test_a_slow_llm_times_out(memory: Memory) -> None:
    # The server would answer after a minute (leaving the block wakes it): an
    # extraction that waited for it would report "nothing", not a timeout.
    with FakeOpenAI(answer="[]", delay_s=60.0) as server:
        report = X.extract(memory, EXCHANGE, llm_for(server), settings=settings(), timeout_s=0.3)
    assert report.status == "failed" and report.error, report.to_json()
    assert "timed out after 0.3 s" in report.error
    assert entries(memory) == {}


def test_an_unreachable_llm_is_reported(memory: Memory) -> None:
    from fake_llm import closed_port_url

    llm = make_llm(LlmSettings(provider="openai", base_url=closed_port_url(), model="m"))
    assert llm is not None
    report = X.extract(memory, EXCHANGE, llm, settings=settings(), timeout_s=2)
    assert report.status == "failed" and report.error


def test_switched_off(memory: Memory) -> None:
    with FakeOpenAI(answer="[]") as server:
        llm = llm_for(server)
        off = X.extract(
            memory,
            EXCHANGE,
            llm,
            settings=settings(extract_memories_enabled=False),
            timeout_s=5,
        )
        layer_off = X.extract(memory, EXCHANGE, llm, settings=settings(enabled=False), timeout_s=5)
        assert server.requests == []
    assert off.status == "disabled" and layer_off.status == "disabled"
    assert X.extract(memory, EXCHANGE, None, settings=settings(), timeout_s=5).status == ("no-llm")


def test_parse_answer() -> None:
    assert proposals.parse_answer("[]") == []
    assert proposals.parse_answer('```\n[{"a": 1}]\n```') == [{"a": 1}]
    assert proposals.parse_answer('Here you go:\n[{"a": 1}]\nDone.') == [{"a": 1}]
    with pytest.raises(proposals.AnswerError):
        proposals.parse_answer("null")
