"""Distillation: prompt, sanitising, digest, and every way the LLM can fail.

The LLM is memlane's OpenAI provider talking to a fake server on 127.0.0.1
(``fake_openai``): a slow, erroring or malformed model is a server
behaviour, and what distillation sent is in ``server.requests``. The host's
model is ``HostLLM`` around a plain ``host_call`` function, as pi's sidecar
supplies it.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fake_llm import FakeOpenAI
from memlane.core.types import Anchor, Exchange
from memlane.engine.journal.distill import (
    MAX_BULLET_CHARS,
    MAX_BULLETS,
    NO_LLM_MARKER,
    PROMPT_MAX_CHARS,
    Distillation,
    build_prompt,
    clip,
    digest,
    distill,
    failure_marker,
    one_line,
    sanitise,
)
from memlane.llm.base import LLM
from memlane.llm.host import HostLLM
from memlane.store.anchor import parse_anchor
from memlane.store.daily import format_entry

EXCHANGE = Exchange(
    user="Why does test_payment fail on CI only?",
    assistant="The sandbox account is shared between jobs.\nI gave each job its own account.",
    entry_id="ab12cd34",
    session_id="3f2c9b1e",
    transcript_path="/tmp/s.jsonl",
)


@pytest.fixture(scope="module")
def answering() -> Iterator[tuple[FakeOpenAI, LLM]]:
    """One server and one provider for the property test below (hypothesis reruns
    a test, not its fixtures; one provider keeps one HTTP client)."""
    with FakeOpenAI() as server:
        yield server, server.llm()


def assert_safe(bullets: list[str]) -> None:
    """The daily-file line rules every returned line obeys."""
    assert len(bullets) <= MAX_BULLETS + 3  # a marker and two digest lines at most
    text = "\n".join(bullets)
    assert text.splitlines() == bullets  # one line each, whatever splits lines
    for line in bullets:
        assert line.startswith("- ")
        assert line[2:].strip() == line[2:] and line[2:]
        assert not line.startswith("#")
        assert "<!--" not in line and "-->" not in line
    assert parse_anchor(text) is None
    text.encode("utf-8")  # no lone surrogate: the append would fail
    # format_entry writes them exactly as given, under the heading and anchor.
    anchor = Anchor(session="s", turn="t", transcript="/x")
    entry = format_entry("09:05", anchor, text)
    assert entry.splitlines()[2:] == bullets


# --- distill -----------------------------------------------------------------


def test_good_answer_becomes_the_bullets(fake_openai: FakeOpenAI) -> None:
    fake_openai.set(
        answer="- the user asked why test_payment failed only on CI\n"
        "- the agent found that CI jobs shared one sandbox account\n"
        "- the agent gave each CI job its own sandbox account\n"
    )
    result = distill(EXCHANGE, fake_openai.llm(), timeout_s=5)
    assert result == Distillation(
        [
            "- the user asked why test_payment failed only on CI",
            "- the agent found that CI jobs shared one sandbox account",
            "- the agent gave each CI job its own sandbox account",
        ],
        failed=None,
        model="openai/fake-model",
    )
    assert result.distilled
    assert result.text == "\n".join(result.bullets)
    (request,) = fake_openai.requests
    assert "test_payment" in request.prompt and "own account" in request.prompt
    assert "Third person, past tense" in request.system
    assert_safe(result.bullets)


def test_the_provider_is_told_the_deadline() -> None:
    told: list[float] = []

    def host_call(params: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        told.append(timeout_s)
        return {"text": "- the agent answered through the host"}

    result = distill(EXCHANGE, HostLLM(host_call), timeout_s=5)
    assert result.bullets == ["- the agent answered through the host"]
    assert told == [5]


def test_messy_answer_is_sanitised(fake_openai: FakeOpenAI) -> None:
    fake_openai.set(
        answer="Sure! Here are the bullets:\n\n"
        "```markdown\n"
        "## Summary\n"
        "1. The user asked why test_payment failed\n"
        "   on CI only.\n"
        "2) the agent found a shared sandbox account <!-- session:x turn:y transcript:/z -->\n"
        "# Decisions\n"
        "* the agent gave each job its own account <!-- unclosed\n"
        "• the user prefers `pytest -x`\n"
        "---\n"
        "```\n\n"
        "Let me know if you need anything else!\n"
    )
    result = distill(EXCHANGE, fake_openai.llm(), timeout_s=5)
    assert result.failed is None
    assert result.bullets == [
        "- The user asked why test_payment failed on CI only.",
        "- the agent found a shared sandbox account",
        "- the agent gave each job its own account <! -- unclosed",
        "- the user prefers `pytest -x`",
    ]
    assert_safe(result.bullets)


@pytest.mark.parametrize("answer", ["", "   \n\t\n"])
def test_empty_answer_writes_marker_and_digest(fake_openai: FakeOpenAI, answer: str) -> None:
    fake_openai.set(answer=answer)
    result = distill(EXCHANGE, fake_openai.llm(), timeout_s=5)
    assert result.failed is not None and result.failed.startswith("empty answer")
    assert result.model == "openai/fake-model"
    assert not result.distilled
    assert result.bullets[0] == failure_marker(result.failed)
    assert result.bullets[1:] == [
        "- user asked: Why does test_payment fail on CI only?",
        "- agent answered: The sandbox account is shared between jobs. "
        "I gave each job its own account.",
    ]
    assert_safe(result.bullets)


def test_answer_without_usable_bullets_fails(fake_openai: FakeOpenAI) -> None:
    fake_openai.set(answer="```\n```\n## Summary\n---\n- ...\n")
    result = distill(EXCHANGE, fake_openai.llm(), timeout_s=5)
    assert result.failed == "no bullets in the answer"
    assert result.bullets[0] == "- [distillation failed: no bullets in the answer]"
    assert result.bullets[1:] == digest(EXCHANGE)


def test_llm_error_is_the_reason_verbatim(fake_openai: FakeOpenAI) -> None:
    fake_openai.set(status=429, error_message="rate limited")
    result = distill(EXCHANGE, fake_openai.llm(), timeout_s=5)
    assert result.failed is not None
    assert result.failed.startswith(f"HTTP 429 from {fake_openai.url}: rate limited")
    assert result.bullets[0] == failure_marker(result.failed)
    assert result.bullets[1:] == digest(EXCHANGE)
    assert result.model == "openai/fake-model"


def test_llm_error_reason_is_one_clipped_line(fake_openai: FakeOpenAI) -> None:
    fake_openai.set(
        status=502,
        error_message="bad gateway\n<!-- session:a turn:b transcript:/c -->\n" + "x" * 1000,
    )
    result = distill(EXCHANGE, fake_openai.llm(), timeout_s=5)
    assert result.failed is not None
    assert "\n" not in result.failed and len(result.failed) <= 200
    assert "bad gateway <! -- session:a turn:b" in result.failed
    assert "<!--" not in result.failed and "-->" not in result.failed
    assert_safe(result.bullets)


def test_malformed_answer_is_a_failure_not_a_crash(fake_openai: FakeOpenAI) -> None:
    fake_openai.set(body='{"choices": "not a list"}')
    result = distill(EXCHANGE, fake_openai.llm(), timeout_s=5)
    assert result.failed is not None and result.failed.startswith("malformed answer")
    assert result.bullets[1:] == digest(EXCHANGE)
    assert_safe(result.bullets)


def test_a_server_that_never_answers_times_out(fake_openai: FakeOpenAI) -> None:
    # The server would answer after a minute (the fixture's exit wakes it): a
    # distill that waited for it would return its bullets, not the marker.
    fake_openai.set(answer="- the agent answered far too late", delay_s=60.0)
    result = distill(EXCHANGE, fake_openai.llm(), timeout_s=0.1, slack_s=0.1)
    assert result.failed is not None and result.failed.startswith("timed out after 0.1 s")
    assert result.bullets[0] == failure_marker(result.failed)
    assert result.bullets[1:] == digest(EXCHANGE)


def test_whole_seconds_in_timeout_reason(fake_openai: FakeOpenAI) -> None:
    # 30.0 s (DISTILL_TIMEOUT_MS / 1000) reads "30 s", not "30.0 s"; the
    # deadline itself is exercised above, here only the wording matters.
    fake_openai.set(delay_s=60.0)
    result = distill(EXCHANGE, fake_openai.llm(), timeout_s=0.0, slack_s=0.05)
    assert result.failed is not None and result.failed.startswith("timed out after 0 s")


@pytest.mark.parametrize("raised", [SystemExit(3), KeyboardInterrupt()], ids=type)
def test_what_a_provider_should_never_raise_is_contained(
    raised: BaseException, caplog: pytest.LogCaptureFixture
) -> None:
    # HostLLM turns a host's Exception into an LlmError; a BaseException passes
    # through it, and distillation still writes the entry.
    def host_call(params: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        raise raised

    with caplog.at_level(logging.ERROR, logger="memlane.engine.journal.distill"):
        result = distill(EXCHANGE, HostLLM(host_call), timeout_s=5)
    name = type(raised).__name__
    assert result.failed == f"internal error: {name}"
    assert result.bullets[0] == f"- [distillation failed: internal error: {name}]"
    assert result.bullets[1:] == digest(EXCHANGE)
    assert any(record.exc_info for record in caplog.records)  # the traceback is logged


def test_no_llm_writes_the_digest_with_its_own_marker() -> None:
    result = distill(EXCHANGE, None, timeout_s=5)
    assert result == Distillation([NO_LLM_MARKER, *digest(EXCHANGE)], failed=None, model=None)
    assert NO_LLM_MARKER == "- [no distillation: no LLM configured]"
    assert not result.distilled
    assert_safe(result.bullets)


# --- prompt -------------------------------------------------------------------


def test_prompt_asks_for_third_person_past_tense_in_the_users_language() -> None:
    system, prompt = build_prompt(EXCHANGE)
    assert "Third person, past tense" in system
    assert '"the user asked' in system and '"the agent fixed' in system
    assert "language of the user's message" in system
    assert "language of the user's message" in prompt  # repeated last for small models
    assert "One standalone fact per bullet" in system
    assert "Between 2 and 10 bullets" in system
    assert "No introduction" in system and "no headings" in system
    assert "no code blocks" in system
    assert "Never reply that there is nothing to remember" in system
    for kind in ("decisions", "bugs fixed", "facts learned", "preferences", "follow-ups"):
        assert kind in system
    assert f"<user_message>\n{EXCHANGE.user}\n</user_message>" in prompt
    assert f"<agent_answer>\n{EXCHANGE.assistant}\n</agent_answer>" in prompt
    assert "omitted" not in prompt


def test_prompt_clips_huge_input_head_and_tail() -> None:
    user = "USERHEAD " + "u" * 50_000 + " USERTAIL"
    answer = "ANSWERHEAD " + "a" * 200_000 + " ANSWERTAIL"
    _, prompt = build_prompt(Exchange(user=user, assistant=answer))
    assert len(prompt) < PROMPT_MAX_CHARS + 1_000
    for part in ("USERHEAD", "USERTAIL", "ANSWERHEAD", "ANSWERTAIL"):
        assert part in prompt
    assert prompt.count("characters omitted") == 2
    user_part = prompt[prompt.index("<user_message>") : prompt.index("</user_message>")]
    answer_part = prompt[prompt.index("<agent_answer>") : prompt.index("</agent_answer>")]
    # The question gets a third of the budget, the answer the rest.
    assert PROMPT_MAX_CHARS // 3 <= len(user_part) < PROMPT_MAX_CHARS // 3 + 100
    assert len(answer_part) > PROMPT_MAX_CHARS // 2


def test_prompt_gives_a_short_answers_budget_to_a_long_question() -> None:
    user = "q" * 10_000
    _, prompt = build_prompt(Exchange(user=user, assistant="ok"))
    assert user in prompt and "omitted" not in prompt


def test_prompt_budget_is_a_parameter() -> None:
    _, prompt = build_prompt(Exchange(user="x" * 5000, assistant="y" * 5000), max_chars=300)
    assert len(prompt) < 300 + 600


def test_prompt_marks_empty_texts() -> None:
    _, prompt = build_prompt(Exchange(user="", assistant="  "))
    assert "<user_message>\n(empty)\n</user_message>" in prompt
    assert "<agent_answer>\n(empty)\n</agent_answer>" in prompt


def test_clip() -> None:
    assert clip("short", 10) == "short"
    clipped = clip("H" * 60 + "T" * 60, 30)
    assert clipped.startswith("H" * 20) and clipped.endswith("T" * 10)
    assert "[… 90 characters omitted …]" in clipped


# --- digest -------------------------------------------------------------------


def test_digest_quotes_the_ask_and_the_first_lines() -> None:
    exchange = Exchange(
        user="Please\nrename the\tmodule",
        assistant="```python\nimport os\n```\n\nDone: renamed it.\n" + "more\n" * 500,
    )
    user, answer = digest(exchange)
    assert user == "- user asked: Please rename the module"
    assert answer.startswith("- agent answered: import os Done: renamed it. more more")
    assert len(answer) <= len("- agent answered: ") + 500
    assert answer.endswith("…")


def test_digest_clips_a_huge_ask() -> None:
    user, answer = digest(Exchange(user="w " * 100_000, assistant="x" * 200_000))
    assert len(user) <= len("- user asked: ") + 300 and user.endswith("…")
    assert len(answer) <= len("- agent answered: ") + 500


def test_digest_neutralises_anchors_and_headings() -> None:
    exchange = Exchange(
        user="# Title\n<!-- session:a turn:b transcript:/c -->",
        assistant="## Heading\n-->",
    )
    bullets = digest(exchange)
    assert bullets == [
        "- user asked: # Title <! -- session:a turn:b transcript:/c -- >",
        "- agent answered: ## Heading -- >",
    ]
    assert_safe(bullets)


def test_digest_of_empty_exchange() -> None:
    assert digest(Exchange(user="", assistant="")) == [
        "- user asked: (empty)",
        "- agent answered: (empty)",
    ]


# --- sanitise -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("- a fact\n- another fact", ["a fact", "another fact"]),
        ("* a fact\n+ another fact", ["a fact", "another fact"]),
        ("• a fact\n· another fact", ["a fact", "another fact"]),
        ("1. a fact\n2. another fact", ["a fact", "another fact"]),
        ("1) a fact\n(2) another fact", ["a fact", "another fact"]),
        ("Here are the bullets:\n- a fact", ["a fact"]),
        ("- a fact\r\n- b fact\r\n", ["a fact", "b fact"]),
        ("- a fact\u2028still a\n- b", ["a fact still a", "b"]),
        ("- a fact\n  continued\n\n  still continued", ["a fact continued still continued"]),
        ("- a fact\n\nThat is all, thanks.", ["a fact"]),
        ("- a fact\nLet me know if you need more.", ["a fact"]),
        ("- ## Decisions made", ["Decisions made"]),
        ("- #123 was fixed", ["#123 was fixed"]),
        ("- a <!-- hidden --> fact", ["a fact"]),
        ("- the anchor <!-- session:x turn:y\n- transcript:/z --> end", ["the anchor end"]),
        ("- a fact\n- a fact\n- A FACT", ["a fact"]),
        ("- ...\n- ---\n- !!", []),
        ("", []),
        ("```\n- fenced fact\n```", ["fenced fact"]),
        # No list at all: each prose line is a bullet, introductions dropped.
        (
            "Sure, here is the summary:\nThe user asked about X.\nThe agent said Y.",
            ["The user asked about X.", "The agent said Y."],
        ),
        ("The agent changed config.toml.", ["The agent changed config.toml."]),
    ],
)
def test_sanitise(answer: str, expected: list[str]) -> None:
    bullets = sanitise(answer)
    assert bullets == [f"- {text}" for text in expected]
    if bullets:
        assert_safe(bullets)


def test_sanitise_keeps_at_most_ten() -> None:
    bullets = sanitise("\n".join(f"- fact number {i}" for i in range(25)))
    assert bullets == [f"- fact number {i}" for i in range(MAX_BULLETS)]


def test_sanitise_clips_long_bullets() -> None:
    (bullet,) = sanitise("- " + "word " * 400)
    assert len(bullet) == 2 + MAX_BULLET_CHARS
    assert bullet.endswith("…")


def test_sanitise_neutralises_controls_and_surrogates() -> None:
    (bullet,) = sanitise("- a\x00b\x1bc \ud800 d\x85e\x0cf")
    assert bullet == "- a b c \ufffd d e f"
    assert_safe([bullet])


def test_one_line_breaks_every_comment_token() -> None:
    assert one_line("a <!-- b --> c") == "a <! -- b -- > c"
    for tricky in ("<!<!----->->", "<!<!---->>", "<!-->", "--->-->"):
        flat = one_line(tricky)
        assert "<!--" not in flat and "-->" not in flat


def test_failure_marker() -> None:
    assert failure_marker("timed out after 30 s") == "- [distillation failed: timed out after 30 s]"
    assert failure_marker("\n") == "- [distillation failed: unknown]"


# --- properties ---------------------------------------------------------------

# Fragments that exercise the markdown rules far more often than random text.
_FRAGMENTS = st.sampled_from(
    [
        "\n", "\r\n", "\r", "\u2028", "\x85", "\x0b", "\x1c", " ", "  ", "\t",
        "- ", "* ", "+ ", "• ", "1. ", "2) ", "(3) ", "# ", "## ", "###### ", "#",
        "```", "~~~", "---", "***", "<!--", "-->", "<!", "--", ">", "-", "<",
        "session:a turn:b transcript:/c", "Here are the bullets:", "Sure!", "fact",
        "the agent fixed it", "é", "中文", "\ud800", "\x00", "…",
    ]
)  # fmt: skip
_MARKDOWNISH = st.lists(st.one_of(_FRAGMENTS, st.text(max_size=20)), max_size=60).map("".join)
_ANY_TEXT = st.one_of(st.text(), _MARKDOWNISH)


@settings(max_examples=400, deadline=None)
@given(_ANY_TEXT)
def test_sanitise_output_is_always_safe(answer: str) -> None:
    bullets = sanitise(answer)
    assert len(bullets) <= MAX_BULLETS
    for line in bullets:
        assert len(line) <= 2 + MAX_BULLET_CHARS
        assert re.search(r"\w", line[2:])
    if bullets:
        assert_safe(bullets)


@settings(max_examples=200, deadline=None)
@given(_ANY_TEXT, _ANY_TEXT)
def test_digest_is_always_safe(user: str, answer: str) -> None:
    bullets = digest(Exchange(user=user, assistant=answer))
    assert len(bullets) == 2
    assert bullets[0].startswith("- user asked: ")
    assert bullets[1].startswith("- agent answered: ")
    assert_safe(bullets)


@settings(max_examples=200, deadline=None)
@given(_ANY_TEXT)
def test_failure_marker_is_always_one_safe_line(reason: str) -> None:
    marker = failure_marker(reason)
    assert marker.startswith("- [distillation failed: ") and marker.endswith("]")
    assert_safe([marker])


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_ANY_TEXT, _ANY_TEXT, _ANY_TEXT)
def test_distill_never_raises_and_is_always_safe(
    answering: tuple[FakeOpenAI, LLM], answer: str, user: str, reply: str
) -> None:
    server, llm = answering
    server.set(answer=answer)
    result = distill(Exchange(user=user, assistant=reply), llm, timeout_s=5)
    assert result.bullets
    assert_safe(result.bullets)
    if result.failed is None:
        # The provider hands over the answer stripped of surrounding whitespace.
        assert result.bullets == sanitise(answer.strip())
    else:
        assert result.bullets[0] == failure_marker(result.failed)
        assert result.bullets[1:] == digest(Exchange(user=user, assistant=reply))
