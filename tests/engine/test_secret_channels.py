"""Every way text enters memlane redacts the same secret kinds (issue 14 item 4).

A few rows of the redaction table (tests/secret_fakes.py: one per family of
the kinds that used to leak) pushed through each channel: ``memlane write``
(argument and stdin), ``memlane topic add``, capture (``agent_settled``
through memlane's OpenAI provider and a fake server, whose recorded
requests are the LLM prompts of distillation and extraction) and the dream
prompt. The MCP channel is tests/hosts/test_mcp_secrets.py; the sessions
index tests/sessions/test_session_redaction.py.

Every kind of the table goes through the CLI whole-line and mid-sentence
(issue 28), and is looked for in the markdown, in every byte of every file
memlane wrote (the SQLite indexes and their WALs), in search results and
in what the commands print; the kinds issue 28 found stored verbatim
(``secret_fakes.ISSUE_28``) are also typed into search queries.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path

from fake_llm import FakeOpenAI
from helpers import TOPIC_DAY, Cli, start_session
from memlane.core.types import Exchange
from memlane.engine.project import Memory
from memlane.engine.topics.dream import build_prompt, orient
from memlane.store import topics
from memlane.store.redaction import redact
from memlane.store.section import read_markdown
from secret_fakes import (
    CHANNEL_SAMPLE,
    ISSUE_28,
    ORDINARY,
    SECRETS,
    every_kind_text,
    in_sentence,
)

LEXICAL = {"MEMLANE_EMBEDDING_PROVIDER": "none"}
SAMPLE_TEXT = "\n".join(case.text for case in CHANNEL_SAMPLE)


def _store_text(store: Path) -> str:
    return "\n".join(read_markdown(path) for path in sorted(store.rglob("*.md")))


def _assert_redacted(text: str) -> None:
    for case in CHANNEL_SAMPLE:
        assert case.secret not in text, case.name
        assert f"[REDACTED:{case.kind}]" in text, case.name


def test_cli_write_redacts_an_argument_and_stdin(cli: Cli, memory: Memory) -> None:
    first, second = CHANNEL_SAMPLE[:3], CHANNEL_SAMPLE[3:]
    argument = "\n".join(case.text for case in first)
    assert cli("write", argument, env=LEXICAL).returncode == 0
    piped = "\n".join(case.text for case in second)
    assert cli("write", "-", input=piped, env=LEXICAL).returncode == 0
    _assert_redacted(_store_text(memory.scope.store))


def test_cli_topic_add_redacts_title_and_content(cli: Cli, memory: Memory) -> None:
    title = "deploy " + CHANNEL_SAMPLE[0].secret
    out = cli("topic", "add", "-t", "deploy", "--title", title, SAMPLE_TEXT, env=LEXICAL)
    assert out.returncode == 0, out.stderr
    text = _store_text(memory.scope.store)
    _assert_redacted(text)
    assert CHANNEL_SAMPLE[0].secret not in out.stdout + out.stderr


def test_ordinary_lines_are_written_as_they_are(cli: Cli, memory: Memory) -> None:
    lines = [line for line in ORDINARY if "\n" not in line][:12]
    assert cli("write", "-", input="\n".join(lines), env=LEXICAL).returncode == 0
    text = _store_text(memory.scope.store)
    for line in lines:
        assert line in text


def test_capture_sends_no_secret_to_the_llm_and_stores_none(
    memory: Memory, fake_openai: FakeOpenAI
) -> None:
    fake_openai.set(answer="- the deploy checklist was updated")
    session = start_session(memory, fake_openai.llm())
    user = "update the deploy checklist:\n" + SAMPLE_TEXT
    assistant = "Done. I kept these:\n" + SAMPLE_TEXT
    assert session.agent_settled(Exchange(user=user, assistant=assistant, entry_id="e1")).queued
    session.shutdown()
    prompts = "\n".join(r.system + r.prompt for r in fake_openai.requests)
    assert "update the deploy checklist" in prompts  # the exchange was sent, redacted
    _assert_redacted(prompts)
    for case in CHANNEL_SAMPLE:
        assert case.secret not in _store_text(memory.scope.store), case.name


def test_capture_digest_without_an_llm_stores_no_secret(memory: Memory) -> None:
    session = start_session(memory, None)
    user = "update the deploy checklist:\n" + SAMPLE_TEXT
    session.agent_settled(Exchange(user=user, assistant="done", entry_id="e1"))
    session.shutdown()
    text = _store_text(memory.scope.store)
    assert "update the deploy checklist" in text
    for case in CHANNEL_SAMPLE:
        assert case.secret not in text, case.name


def test_hand_written_secrets_never_reach_the_dream_prompt(memory: Memory) -> None:
    store = memory.scope.store
    topics.add(
        store, content="the deploy uses staging", topic="deploy", title="Profile", today=TOPIC_DAY
    )
    path = store / "topics" / "deploy.md"
    path.write_text(path.read_text() + "\n## Pasted\n" + SAMPLE_TEXT + "\n")
    _, prompt, _ = build_prompt(orient(store), [], today=date(2026, 11, 30))
    assert "the deploy uses staging" in prompt
    _assert_redacted(prompt)


def test_a_tool_error_quoting_an_argument_carries_no_secret(memory: Memory) -> None:
    # "no topic entry is titled '<what you passed>'": the title was a key.
    from memlane.core.errors import MemlaneError
    from memlane.engine.tools.dispatch import Tools

    tools = Tools(memory)
    for case in CHANNEL_SAMPLE:
        try:
            tools.call("memory_topic", {"action": "remove", "entry": case.text})
        except MemlaneError as exc:
            shown = str(exc)
        else:
            raise AssertionError("removing an entry that does not exist succeeded")
        assert case.secret not in shown, f"{case.name} echoed by a tool error"
        assert "no topic entry is titled" in shown


def _leaks(roots: list[Path]) -> list[str]:
    """Names of the cases whose secret is in any byte of any file under *roots*."""
    found = []
    for case in SECRETS:
        needle = case.secret.encode()
        for root in roots:
            for path in root.rglob("*"):
                if path.is_file() and needle in path.read_bytes():
                    found.append(f"{case.name}: {path}")
    return found


def test_cli_write_stores_no_secret_of_any_kind_and_says_how_many(
    cli: Cli, memory: Memory, isolated_home: Path
) -> None:
    text = every_kind_text()
    expected = redact(text).count
    assert expected >= len(SECRETS)
    out = cli("write", "-", input=text, env=LEXICAL)
    assert out.returncode == 0, out.stderr
    assert f"{expected} secret(s) were redacted before saving." in out.stdout
    found = cli("search", "staging box deploy", "-k", "50", env=LEXICAL)
    assert found.returncode == 0, found.stderr
    assert "[REDACTED:" in found.stdout
    stored = _store_text(memory.scope.store)
    assert in_sentence(ISSUE_28[0]).split(" we set ")[0] in stored
    for case in SECRETS:
        assert case.secret not in stored + found.stdout + out.stdout, case.name
    assert list(isolated_home.rglob("*.sqlite"))  # the index was written
    assert _leaks([memory.scope.store, isolated_home]) == []


def test_cli_write_of_ordinary_text_says_nothing_about_secrets(cli: Cli) -> None:
    out = cli("write", "the deploy uses staging", env=LEXICAL)
    assert out.returncode == 0, out.stderr
    assert "redacted" not in out.stdout


def test_cli_topic_add_stores_no_secret_of_any_kind_and_says_how_many(
    cli: Cli, memory: Memory, isolated_home: Path
) -> None:
    text = every_kind_text()
    expected = redact(text).count
    out = cli("topic", "add", "-t", "deploy", "--title", "Staging", text, env=LEXICAL)
    assert out.returncode == 0, out.stderr
    assert f"{expected} secret(s) were redacted before saving." in out.stdout
    found = cli("search", "staging box deploy", "-k", "50", env=LEXICAL)
    assert "[REDACTED:" in found.stdout
    stored = _store_text(memory.scope.store)
    for case in SECRETS:
        assert case.secret not in stored + found.stdout, case.name
    assert _leaks([memory.scope.store, isolated_home]) == []


def test_cli_searches_never_echo_a_secret_from_their_query(cli: Cli) -> None:
    assert cli("write", "the deploy uses staging", env=LEXICAL).returncode == 0
    searches = [("search",), ("sessions", "search"), ("topic", "search")]
    for case in ISSUE_28:
        for query in (case.line, in_sentence(case), "zzqxv " + case.line):
            for command in searches:
                for extra in ((), ("--json",)):
                    out = cli(*command, query, *extra, env=LEXICAL)
                    assert out.returncode == 0, out.stderr
                    shown = out.stdout + out.stderr
                    assert case.secret not in shown, f"{case.name} echoed by {command} {extra}"
