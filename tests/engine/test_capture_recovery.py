"""A queued capture survives its process (issue 14, item 2), on the Session API.

What a killed session leaves is a capture log nobody holds; here it is
made with the log's own API (``CaptureLog`` appended to, then closed
without its entries being written), which is byte for byte what a
``kill -9`` leaves. tests/hosts/test_sidecar_kill.py kills real sidecars.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from fake_llm import FakeOpenAI, Request
from helpers import NOW, Cli, open_memory, start_session, wait_for
from memlane.core.types import Anchor, Exchange
from memlane.engine.journal import capture_log as cl
from memlane.engine.live.session import RECOVERY_REASON, SHUTDOWN_REASON
from memlane.engine.project import Memory
from memlane.store.anchor import ANCHOR_RE
from memlane.store.section import read_markdown

WAIT_S = 30.0
DEAD = "dead-session"


@pytest.fixture
def stalled() -> Iterator[tuple[FakeOpenAI, threading.Event]]:
    """A model that answers only once the test sets the event."""
    release = threading.Event()

    def answer(request: Request) -> str:
        release.wait(WAIT_S * 2)
        return "- the user and the agent recorded a fact"

    with FakeOpenAI(responder=answer) as server:
        try:
            yield server, release
        finally:
            release.set()


def _daily_texts(mem: Memory) -> str:
    return "\n".join(read_markdown(p) for p in sorted(mem.scope.store.glob("*.md")))


def _turns(text: str, session: str) -> list[str]:
    return [m.group("turn") for m in ANCHOR_RE.finditer(text) if m.group("session") == session]


def _leave_dead_log(mem: Memory, count: int, *, hours_ago: int = 1) -> list[cl.Pending]:
    """A capture log with *count* acknowledged exchanges whose process is gone."""
    capture_log = cl.CaptureLog.create(
        cl.capture_log_dir(mem.scope), {"session": DEAD, "host": "pi"}
    )
    items = [
        cl.Pending(
            key=f"key{n}",
            anchor=Anchor(session=DEAD, turn=f"turn{n}", transcript="/tmp/t/dead.jsonl"),
            at=NOW - timedelta(hours=hours_ago),
            user=f"where does service {n} log to?",
            assistant=f"Service {n} logs to /var/log/svc{n}.log.",
        )
        for n in range(count)
    ]
    for item in items:
        capture_log.append(item)
    capture_log.close()  # unlocked, entries pending: the owner is gone
    return items


def _exchange(n: int, user: str | None = None) -> Exchange:
    return Exchange(user=user or f"question {n}", assistant=f"answer {n}", entry_id=f"e{n}")


def test_the_capture_log_never_holds_an_unredacted_secret(
    memory: Memory, stalled: tuple[FakeOpenAI, threading.Event]
) -> None:
    server, release = stalled
    session = start_session(memory, server.llm())
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0" * 2
    long_secret = "sk-ant-api03-" + "Zx9Yw8Vu7T" * 9
    assert session.agent_settled(_exchange(1, f"my token is {secret}, keep it safe")).queued
    # A long answer is logged as its (redacted) head, the rest redacted in the background.
    huge = f"set ANTHROPIC_API_KEY={long_secret}\n" + "log line\n" * 10_000
    assert session.agent_settled(Exchange(user="configure it", assistant=huge, entry_id="e2"))
    [path] = cl.capture_log_dir(memory.scope).glob("*.jsonl")
    raw = path.read_bytes()
    assert secret.encode() not in raw and long_secret.encode() not in raw
    assert b"my token is [REDACTED:" in raw  # the exchange is there, its secret is not
    assert b"ANTHROPIC_API_KEY=[REDACTED:" in raw and cl.CLIPPED_NOTE.encode() in raw
    release.set()
    assert session.shutdown().flushed
    assert secret not in _daily_texts(memory)
    assert not path.exists()  # a clean shutdown leaves no capture log


def test_a_live_second_session_does_not_take_the_first_ones_queue(
    project: Path, memory: Memory, stalled: tuple[FakeOpenAI, threading.Event]
) -> None:
    server, release = stalled
    first = start_session(memory, server.llm())
    for n in range(3):
        assert first.agent_settled(_exchange(n)).queued
    other_memory = open_memory(project)
    try:
        second = start_session(other_memory)
        assert second.internals.wait_recovery(WAIT_S)
        assert second.capture.recovered == 0 and second.capture.found_written == 0
        assert _turns(_daily_texts(memory), "sess-1") == []  # nothing written behind its back
        second.shutdown()
    finally:
        other_memory.close()
    release.set()
    assert first.shutdown().flushed
    assert sorted(_turns(_daily_texts(memory), "sess-1")) == ["e0", "e1", "e2"]
    assert first.capture.distilled == 3


def test_a_new_session_writes_what_a_dead_one_left(
    memory: Memory, fake_openai: FakeOpenAI, cli: Cli
) -> None:
    items = _leave_dead_log(memory, 3)
    fake_openai.set(answer="- the agent said where the service logs")
    session = start_session(memory, fake_openai.llm())
    assert session.internals.wait_recovery(WAIT_S)
    assert session.capture.recovered == 3 and session.capture.recovered_as_digest == 0
    text = read_markdown(memory.scope.store / f"{NOW.date().isoformat()}.md")
    assert sorted(_turns(text, DEAD)) == sorted(i.anchor.turn for i in items)
    assert text.count("### 09:00") == 3  # when the dead session acknowledged them
    assert "transcript:/tmp/t/dead.jsonl" in text
    assert text.count("- the agent said where the service logs") == 3
    assert list(cl.capture_log_dir(memory.scope).glob("*.jsonl")) == []  # adopted, then deleted
    status = cli("status")
    assert status.returncode == 0
    assert "capture journal  recovered 3" in status.stdout
    assert session.status().capture["journal"]["recovered"] == 3
    session.shutdown()
    # Another start finds nothing more to do: never twice.
    again = start_session(memory, fake_openai.llm())
    assert again.internals.wait_recovery(WAIT_S) and again.capture.recovered == 0
    again.shutdown()
    assert len(_turns(_daily_texts(memory), DEAD)) == 3


def test_when_the_llm_fails_the_rest_are_digests_without_waiting(
    memory: Memory, fake_openai: FakeOpenAI
) -> None:
    _leave_dead_log(memory, 4)
    fake_openai.set(status=500, error_message="model overloaded")
    session = start_session(memory, fake_openai.llm())
    assert session.internals.wait_recovery(WAIT_S)
    assert session.capture.recovered == 4 and session.capture.recovered_as_digest == 4
    distils = [r for r in fake_openai.requests if r.path.endswith("/chat/completions")]
    assert len(distils) == 1  # only the first one asked the model
    text = _daily_texts(memory)
    assert text.count("[distillation failed: ") == 4
    assert text.count(RECOVERY_REASON) == 3
    for n in range(4):
        assert f"where does service {n} log to?" in text  # the digest quotes the exchange
    session.shutdown()


def test_an_entry_found_in_the_daily_file_is_not_written_again(
    memory: Memory, fake_openai: FakeOpenAI
) -> None:
    items = _leave_dead_log(memory, 2)
    # The dead process wrote the first entry, then was killed before its done mark.
    memory.write("- service 0 logs to /var/log/svc0.log", items[0].anchor, now=items[0].at)
    session = start_session(memory, fake_openai.llm())
    assert session.internals.wait_recovery(WAIT_S)
    assert session.capture.found_written == 1 and session.capture.recovered == 1
    turns = _turns(_daily_texts(memory), DEAD)
    assert sorted(turns) == ["turn0", "turn1"]
    session.shutdown()


def test_recovered_entries_still_distilling_at_shutdown_become_digests_once(
    memory: Memory, stalled: tuple[FakeOpenAI, threading.Event]
) -> None:
    server, _release = stalled
    _leave_dead_log(memory, 2)
    session = start_session(memory, server.llm())
    # The scan runs in the background (after loading the redaction scanner):
    # a shutdown before it would leave the capture log to the next session, so
    # nothing would be lost, but this test is about the digests.
    wait_for(lambda: session.capture.recovery_scanned, WAIT_S, "the recovery scan")
    flush = session.shutdown(cap_ms=300)
    assert flush.pending == 0
    text = _daily_texts(memory)
    assert sorted(_turns(text, DEAD)) == ["turn0", "turn1"]
    assert text.count(SHUTDOWN_REASON) + text.count(RECOVERY_REASON) >= 1
    later = start_session(memory)
    assert later.internals.wait_recovery(WAIT_S) and later.capture.recovered == 0
    later.shutdown()
    assert sorted(_turns(_daily_texts(memory), DEAD)) == ["turn0", "turn1"]


def test_when_the_capture_log_cannot_be_written_the_exchange_is_still_captured(
    memory: Memory, fake_openai: FakeOpenAI
) -> None:
    directory = cl.capture_log_dir(memory.scope)
    directory.parent.mkdir(parents=True, exist_ok=True)
    directory.write_text("a file where the capture-log directory belongs")
    session = start_session(memory, fake_openai.llm())
    queued = session.agent_settled(_exchange(1))
    assert queued.queued and queued.reason is not None
    assert "queued in memory only" in queued.reason and str(directory) in queued.reason
    assert session.capture.unjournaled == 1
    assert session.shutdown().flushed
    assert _turns(_daily_texts(memory), "sess-1") == ["e1"]
