"""Capture and extraction record a correction (engine/recall/earlier.py, issue 27).

Before it asks its LLM, a writer is shown the few earlier memories most like
the exchange under short ids; the model may answer that the new entry
replaces one of them (distillation: a ``supersedes: m1`` line; extraction:
``"supersedes": ["m1"]`` in an item). The entry then carries the old one's
``supersedes`` marker and a search ranks it first with the old one marked.
The LLM is a fake OpenAI server on 127.0.0.1; the store, the index and the
search are real.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from fake_llm import FakeOpenAI, Request
from helpers import FixedClock, open_memory, start_session, wait_for
from memlane.core.supersede import superseded_hashes, supersedes_marker
from memlane.core.types import Exchange, content_hash_of
from memlane.engine.journal.distill import build_prompt, split_supersedes
from memlane.engine.project import Memory
from memlane.engine.recall.earlier import earlier_memories
from memlane.engine.shared.earlier import Earlier, chosen, ids_in
from memlane.engine.topics import dream as D
from memlane.engine.topics import extraction as X
from memlane.store import topics as store_topics
from memlane.store.section import read_markdown

OLD_FACT = "Deploys to production go out on Tuesdays after the release review."
EXCHANGE = Exchange(
    user="which day do deploys to production go out now?",
    assistant="Deploys to production moved to Mondays; the release review is on Friday now.",
    entry_id="e1",
)
EARLIER_DAY = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)


def _daily(mem: Memory) -> str:
    return read_markdown(mem.scope.store / "2026-11-30.md")


def _old_entry(mem: Memory, *, sync: bool = True) -> str:
    """The old fact, written and found: indexed whole (``sync``), or as a
    session's fresh write found by its words, with no model loaded."""
    mem.write(f"- {OLD_FACT}", now=EARLIER_DAY)
    if sync:
        mem.sync()
    mode = "hybrid" if sync else "lexical"
    hits = mem.search("deploys production Tuesdays", 3, sync=False, mode=mode).hits
    assert hits and OLD_FACT in hits[0].content
    return hits[0].chunk_hash


def _capture(mem: Memory, server: FakeOpenAI, distilled: str) -> str:
    """One exchange captured by a session whose model answers *distilled*; the daily file."""

    def answer(request: Request) -> str:
        return distilled if "Distil this exchange" in request.prompt else "[]"

    server.responder = answer
    session = start_session(mem, server.llm())
    session.agent_settled(EXCHANGE)
    wait_for(lambda: session.capture.written == 1, what="the entry")
    assert session.shutdown().flushed
    return _daily(mem)


# --- the pieces ----------------------------------------------------------------------------


def _offered(*ids: str) -> list[Earlier]:
    return [
        Earlier(i, f"{n:016x}", f"{n + 100:016x}", None, f"fact {i}", "") for n, i in enumerate(ids)
    ]


def test_only_offered_ids_count() -> None:
    offered = _offered("m1", "m2")
    assert ids_in("m2, [m1] and M3") == ["m2", "m1", "m3"]
    assert [e.id for e in chosen(["m2", "m9", "M1", "m2"], offered)] == ["m2", "m1"]
    assert chosen(["m1"], []) == []


def test_the_supersedes_line_is_read_and_removed() -> None:
    offered = _offered("m1", "m2")
    text, hashes = split_supersedes("- deploys moved to Mondays\nsupersedes: m2, m7", offered)
    assert text == "- deploys moved to Mondays" and hashes == (offered[1].chunk_hash,)
    text, hashes = split_supersedes("- a fact\n- Supersedes: none", offered)
    assert text == "- a fact" and hashes == ()
    # A bullet that merely starts with the word is a fact, not the line.
    kept = "- replaces: the nightly cron job with a systemd timer"
    assert split_supersedes(kept, offered) == (kept, ())
    # Nothing offered: the answer is read exactly as before.
    assert split_supersedes("- a fact\nsupersedes: m1", []) == ("- a fact\nsupersedes: m1", ())


