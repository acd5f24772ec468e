"""memory_compact: an LLM summary of the store, appended as a Memory Compact block.

The LLM is memlane's OpenAI provider talking to a fake server on 127.0.0.1
(``fake_openai``); what it was asked is in ``server.requests``.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from pathlib import Path

import pytest

from fake_llm import FakeOpenAI
from helpers import NOW, TOPIC_DAY
from memlane.core.errors import ConfigError, LlmError, NotFoundError, StoreError
from memlane.core.settings import LlmSettings
from memlane.engine.journal.maintenance import (
    COMPACT_HEADING,
    NOTHING_TO_COMPACT,
    compact,
    forget,
    sanitise_summary,
)
from memlane.engine.project import Memory
from memlane.llm.base import DEFAULT_MAX_TOKENS
from memlane.llm.factory import make_llm

DAY = TOPIC_DAY.isoformat()  # the memory's clock is at helpers.NOW
COMPACTED_AT = NOW.strftime("%H:%M")


def at(hhmm: str) -> datetime:
    """*hhmm* earlier on the day of ``NOW``."""
    hour, minute = map(int, hhmm.split(":"))
    return NOW.replace(hour=hour, minute=minute)


def test_refuses_a_store_not_named_memory_before_any_llm_call(
    memory: Memory, tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    notes = tmp_path / "store-root" / "proj"
    mem = Memory(dataclasses.replace(memory.scope, store=notes), memory.config)
    with pytest.raises(StoreError) as info:
        compact(mem, fake_openai.llm())
    assert str(notes) in info.value.message and "'proj'" in info.value.message
    assert fake_openai.requests == []
    # Nothing was probed: no index file was even created for it.
    assert not mem.internals.index_path.exists()
    assert not notes.exists()


def test_no_llm_names_the_setting(memory: Memory) -> None:
    memory.write("something worth keeping", now=at("09:00"))
    with pytest.raises(ConfigError) as info:
        compact(memory, None)
    assert "llm.provider" in (info.value.hint or "")
    assert "[llm]" in (info.value.hint or "")


def test_nothing_to_compact(memory: Memory, fake_openai: FakeOpenAI) -> None:
    llm = fake_openai.llm()
    assert compact(memory, llm) == NOTHING_TO_COMPACT
    assert fake_openai.requests == []
    assert not (memory.scope.store / f"{DAY}.md").exists()
    # A source that exists but has no chunks: nothing to compact either.
    memory.write("real content", now=at("09:00"))
    empty = memory.scope.store / "2026-03-01.md"
    empty.write_text("# 2026-03-01\n")
    assert compact(memory, llm, source="2026-03-01.md") == NOTHING_TO_COMPACT
    assert fake_openai.requests == []
    with pytest.raises(NotFoundError, match="no memory file"):
        compact(memory, llm, source="1999-01-01.md")


def test_block_is_appended_returned_whole_and_searchable(
    memory: Memory, fake_openai: FakeOpenAI
) -> None:
    summary = "### Decisions\n- the hot cache moved to Redis with 5 minute TTLs\n- quokkas are fed"
    fake_openai.answer(summary)
    memory.write("moved the hot cache to Redis with 5 minute TTLs", now=at("09:00"))
    memory.write("fed the quokkas", now=at("09:05"))
    path = memory.scope.store / f"{DAY}.md"
    before = path.read_text()
    result = compact(memory, fake_openai.llm())
    assert result == summary
    assert len(fake_openai.requests) == 1
    request = fake_openai.requests[0]
    assert "long-term memory" in request.system
    assert "moved the hot cache" in request.prompt and "fed the quokkas" in request.prompt
    assert "<!--" not in request.prompt  # anchors are not sent
    assert request.body["max_tokens"] > DEFAULT_MAX_TOKENS
    text = path.read_text()
    assert text == before + f"\n{COMPACT_HEADING} {COMPACTED_AT}\n{summary}\n"
    # Indexed at once: found without a catch-up sync.
    hits = memory.search("quokkas fed", sync=False).hits
    assert any(h.heading == "Decisions" and "quokkas" in h.content for h in hits)
    # A later entry of the same session is not part of the block...
    memory.write("an entry after the compaction", now=at("16:31"))
    block_hash = next(h.chunk_hash for h in hits if h.heading == "Decisions")
    removed = forget(memory, chunk_hash=block_hash)
    assert removed.kind == "compact"
    assert "an entry after the compaction" not in removed.markdown
    assert "an entry after the compaction" in path.read_text()


def test_new_daily_file_gets_its_title_once(memory: Memory, fake_openai: FakeOpenAI) -> None:
    memory.write("yesterday's work", now=datetime(2026, 11, 29, 9, 0))
    fake_openai.answer("- yesterday's work was done")
    compact(memory, fake_openai.llm())
    text = (memory.scope.store / f"{DAY}.md").read_text()
    assert text == f"# {DAY}\n\n{COMPACT_HEADING} {COMPACTED_AT}\n- yesterday's work was done\n"


def test_one_source_only(memory: Memory, fake_openai: FakeOpenAI) -> None:
    memory.write("monday fact", now=datetime(2026, 3, 9, 9, 0))
    memory.write("tuesday fact", now=datetime(2026, 3, 10, 9, 0))
    compact(memory, fake_openai.llm(), source="2026-03-10.md")
    (request,) = fake_openai.requests
    assert "tuesday fact" in request.prompt and "monday fact" not in request.prompt


def test_map_reduce_over_a_store_larger_than_the_budget(
    memory: Memory, fake_openai: FakeOpenAI
) -> None:
    fake_openai.set(answer="- condensed")
    budget = 2000
    for n in range(60):
        # ~250 characters per entry: about 8 entries per batch.
        memory.write(f"fact {n:02d}: " + "the build pipeline detail " * 9, now=at("09:00"))
    result = compact(memory, fake_openai.llm(), budget_chars=budget)
    prompts = fake_openai.prompts
    maps = [p for p in prompts if "Condense these memory entries" in p]
    reduces = [p for p in prompts if "partial summaries" in p]
    assert len(maps) >= 6
    assert reduces, "partial summaries were merged"
    assert len(prompts) == len(maps) + len(reduces)
    for prompt in prompts:
        assert len(prompt) <= budget + 400  # the batch plus the prompt's own words
    # Every entry went into exactly one map call.
    sent = "".join(maps)
    for n in range(60):
        assert sent.count(f"fact {n:02d}:") == 1
    assert result == "- condensed"


def test_reduce_shrinks_even_when_partials_are_long(
    memory: Memory, fake_openai: FakeOpenAI
) -> None:
    # Each map answer is nearly the budget: the reduce still pairs them up
    # (clipped) instead of looping forever.
    fake_openai.set(answer="- " + "x" * 1900)
    for n in range(20):
        memory.write(f"entry {n} " + "words " * 60, now=at("09:00"))
    result = compact(memory, fake_openai.llm(), budget_chars=1000)
    assert result.startswith("- x")
    assert 1 < len(fake_openai.requests) < 60


def test_llm_failure_writes_nothing(memory: Memory, fake_openai: FakeOpenAI) -> None:
    memory.write("a fact", now=at("09:00"))
    path = memory.scope.store / f"{DAY}.md"
    before = path.read_text()
    fake_openai.push(status=429, error_message="rate limited")
    with pytest.raises(LlmError, match="429"):
        compact(memory, fake_openai.llm())
    assert path.read_text() == before
    # An answer that is nothing once sanitised (a bare code fence) is no summary.
    fake_openai.answer("```markdown\n```")
    with pytest.raises(LlmError, match="empty summary"):
        compact(memory, fake_openai.llm())
    assert path.read_text() == before
    assert len(fake_openai.requests) == 2


def test_summary_cannot_break_the_block() -> None:
    raw = (
        "```markdown\n# Title\n## Section\n### 09:05\n- fact <!-- hidden -->\n"
        "- session:x -->\n\n\n- next\n```"
    )
    clean = sanitise_summary(raw)
    assert "```" not in clean
    assert "\n# " not in clean and "## Section" not in clean.replace("### Section", "")
    assert "### at 09:05" in clean
    assert "<!--" not in clean and "-->" not in clean
    assert "\n\n\n" not in clean


def test_through_make_llm_and_a_real_fake_openai_server(
    memory: Memory, fake_openai: FakeOpenAI
) -> None:
    fake_openai.set(answer="- the team standardised on uv for packaging")
    settings = LlmSettings(provider="openai", base_url=fake_openai.base_url, model="fake-model")
    llm = make_llm(settings, purpose="compact")
    assert llm is not None
    memory.write("we switched the project from poetry to uv", now=at("09:00"))
    result = compact(memory, llm)
    assert result == "- the team standardised on uv for packaging"
    assert len(fake_openai.requests) == 1
    body = fake_openai.requests[0].body
    assert body["model"] == "fake-model"
    assert "poetry to uv" in body["messages"][-1]["content"]
    hits = memory.search("standardised packaging", sync=False).hits
    assert hits and hits[0].heading == f"Memory Compact {COMPACTED_AT}"


def test_hand_written_secrets_never_reach_the_llm(memory: Memory, fake_openai: FakeOpenAI) -> None:
    """Text edited into the files by hand is redacted before compaction sends it out."""
    store = memory.scope.store
    store.mkdir(parents=True)
    key = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY"
    (store / "2026-01-05.md").write_text(
        f"# 2026-01-05\n\n### 10:00\n- deploy uses AWS_SECRET_ACCESS_KEY={key} for now\n"
    )
    memory.sync()
    fake_openai.set(answer="- deployment credentials were discussed")
    compact(memory, fake_openai.llm())
    sent = [request.system + request.prompt for request in fake_openai.requests]
    assert sent and all(key not in text for text in sent)
    assert any("AWS_SECRET_ACCESS_KEY=" in text for text in sent)  # the line itself was sent
