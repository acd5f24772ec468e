"""memory_compact: an LLM summary of the store, appended as a Memory Compact block."""

from __future__ import annotations

import dataclasses
from datetime import datetime
from pathlib import Path

import pytest

from fake_llm import FakeOpenAI
from helpers import FixedClock
from memlane.core.errors import ConfigError, LlmError, NotFoundError, StoreError
from memlane.core.settings import LlmSettings
from memlane.engine.maintenance import (
    COMPACT_HEADING,
    NOTHING_TO_COMPACT,
    compact,
    forget,
    sanitise_summary,
)
from memlane.engine.memory import Memory
from memlane.llm.base import DEFAULT_MAX_TOKENS, LLM
from memlane.llm.factory import make_llm

NOW = datetime(2026, 3, 14, 16, 30)
DAY = "2026-03-14"


class RecordingLLM:
    """Implements the ``LLM`` protocol; records every call, answers from a list."""

    def __init__(self, answers: list[str] | None = None, default: str = "- a summary") -> None:
        self.calls: list[tuple[str, str, int]] = []
        self.answers = list(answers or [])
        self.default = default

    @property
    def name(self) -> str:
        return "fake/recording"

    def complete(
        self,
        system: str,
        prompt: str,
        *,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        timeout_s: float | None = None,
    ) -> str:
        self.calls.append((system, prompt, max_tokens))
        return self.answers.pop(0) if self.answers else self.default


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MEMLANE_EMBEDDING_PROVIDER", "none")
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    return root


def at(hhmm: str) -> datetime:
    hour, minute = map(int, hhmm.split(":"))
    return datetime(2026, 3, 14, hour, minute)


def test_recording_llm_implements_the_protocol() -> None:
    assert isinstance(RecordingLLM(), LLM)


def test_refuses_a_store_not_named_memory_before_any_llm_call(
    project: Path, tmp_path: Path
) -> None:
    llm = RecordingLLM()
    with Memory.open(project, clock=FixedClock(NOW)) as opened:
        notes = tmp_path / "store-root" / "proj"
        mem = Memory(dataclasses.replace(opened.scope, store=notes), opened.config)
        with pytest.raises(StoreError) as info:
            compact(mem, llm)
        assert str(notes) in info.value.message and "'proj'" in info.value.message
        assert llm.calls == []
        # Nothing was probed: no index file was even opened for it.
        assert mem._index is None
        assert not mem.index_path.exists()
        assert not notes.exists()


def test_no_llm_names_the_setting(project: Path) -> None:
    with Memory.open(project, clock=FixedClock(NOW)) as mem:
        mem.write("something worth keeping", now=at("09:00"))
        with pytest.raises(ConfigError) as info:
            compact(mem, None)
        assert "llm.provider" in (info.value.hint or "")
        assert "[llm]" in (info.value.hint or "")


def test_nothing_to_compact(project: Path) -> None:
    llm = RecordingLLM()
    with Memory.open(project, clock=FixedClock(NOW)) as mem:
        assert compact(mem, llm) == NOTHING_TO_COMPACT
        assert llm.calls == []
        assert not (mem.scope.store / f"{DAY}.md").exists()
        # A source that exists but has no chunks: nothing to compact either.
        mem.write("real content", now=at("09:00"))
        empty = mem.scope.store / "2026-03-01.md"
        empty.write_text("# 2026-03-01\n")
        assert compact(mem, llm, source="2026-03-01.md") == NOTHING_TO_COMPACT
        assert llm.calls == []
        with pytest.raises(NotFoundError, match="no memory file"):
            compact(mem, llm, source="1999-01-01.md")


def test_block_is_appended_returned_whole_and_searchable(project: Path) -> None:
    summary = "### Decisions\n- the hot cache moved to Redis with 5 minute TTLs\n- quokkas are fed"
    llm = RecordingLLM([summary])
    with Memory.open(project, clock=FixedClock(NOW)) as mem:
        mem.write("moved the hot cache to Redis with 5 minute TTLs", now=at("09:00"))
        mem.write("fed the quokkas", now=at("09:05"))
        path = mem.scope.store / f"{DAY}.md"
        before = path.read_text()
        result = compact(mem, llm)
        assert result == summary
        assert len(llm.calls) == 1
        system, prompt, max_tokens = llm.calls[0]
        assert "long-term memory" in system
        assert "moved the hot cache" in prompt and "fed the quokkas" in prompt
        assert "<!--" not in prompt  # anchors are not sent
        assert max_tokens > DEFAULT_MAX_TOKENS
        text = path.read_text()
        assert text == before + f"\n{COMPACT_HEADING} 16:30\n{summary}\n"
        # Indexed at once: found without a catch-up sync.
        hits = mem.search("quokkas fed", sync=False).hits
        assert any(h.heading == "Decisions" and "quokkas" in h.content for h in hits)
        # A later entry of the same session is not part of the block...
        mem.write("an entry after the compaction", now=at("16:31"))
        block_hash = next(h.chunk_hash for h in hits if h.heading == "Decisions")
        removed = forget(mem, chunk_hash=block_hash)
        assert removed.kind == "compact"
        assert "an entry after the compaction" not in removed.markdown
        assert "an entry after the compaction" in path.read_text()


