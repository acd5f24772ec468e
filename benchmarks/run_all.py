"""Run every benchmark (``make bench``): each prints its table and writes JSON."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
SCRIPTS = [
    "bench_search.py",
    "bench_embed.py",
    "bench_index.py",
    "bench_cli.py",
    "bench_autocontext.py",
    "bench_fresh.py",
    "bench_redaction.py",
]


def main() -> int:
    failed = []
    for script in SCRIPTS:
        path = HERE / script
        print(f"\n=== {script}", flush=True)
        if subprocess.run([sys.executable, str(path)], check=False).returncode != 0:
            failed.append(script)
    if failed:
        print(f"\nfailed: {', '.join(failed)}")
        return 1
    print(f"\nJSON results are in {HERE / 'results'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
