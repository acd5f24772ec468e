"""Helpers shared by the benchmark scripts: tables, JSON output, synthetic text."""

from __future__ import annotations

import json
import random
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

RESULTS_DIR = Path(__file__).parent / "results"


def as_installed() -> None:
    """Measure memlane's processes as a user's machine runs them: an installed
    memlane has its bytecode (pip compiles it), while a checkout run with
    ``PYTHONDONTWRITEBYTECODE`` would compile every changed module on every
    spawn. Writes the package's ``.pyc`` files and lets the children write theirs."""
    import compileall
    import os

    import memlane

    compileall.compile_dir(Path(memlane.__file__).parent, quiet=1)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


_SUBJECTS = [
    "the user and the agent",
    "the agent",
    "the user",
    "they",
]
_VERBS = [
    "fixed",
    "traced",
    "profiled",
    "refactored",
    "documented",
    "reverted",
    "benchmarked",
    "migrated",
    "split",
    "renamed",
    "cached",
    "retried",
    "deduplicated",
    "validated",
]
_THINGS = [
    "the webhook handler",
    "the invoice exporter",
    "the Redis cache",
    "the Postgres pool",
    "the retry queue",
    "the auth middleware",
    "the billing cron",
    "the CSV importer",
    "the rate limiter",
    "the search endpoint",
    "the PDF renderer",
    "the feature flags",
    "the session store",
    "the tax calculator",
    "the currency converter",
    "the audit log",
]
_DETAILS = [
    "because p95 latency rose to 840 ms",
    "after a flaky test in CI",
    "to cut memory by 30%",
    "since the TTL of 5 minutes was too short",
    "with an idempotency key per request",
    "behind the `LEDGER_FAST_PATH` flag",
    "using a unique index on (customer_id, ref)",
    "after the deploy on Friday failed",
    "so the nightly job finishes before 06:00",
    "because the upstream API returns 429 under load",
    "to keep PRs small",
]


def bullet(rng: random.Random) -> str:
    return (
        f"- {rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} {rng.choice(_THINGS)} "
        f"{rng.choice(_DETAILS)}"
    )


def entry_text(rng: random.Random, target_chars: int) -> str:
    lines: list[str] = []
    while sum(len(x) + 1 for x in lines) < target_chars:
        lines.append(bullet(rng))
    text = "\n".join(lines)
    return text[:target_chars]


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    idx = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[idx]


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def print_table(title: str, rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    cols = list(rows[0])
    cells = [[_fmt(r.get(c)) for c in cols] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(cols)]
    print(f"\n{title}")
    print("  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for row in cells:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)))


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def write_json(name: str, data: Any) -> Path:
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"{name}.json"
    path.write_text(json.dumps(data, indent=2) + "\n")
    return path
