"""What finding a worktree's shared memory costs (ADR 0035).

``resolve_scope`` in a linked worktree reads git's pointer files (``.git``,
``commondir``, ``gitdir``, the repository's ``config``) and, unless the caller
has it, loads ``scope.worktrees`` from the configuration. This measures it in
a real repository made by ``git`` against the same call in the main checkout
and outside git, and against what asking git would cost
(``git rev-parse --git-common-dir``, a process per call).

    python benchmarks/bench_worktree_scope.py [--runs 2000]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _common import percentile, print_table, write_json
from memlane.core.scope import resolve_scope

GIT_ENV = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=GIT_ENV, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def timed(call: Callable[[], object], runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        out.append((time.perf_counter() - start) * 1000)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp).resolve()
        os.environ["MEMLANE_HOME"] = str(base / "home")
        main_dir = base / "app"
        main_dir.mkdir()
        git(main_dir, "init", "-q")
        git(
            main_dir,
            "-c",
            "user.name=b",
            "-c",
            "user.email=b@b",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "i",
        )
        git(main_dir, "worktree", "add", "-q", "-b", "feat", str(base / "app-feat"))
        plain = base / "plain"
        plain.mkdir()
        feat = base / "app-feat"
        env = dict(os.environ)
        cases: list[tuple[str, Callable[[], object], int]] = [
            ("resolve_scope, outside git", lambda: resolve_scope(plain, env=env), args.runs),
            ("resolve_scope, main checkout", lambda: resolve_scope(main_dir, env=env), args.runs),
            (
                "resolve_scope, linked worktree (loads scope.worktrees)",
                lambda: resolve_scope(feat, env=env),
                args.runs,
            ),
            (
                "resolve_scope, linked worktree (setting given)",
                lambda: resolve_scope(feat, env=env, worktrees=("shared", "default")),
                args.runs,
            ),
            (
                "git rev-parse --git-common-dir (the alternative)",
                lambda: git(feat, "rev-parse", "--git-common-dir"),
                max(args.runs // 20, 20),
            ),
        ]
        assert resolve_scope(feat, env=env).scope == main_dir
        rows = []
        for name, call, runs in cases:
            timed(call, min(runs, 20))  # warm the file cache and the imports
            ms = timed(call, runs)
            rows.append(
                {
                    "case": name,
                    "runs": runs,
                    "p50 ms": round(percentile(ms, 50), 3),
                    "p95 ms": round(percentile(ms, 95), 3),
                }
            )
    print_table("Resolving a project's scope (ADR 0035)", rows)
    path = write_json("worktree_scope", {"rows": rows})
    print(f"JSON: {path}")


if __name__ == "__main__":
    main()
