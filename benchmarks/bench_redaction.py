"""Secret redaction speed: ``redact`` runs before every write and every LLM call.

python benchmarks/bench_redaction.py [--repeats N]

The first call pays the lazy import of detect-secrets (and ``requests``);
it is measured in a fresh process. Then exchanges of ordinary agent text
(1 kB to 100 kB, with one secret at the end, as a pasted `.env` line) are
redacted ``--repeats`` times each. A test once asserted that a 10 kB
exchange redacts in under a second; the figure is measured here instead.
"""

from __future__ import annotations

import argparse
import random
import string
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import entry_text, median, percentile, print_table, write_json

SIZES = (1_000, 10_000, 100_000)

_COLD = (
    "import time\n"
    "t0 = time.perf_counter()\n"
    "from memlane.store.redaction import redact\n"
    "t1 = time.perf_counter()\n"
    "redact('export API_TOKEN=abc123')\n"
    "t2 = time.perf_counter()\n"
    "print(t1 - t0, t2 - t1)\n"
)


def fake_key(rng: random.Random) -> str:
    """An OpenAI-shaped project key, assembled at run time (no literal secret here)."""
    alphabet = string.ascii_letters + string.digits + "_-"
    body = "".join(rng.choice(alphabet) for _ in range(74))
    return "sk-" + "proj-" + body + "T3Blbk" + "FJ" + body[::-1]


def cold_call() -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", _COLD], capture_output=True, text=True, check=True
    ).stdout.split()
    return {"import_ms": float(out[0]) * 1000, "first_redact_ms": float(out[1]) * 1000}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    from memlane.store.redaction import redact

    rng = random.Random(20261130)
    cold = cold_call()
    redact("warm")  # the import, outside the timings below
    rows = []
    for size in SIZES:
        text = entry_text(rng, size) + "\nexport OPENAI_API_KEY=" + fake_key(rng) + "\n"
        kinds = redact(text).kinds
        assert kinds == ("openai-key",), kinds  # the benchmark measures a real redaction
        timings = []
        for _ in range(args.repeats):
            started = time.perf_counter()
            redact(text)
            timings.append(time.perf_counter() - started)
        rows.append(
            {
                "chars": len(text),
                "repeats": args.repeats,
                "p50_ms": round(median(timings) * 1000, 2),
                "p95_ms": round(percentile(timings, 95) * 1000, 2),
                "mb_per_s": round(len(text) / median(timings) / 1e6, 2),
            }
        )
    print_table("redact() on one exchange (ordinary text + one secret)", rows)
    print_table("first call in a new process", [{k: round(v, 1) for k, v in cold.items()}])
    path = write_json("redaction", {"cases": rows, "cold": cold})
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
