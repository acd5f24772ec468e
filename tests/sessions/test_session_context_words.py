"""The sessions index ranks by a session's context words too
(index/legs/file_context.py): a word nearly every message of a session holds
counts for each of its messages, once, so the message answering the query
in that session outranks those that only repeat the word."""

from __future__ import annotations

import pytest
from _fixtures import HashEmbedder, PiSession, Project

from helpers import FixedClock
from memlane.engine.project import Memory
from memlane.engine.sessions.layer import SessionsLayer
from memlane.index.legs import file_context

ANSWER = "oh and I went to paris yesterday for the studio opening, the light there was great"


@pytest.fixture
def history(agent_project: Project, clock: FixedClock) -> SessionsLayer:
    """Jon's session: every message names him but the answer. Other
    sessions: trips to paris nobody called jon took, and unrelated work."""
    jon = PiSession("sess-jon")
    for i in range(15):
        jon.user(f"thanks jon, see you soon jon ({i})")
        jon.assistant(f"bye jon, talk soon jon ({i})")
    jon.user(ANSWER)
    jon.write(agent_project.pi_file("jon.jsonl"))
    for s in range(4):
        other = PiSession(f"sess-work-{s}")
        for i in range(25):
            other.user(f"build {s}-{i} passed on the arm runner once the cache was warm")
            other.assistant(f"someone from the club visited paris in may, trip {s}-{i}")
        other.write(agent_project.pi_file(f"work-{s}.jsonl"))
    layer = SessionsLayer(Memory.open(agent_project.root, clock=clock), embedder=HashEmbedder())
    layer.backfill()
    return layer


def test_the_answer_in_the_names_session_comes_first(history: SessionsLayer) -> None:
    hits = history.search("jon paris", k=5, mode="lexical").hits
    assert hits[0].text == ANSWER


def test_without_the_rule_the_messages_repeating_the_name_come_first(
    history: SessionsLayer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(file_context, "CHECK_SHARE", 2.0)
    hits = history.search("jon paris", k=5, mode="lexical").hits
    assert hits and ANSWER not in [hit.text for hit in hits]
