"""Thousands of captures through a flaky LLM: none lost, memory bounded (issue 14).

The fake LLM on 127.0.0.1 answers a distillation well most of the time and
otherwise fails the ways real providers do: a 500, a 429, a malformed body,
an empty answer, an answer slower than the distillation timeout. Each
exchange acknowledged ``queued: true`` must end up in the journal exactly
once (distilled, or as its digest when the LLM failed), anchored by its
turn id. The quick form (``make test``) captures 300; ``make soak`` 10,000,
with the child's RSS sampled along the way.
"""

from __future__ import annotations

import random
import re
import threading
from pathlib import Path

import pytest
from harness import FaultHarness, Run, Scenario, Tally

from fake_llm import Behaviour, FakeOpenAI, Request

pytestmark = pytest.mark.subprocess

QUICK_CAPTURES = 300
SOAK_CAPTURES = 10_000
# RSS may grow while caches warm (the first fifth of the run); after that,
# growth beyond this over the rest of the run is a leak (finished capture
# jobs kept their exchanges once: ~2.7 MiB per 1,000 captures).
RSS_GROWTH_LIMIT_KIB = 8 * 1024
DISTILL_TIMEOUT_MS = 400


class Flaky:
    """The responder: a seeded mix of good answers and provider failures."""

    def __init__(self, seed: int = 14) -> None:
        self.random = random.Random(seed)
        self.lock = threading.Lock()
        self.kinds: dict[str, int] = {}

    def __call__(self, request: Request) -> str | Behaviour:
        with self.lock:
            roll = self.random.random()
        number = re.search(r"setting (\d+)", request.prompt or "")
        fact = f"- setting {number.group(1) if number else '?'} lives in build.toml"
        for kind, upto, behaviour in (
            ("ok", 0.80, None),
            ("500", 0.85, Behaviour(status=500, error_message="overloaded")),
            ("429", 0.89, Behaviour(status=429, error_message="rate limited")),
            ("garbage", 0.93, Behaviour(body=b"\x00not json", content_type="application/json")),
            ("empty", 0.96, Behaviour(answer="")),
            ("slow", 1.01, Behaviour(answer=fact, delay_s=DISTILL_TIMEOUT_MS / 1000 * 2)),
        ):
            if roll < upto:
                with self.lock:
                    self.kinds[kind] = self.kinds.get(kind, 0) + 1
                return fact if behaviour is None else behaviour
        return fact


def _check(n: int) -> object:
    def check(project: Path, run: Run) -> None:
        store = project / ".memsearch" / "memory"
        text = "".join(p.read_text(encoding="utf-8") for p in store.glob("*.md"))
        turns = re.findall(r"turn:(q\d+) ", text)
        acked = {a for a in run.acks if a.startswith("q")}
        assert len(acked) == n, f"{n - len(acked)} exchanges were not even queued"
        seen: dict[str, int] = {}
        for turn in turns:
            seen[turn] = seen.get(turn, 0) + 1
        lost = sorted(acked - set(seen))
        twice = sorted(t for t, c in seen.items() if c > 1)
        assert not lost, f"{len(lost)} acknowledged captures lost, e.g. {lost[:5]}"
        assert not twice, f"{len(twice)} captures written twice, e.g. {twice[:5]}"

    return check


def rss_samples(run: Run) -> list[tuple[int, int]]:
    return [
        (int(parts[1]), int(parts[2]))
        for parts in (a.split() for a in run.acks if a.startswith("rss "))
    ]


def test_captures_through_a_flaky_llm_lose_nothing(
    harness: FaultHarness, tally: Tally, soak: bool
) -> None:
    n = SOAK_CAPTURES if soak else QUICK_CAPTURES
    flaky = Flaky()
    with FakeOpenAI(responder=flaky) as server:
        scenario = Scenario(
            area="soak",
            ops=[
                {
                    "kind": "capture_many",
                    "id": "done",
                    "session": "soak",
                    "n": n,
                    "every": max(n // 20, 1),
                }
            ],
            check=_check(n),
            env={
                "MEMLANE_LLM_PROVIDER": "openai",
                "MEMLANE_LLM_BASE_URL": server.base_url,
                "MEMLANE_LLM_MODEL": "fake-model",
                "MEMLANE_CAPTURE_DISTILL_TIMEOUT_MS": str(DISTILL_TIMEOUT_MS),
                "MEMLANE_EXTRACT_MEMORIES_ENABLED": "off",
            },
        )
        project = harness.fresh_project(scenario)
        tally.tried["soak"] += n
        # About 30 captures a second on 2 busy cores; ample room above that.
        run = harness.run(project, scenario, scenario.ops, timeout_s=120 + n / 10)
        assert run.returncode == 0, run.stderr
        assert run.acks[-1] == "done"
        scenario.check(project, run)
    tally.held["soak"] += n
    assert set(flaky.kinds) >= {"ok", "500", "garbage", "empty", "slow"}, flaky.kinds
    samples = rss_samples(run)
    assert len(samples) >= 10
    warm = samples[len(samples) // 5][1]
    peak = max(kib for _, kib in samples)
    tally.notes.append(
        f"soak: {n} captures, LLM answers {dict(sorted(flaky.kinds.items()))}, "
        f"RSS {warm // 1024} MiB after warm-up, peak {peak // 1024} MiB"
    )
    assert peak - warm <= RSS_GROWTH_LIMIT_KIB, f"RSS grew {(peak - warm) // 1024} MiB"
