"""The injection ledger: each prompt's sizes, appended by the session,
summed per day; no text of memory in it."""

from __future__ import annotations

import re
from datetime import date

from helpers import start_session
from memlane.engine.live.injection_ledger import DayCost, ledger_path, per_day, record
from memlane.engine.project import Memory


def test_each_prompt_is_recorded_with_its_sizes_and_no_text(memory: Memory) -> None:
    memory.write("the hot cache lives in Redis with zanzibarquokka keys")
    session = start_session(memory)
    try:
        first = session.before_agent_start("where does the hot cache live?")
        second = session.before_agent_start("and its keys?")
    finally:
        session.shutdown()
    today = memory.clock.today().isoformat()
    [cost] = per_day(memory.scope)
    assert cost.day == today and cost.prompts == 2
    assert cost.snapshot_chars == len(first.system_append) + len(second.system_append)
    assert cost.message_chars == len(first.message or "") + len(second.message or "")
    text = ledger_path(memory.scope).read_text(encoding="ascii")
    assert "zanzibarquokka" not in text and "Redis" not in text
    assert all(
        re.fullmatch(r'\{"day":"\d{4}-\d{2}-\d{2}","snapshot":\d+,"message":\d+\}', line)
        for line in text.splitlines()
    )


def test_days_are_summed_and_a_torn_line_is_skipped(memory: Memory) -> None:
    record(memory.scope, date(2026, 11, 28), 1000, 0)
    record(memory.scope, date(2026, 11, 28), 1000, 250)
    record(memory.scope, date(2026, 11, 29), 1200, 0)
    with ledger_path(memory.scope).open("a", encoding="ascii") as handle:
        handle.write('{"day":"2026-11-29","snap')  # a session killed mid-line
    assert per_day(memory.scope) == [
        DayCost("2026-11-28", 2, 2000, 250),
        DayCost("2026-11-29", 1, 1200, 0),
    ]
    assert per_day(memory.scope)[0].chars == 2250