def test_new_daily_file_gets_its_title_once(project: Path) -> None:
    with Memory.open(project, clock=FixedClock(NOW)) as mem:
        mem.write("yesterday's work", now=datetime(2026, 3, 13, 9, 0))
        compact(mem, RecordingLLM(["- yesterday's work was done"]))
        text = (mem.scope.store / f"{DAY}.md").read_text()
        assert text == f"# {DAY}\n\n{COMPACT_HEADING} 16:30\n- yesterday's work was done\n"


def test_one_source_only(project: Path) -> None:
    llm = RecordingLLM()
    with Memory.open(project, clock=FixedClock(NOW)) as mem:
        mem.write("monday fact", now=datetime(2026, 3, 9, 9, 0))
        mem.write("tuesday fact", now=datetime(2026, 3, 10, 9, 0))
        compact(mem, llm, source="2026-03-10.md")
        _, prompt, _ = llm.calls[0]
        assert "tuesday fact" in prompt and "monday fact" not in prompt


def test_map_reduce_over_a_store_larger_than_the_budget(project: Path) -> None:
    llm = RecordingLLM(default="- condensed")
    budget = 2000
    with Memory.open(project, clock=FixedClock(NOW)) as mem:
        for n in range(60):
            # ~250 characters per entry: about 8 entries per batch.
            mem.write(f"fact {n:02d}: " + "the build pipeline detail " * 9, now=at("09:00"))
        result = compact(mem, llm, budget_chars=budget)
        maps = [c for c in llm.calls if "Condense these memory entries" in c[1]]
        reduces = [c for c in llm.calls if "partial summaries" in c[1]]
        assert len(maps) >= 6
        assert reduces, "partial summaries were merged"
        assert len(llm.calls) == len(maps) + len(reduces)
        for _, prompt, _ in llm.calls:
            assert len(prompt) <= budget + 400  # the batch plus the prompt's own words
        # Every entry went into exactly one map call.
        sent = "".join(c[1] for c in maps)
        for n in range(60):
            assert sent.count(f"fact {n:02d}:") == 1
        assert result == "- condensed"


def test_reduce_shrinks_even_when_partials_are_long(project: Path) -> None:
    # Each map answer is nearly the budget: the reduce still pairs them up
    # (clipped) instead of looping forever.
    long = "- " + "x" * 1900
    llm = RecordingLLM(default=long)
    with Memory.open(project, clock=FixedClock(NOW)) as mem:
        for n in range(20):
            mem.write(f"entry {n} " + "words " * 60, now=at("09:00"))
        result = compact(mem, llm, budget_chars=1000)
        assert result.startswith("- x")
        assert len(llm.calls) < 60


def test_llm_failure_writes_nothing(project: Path) -> None:
    class Failing(RecordingLLM):
        def complete(self, system: str, prompt: str, **kwargs: object) -> str:
            raise LlmError("HTTP 429 from http://fake")

    with Memory.open(project, clock=FixedClock(NOW)) as mem:
        mem.write("a fact", now=at("09:00"))
        path = mem.scope.store / f"{DAY}.md"
        before = path.read_text()
        with pytest.raises(LlmError, match="429"):
            compact(mem, Failing())
        assert path.read_text() == before
        with pytest.raises(LlmError, match="empty summary"):
            compact(mem, RecordingLLM(["   \n"]))
        assert path.read_text() == before


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


def test_through_make_llm_and_a_real_fake_openai_server(project: Path) -> None:
    with FakeOpenAI(answer="- the team standardised on uv for packaging") as server:
        settings = LlmSettings(provider="openai", base_url=server.base_url, model="fake-model")
        llm = make_llm(settings, purpose="compact")
        assert llm is not None
        with Memory.open(project, clock=FixedClock(NOW)) as mem:
            mem.write("we switched the project from poetry to uv", now=at("09:00"))
            result = compact(mem, llm)
            assert result == "- the team standardised on uv for packaging"
            assert len(server.requests) == 1
            body = server.requests[0].body
            assert body["model"] == "fake-model"
            assert "poetry to uv" in body["messages"][-1]["content"]
            hits = mem.search("standardised packaging", sync=False).hits
            assert hits and hits[0].heading == "Memory Compact 16:30"


def test_hand_written_secrets_never_reach_the_llm(tmp_path: Path) -> None:
    """Text edited into the files by hand is redacted before compaction sends it out."""
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    mem = Memory.open(project, clock=FixedClock(NOW))
    store = mem.scope.store
    store.mkdir(parents=True)
    key = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY"
    (store / "2026-01-05.md").write_text(
        f"# 2026-01-05\n\n### 10:00\n- deploy uses AWS_SECRET_ACCESS_KEY={key} for now\n"
    )
    mem.sync()
    seen: list[str] = []

    class Recording:
        name = "recording/test"

        def complete(
            self, system: str, prompt: str, *, max_tokens: int = 800, timeout_s: float | None = None
        ) -> str:
            seen.append(prompt)
            return "- deployment credentials were discussed"

    compact(mem, Recording())
    assert seen and all(key not in p for p in seen)