def test_the_prompt_is_unchanged_when_nothing_is_offered() -> None:
    assert build_prompt(EXCHANGE) == build_prompt(EXCHANGE, earlier=[])
    _, prompt = build_prompt(EXCHANGE, earlier=_offered("m1"))
    assert "<earlier_memories>\n[m1] (undated) fact m1\n</earlier_memories>" in prompt
    assert '"supersedes: m1"' in prompt


def test_earlier_memories_are_one_fact_entries(project: Path, clock: FixedClock) -> None:
    memory = open_memory(project, clock=clock, lexical=False)  # the bundled model
    try:
        chunk = _old_entry(memory)
        memory.write("\n".join(f"- deploy step {n}: production checklist item" for n in range(6)))
        memory.write("- user asked: which day do deploys to production go out?")
        memory.sync()
        found = memory.search(EXCHANGE.user, 8).hits
        assert len(found) == 3, [h.content for h in found]
        offered = earlier_memories(memory, EXCHANGE.user)
        # Neither the summary of six bullets nor the echo of a question is offered.
        assert [e.chunk_hash for e in offered] == [chunk]
        assert offered[0].id == "m1" and offered[0].date == "2026-11-23T09:00"
        assert offered[0].text == f"- {OLD_FACT}"
        assert earlier_memories(memory, "   ") == []
    finally:
        memory.close()


def test_offering_earlier_memories_never_loads_the_model(project: Path, clock: FixedClock) -> None:
    # A capture at a session's end runs against a shutdown budget; loading (on
    # a fresh cache: deriving) the model for this search alone outlasted it
    # on a loaded machine, and the entry was kept as a raw digest.
    memory = open_memory(project, clock=clock, lexical=False)  # the bundled model, not loaded
    try:
        chunk = _old_entry(memory, sync=False)
        offered = earlier_memories(memory, EXCHANGE.user)
        assert [e.chunk_hash for e in offered] == [chunk]
        assert not memory.embedding.ready
        assert memory.search(EXCHANGE.user, 3, sync=False).hits  # a hybrid search still loads it
        assert memory.embedding.ready
    finally:
        memory.close()


# --- capture -------------------------------------------------------------------------------


def test_a_captured_correction_outdates_the_old_entry(
    memory: Memory, fake_openai: FakeOpenAI
) -> None:
    old = _old_entry(memory)
    old_content = memory.index.get(old)
    assert old_content is not None
    text = _capture(
        memory,
        fake_openai,
        "- the user said deploys to production now go out on Mondays\nsupersedes: m1",
    )
    distil = next(r.prompt for r in fake_openai.requests if "Distil this exchange" in r.prompt)
    assert f"[m1] (2026-11-23T09:00) - {OLD_FACT}" in distil
    assert supersedes_marker(content_hash_of(old_content.content)) in text
    assert "supersedes: m1" not in text

    memory.sync()
    hits = memory.search("which day do production deploys go out", 5).hits
    assert "Mondays" in hits[0].content and hits[0].superseded_by is None
    outdated = next(h for h in hits if OLD_FACT in h.content)
    assert outdated.superseded_by == hits[0].chunk_hash


def test_an_invented_id_is_ignored(memory: Memory, fake_openai: FakeOpenAI) -> None:
    _old_entry(memory)
    text = _capture(memory, fake_openai, "- deploys now go out on Mondays\nsupersedes: m7")
    assert "- deploys now go out on Mondays" in text
    assert superseded_hashes(text) == [] and "m7" not in text


def test_an_answer_without_the_line_is_written_as_before(
    memory: Memory, fake_openai: FakeOpenAI
) -> None:
    _old_entry(memory)
    text = _capture(memory, fake_openai, "- deploys now go out on Mondays\n- asked by the user")
    entry = text.split("### 10:00", 1)[1]
    assert superseded_hashes(text) == []
    assert "- deploys now go out on Mondays\n- asked by the user" in entry


# --- extraction ----------------------------------------------------------------------------


def _topic_entry(mem: Memory) -> str:
    store_topics.add(
        mem.scope.store,
        content=OLD_FACT,
        topic="Release",
        title="Production deploys on Tuesdays",
        today=EARLIER_DAY.date(),
    )
    mem.sync()
    hits = mem.search("production deploys Tuesdays", 3, kind="topic").hits
    assert hits and OLD_FACT in hits[0].content
    return hits[0].content


