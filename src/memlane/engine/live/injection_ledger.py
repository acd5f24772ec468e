"""The injection ledger: how much memlane handed the agent, prompt by prompt
(the web viewer's "what the agent sees" page charts it per day; ADR 0044).

``<state dir>/injections.jsonl`` (``$MEMLANE_HOME/injections/<collection>.jsonl``
when the store has no state directory), one line per prompt a session
answered: ``{"day": "YYYY-MM-DD", "snapshot": chars, "message": chars}``,
the snapshot appended to the system prompt and the hidden message (auto-
context, surfaced topics, recalled messages) in characters. Sizes only:
never a word of memory, so the ledger needs no redaction and a forget
leaves nothing in it.

Each line is one ``O_APPEND`` write, so sessions of the project append side
by side without a lock and never interleave a line. Writing is best effort:
a full disk or an unwritable directory costs the line, never the prompt.
A line that does not parse (a torn last line) is skipped when read.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from datetime import date

    from memlane.core.scope import Scope

log = logging.getLogger("memlane.session")

LEDGER_NAME = "injections.jsonl"


def ledger_path(scope: Scope) -> Path:
    """Where this project's ledger lives."""
    if scope.state_dir is not None:
        return scope.state_dir / LEDGER_NAME
    from memlane.core.paths import memlane_home

    return memlane_home() / "injections" / f"{scope.collection}.jsonl"


def record(scope: Scope, day: date, snapshot_chars: int, message_chars: int) -> None:
    """One prompt's injection (best effort: see the module docstring)."""
    line = json.dumps(
        {"day": day.isoformat(), "snapshot": snapshot_chars, "message": message_chars},
        separators=(",", ":"),
    )
    path = ledger_path(scope)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, (line + "\n").encode("ascii"))
        finally:
            os.close(fd)
    except OSError as exc:
        log.info("injection ledger not written: %s", exc)


@dataclass(frozen=True)
class DayCost:
    """What one day's prompts were handed: how many, and the characters of each part."""

    day: str
    prompts: int
    snapshot_chars: int
    message_chars: int

    @property
    def chars(self) -> int:
        return self.snapshot_chars + self.message_chars


def per_day(scope: Scope) -> list[DayCost]:
    """The ledger summed per day, oldest first (empty without a ledger)."""
    totals: dict[str, list[int]] = {}
    try:
        with ledger_path(scope).open(encoding="ascii", errors="replace") as handle:
            for line in handle:
                try:
                    row = json.loads(line)
                    day, snap, message = str(row["day"]), int(row["snapshot"]), int(row["message"])
                except (ValueError, KeyError, TypeError):
                    continue
                total = totals.setdefault(day[:10], [0, 0, 0])
                total[0] += 1
                total[1] += snap
                total[2] += message
    except OSError:
        return []
    return [DayCost(day, *totals[day]) for day in sorted(totals)]
