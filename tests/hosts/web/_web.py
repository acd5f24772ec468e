"""A real project memory for the web viewer's tests (conftest.py's fixtures use it).

``web_store`` writes, on the suite's clock, two days of anchored journal
entries whose transcript is a real pi session file of this project (so L3
and the sessions layer find it), one entry without a transcript, and a topic
entry (which updates MEMORY.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from _transcript_builders import PiSession
from helpers import FixedClock, open_memory
from memlane.core.types import Anchor
from memlane.engine.project import Memory
from memlane.engine.topics.ops import add_entry
from memlane.transcripts.locate import pi_project_dir

BASE_URL = "http://127.0.0.1"
SESSION_ID = "019a2b3c-webui"


@dataclass(frozen=True)
class WebStore:
    memory: Memory
    transcript: Path
    redis_turn: str
    today: str
    yesterday: str

    @property
    def store(self) -> Path:
        return self.memory.scope.store


def build_web_store(project: Path, clock: FixedClock) -> WebStore:
    """The project's memory as the viewer's tests expect it (see the module docstring)."""
    pi = PiSession(SESSION_ID)
    pi.user("let us move the hot cache to Redis")
    redis_turn = pi.user("use 5 minute TTLs for the Redis cache keys")
    pi.assistant("Done: the hot cache now lives in Redis with a 300 s TTL.")
    webhook_turn = pi.user("the webhook handler test is flaky again")
    pi.assistant("I added an idempotency key; the flaky webhook test passes now.")
    directory = pi_project_dir(str(project))
    directory.mkdir(parents=True, exist_ok=True)
    transcript = directory / "2026-08-13T14-00-00_webui.jsonl"
    transcript.write_text("\n".join(pi.lines) + "\n", encoding="utf-8")

    memory = open_memory(project, clock=clock)
    yesterday = clock.now() - timedelta(days=1)
    memory.write(
        "the agent fixed the flaky webhook handler test with an idempotency key",
        Anchor(SESSION_ID, webhook_turn, str(transcript)),
        now=yesterday,
    )
    memory.write(
        "the user and the agent moved the hot cache to Redis with 5 minute TTLs",
        Anchor(SESSION_ID, redis_turn, str(transcript)),
    )
    memory.write("the release checklist lives in docs/release.md")
    add_entry(
        memory,
        content="Deploys go out on Tuesdays after the billing cron has run.",
        topic="deploys",
        title="Deploy day",
        type="project",
    )
    memory.sync()
    return WebStore(
        memory=memory,
        transcript=transcript,
        redis_turn=redis_turn,
        today=clock.now().date().isoformat(),
        yesterday=yesterday.date().isoformat(),
    )