def _extract(mem: Memory, *, offered: bool = True, **item: object) -> X.ExtractReport:
    """Extraction of one learning; *offered*: the old entry is shown as m1."""
    learning = {
        "topic": "release.md",
        "title": "Production deploys moved to Mondays",
        "content": "Deploys to production go out on Mondays; the release review is on Friday.",
        "type": "project",
        **item,
    }
    with FakeOpenAI(answer=json.dumps([learning])) as server:
        report = X.extract(mem, EXCHANGE, server.llm(), settings=X.TopicSettings(), timeout_s=5)
        prompt = server.requests[0].prompt
    if offered:
        assert "<earlier_memories>\n[m1] (2026-11-23) Production deploys on Tuesdays" in prompt
    return report


def test_an_extracted_correction_outdates_the_old_topic_entry(memory: Memory) -> None:
    old = _topic_entry(memory)
    report = _extract(memory, supersedes=["m1"])
    assert report.status == "written", report.to_json()
    assert report.written[0]["supersedes"]
    parsed = store_topics.read_topic(memory.scope.store, "release")
    assert parsed.titles == [
        "Production deploys on Tuesdays",
        "Production deploys moved to Mondays",
    ]
    assert parsed.entries[1].body.endswith(supersedes_marker(content_hash_of(old)))

    memory.sync()
    hits = memory.search("which day do production deploys go out", 5, kind="topic").hits
    assert "Mondays" in hits[0].content and hits[0].superseded_by is None
    outdated = next(h for h in hits if OLD_FACT in h.content)
    assert outdated.superseded_by == hits[0].chunk_hash


def test_extraction_ignores_an_invented_id_and_old_answers(memory: Memory) -> None:
    _topic_entry(memory)
    # An id it was not offered marks nothing outdated. The learning itself names
    # days the old entry does not (Mondays, Friday): a changed fact is new, and
    # is added as it is (recall ranks it first, as it says what moved).
    invented = _extract(memory, supersedes=["m4", 7])
    assert invented.status == "written", invented.to_json()
    assert "supersedes" not in invented.written[0]
    # The old fact again, in other words, adds nothing.
    again = _extract(
        memory,
        offered=False,  # the new entry may come first now
        title="Tuesday deploys",
        content="Production deploys happen on Tuesdays, after the release review.",
    ).to_json()
    assert again["status"] == "nothing" and "near duplicate" in again["skipped"][0]["reason"]

    report = _extract(
        memory,
        offered=False,
        title="Staging rebuilt nightly",
        content="Staging is rebuilt from main every night at 02:00 UTC.",
    )
    assert report.status == "written" and "supersedes" not in report.written[0]
    parsed = store_topics.read_topic(memory.scope.store, "release")
    assert parsed.titles == [
        "Production deploys on Tuesdays",
        "Production deploys moved to Mondays",
        "Staging rebuilt nightly",
    ]
    assert superseded_hashes(parsed.render()) == []


# --- dream ---------------------------------------------------------------------------------


def test_a_dream_is_pointed_at_the_entry_a_correction_replaces(memory: Memory) -> None:
    _topic_entry(memory)
    assert _extract(memory, supersedes=["m1"]).status == "written"
    orientation = D.orient(memory.scope.store)
    signals = D.gather(orientation)
    outdated = [s for s in signals if s.kind == "outdated"]
    assert [(s.a, s.b) for s in outdated] == [
        (
            ("release", "Production deploys on Tuesdays"),
            ("release", "Production deploys moved to Mondays"),
        )
    ]
    assert D.Signal.from_json(outdated[0].to_json()) == outdated[0]
    _, prompt, _ = D.build_prompt(orientation, signals, today=EARLIER_DAY.date())
    assert (
        "- outdated: [release] 'Production deploys on Tuesdays' and "
        "[release] 'Production deploys moved to Mondays' (the second says it replaces"
    ) in prompt
