"""Extraction does not repeat what the topic files already say (issue 29), after a dream too.

After a dream had merged "deploys are frozen on Fridays" into a longer entry,
the next extraction proposed the same fact under a new title and it was added
again. Proposals are compared with the topic files as they are now (read from
disk, each sentence of a merged entry on its own), not with the index, which
may be behind. The dream is the real one (plan, apply, re-index), its LLM a
fake OpenAI server on 127.0.0.1 answering the merge.
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
from memlane.engine.topics import dream as D
from memlane.engine.topics import extraction as X
from memlane.engine.topics.duplicates import adds_something
from memlane.engine.topics.proposals import Learning
from memlane.llm.base import LLM
from memlane.llm.factory import make_llm
from memlane.store import topics as store_topics

BEFORE = [
    ("Deploy window", "Production deploys go out Tuesday to Thursday between 09:00 and 15:00 UTC."),
    ("Friday freeze", "Deploys are frozen on Fridays."),
    ("Holiday freeze", "No production deploys between December 20 and January 3."),
    (
        "Rollback",
        "Roll back with `./ops/rollback.sh <release>`; it restores the previous image tag.",
    ),
]
MERGED = (
    "Production deploys go out Tuesday to Thursday between 09:00 and 15:00 UTC. Deploys are "
    "frozen on Fridays and from December 20 to January 3."
)
DREAM = {
    "topics": [
        {
            "slug": "deployment",
            "entries": [
                {"title": "Deploy schedule", "content": MERGED},
                {"title": "Rollback", "content": BEFORE[3][1]},
            ],
        }
    ],
    "delete": [],
    "summary": ["merged the deploy window and the freezes"],
}
EXCHANGE = Exchange(user="can I ship this today?", assistant="Not today: it is Friday.")


def proposal(topic: str, title: str, content: str) -> str:
    return json.dumps([{"topic": topic, "title": title, "content": content, "type": "project"}])


def settings() -> TopicSettings:
    return replace(TopicSettings(), enabled=True, extract_memories_enabled=True)


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(answer=json.dumps(DREAM), stream=False) as fake:
        yield fake


def llm_of(server: FakeOpenAI) -> LLM:
    llm = make_llm(LlmSettings(provider="openai", base_url=server.base_url, model="fake"))
    assert llm is not None
    return llm


def dreamed(mem: Memory, server: FakeOpenAI) -> None:
    """The deployment topic as the dream left it: one merged entry and the rollback."""
    for title, content in BEFORE:
        store_topics.add(
            mem.scope.store, content=content, topic="Deployment", title=title, today=TOPIC_DAY
        )
    mem.sync()
    plan = D.make_plan(mem, llm_of(server))
    D.apply_plan(plan, now=mem.clock.now())
    D.sync_index(mem)
    assert store_topics.read_topic(mem.scope.store, "deployment").titles == [
        "Deploy schedule",
        "Rollback",
    ]


def extract_one(mem: Memory, server: FakeOpenAI, answer: str) -> X.ExtractReport:
    server.set(answer=answer)
    return X.extract(mem, EXCHANGE, llm_of(server), settings=settings(), timeout_s=10)


@pytest.mark.parametrize("lexical", [False, True], ids=["model", "no-model"])
def test_a_fact_a_dream_merged_is_not_added_again(
    project: Path, clock: FixedClock, server: FakeOpenAI, lexical: bool
) -> None:
    mem = open_memory(project, clock=clock, lexical=lexical)
    try:
        dreamed(mem, server)
        again = extract_one(
            mem,
            server,
            proposal(
                "Release process",
                "No production deploys on Fridays",
                "Deployments to production are not allowed on Fridays.",
            ),
        )
        assert again.status == "nothing", again.to_json()
        reason = again.skipped[0]["reason"]
        assert reason.startswith("near duplicate (0.") and "Deploy schedule" in reason
        assert "release-process" not in {t.slug for t in store_topics.list_topics(mem.scope.store)}

        # New facts about the same subject are added: a rule about Friday
        # hotfixes, and a changed schedule that names a day the entry lacks.
        hotfix = extract_one(
            mem,
            server,
            proposal(
                "Deployment",
                "Friday hotfixes need approval",
                "A hotfix may go out on a Friday only with the on-call lead's approval.",
            ),
        )
        monday = extract_one(
            mem,
            server,
            proposal(
                "Deployment",
                "Monday deploys allowed",
                "Production deploys are now also allowed on Mondays between 09:00 and 15:00 UTC.",
            ),
        )
    finally:
        mem.close()
    assert hotfix.wrote and monday.wrote, (hotfix.to_json(), monday.to_json())
    assert store_topics.read_topic(mem.scope.store, "deployment").titles == [
        "Deploy schedule",
        "Rollback",
        "Friday hotfixes need approval",
        "Monday deploys allowed",
    ]


def test_entries_the_index_has_not_seen_count(
    project: Path, clock: FixedClock, server: FakeOpenAI
) -> None:
    """The comparison reads the files: an entry written behind the index's back
    (another process, a dream whose re-index failed) is a duplicate all the same."""
    mem = open_memory(project, clock=clock, lexical=False)
    try:
        mem.sync()  # an index, and then a file it knows nothing about
        store_topics.add(
            mem.scope.store,
            content="The staging host listens for SSH on port 2222, not 22.",
            topic="Debugging",
            title="Staging SSH port",
            today=TOPIC_DAY,
        )
        report = extract_one(
            mem,
            server,
            proposal("Infrastructure", "SSH to staging on 2222", "SSH into staging on port 2222."),
        )
    finally:
        mem.close()
    assert report.status == "nothing", report.to_json()
    assert "Staging SSH port" in report.skipped[0]["reason"]


def learning(content: str) -> Learning:
    return Learning("t", "t", "A title", content, "project")


@pytest.mark.parametrize(
    ("content", "entry", "added"),
    [
        # restatements: nothing the entry does not name
        ("Integration tests hit a real Postgres.", "Tests use the Postgres container.", None),
        (
            "PgBouncer drops idle links after 10 minutes; pool_recycle is 540.",
            "PgBouncer: 600 s; pool_recycle 540",
            None,
        ),
        (
            "Deploys go out Tuesday to Thursday, 9:00 to 15:00.",
            "Tuesday to Thursday, 09:00 to 15:00",
            None,
        ),
        ("Staging uses the key ~/.ssh/tern_staging.", "key at ~/.ssh/tern_staging", None),
        # a number of its own where the entry has only others, or where it says what changed
        ("pool_recycle was lowered to 280.", "pool_recycle is 540", "280"),
        ("The body limit went up from 50 MB to 200 MB.", "capped at 50 MB", "200"),
        # an identifier or a name the entry lacks (a sentence's first word is no name)
        (
            "Production goes through bastion.tern.internal only.",
            "staging via ssh",
            "bastion.tern.internal",
        ),
        ("Deploys are also allowed on Mondays.", "Tuesday to Thursday", "monday"),
        ("Errors go to Sentry.", "errors go to sentry", None),
    ],
)
def test_what_a_proposal_adds(content: str, entry: str, added: Any) -> None:
    assert adds_something(learning(content), f"Title\n{entry}") == added
