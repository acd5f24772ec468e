"""The walk of a CLI search: which memlane files ``memlane search`` enters on its
way from the command to the SQLite query, and how often its arguments are checked.

    python benchmarks/walk_search.py [--query "retry queue"] [--lexical]

Over the indexed demo store (cli/demo.py's ``build_project``, indexed first
by ``memlane index``), each way of running the command runs once in a new
process under ``sys.setprofile`` (no engine: ``MEMLANE_ENGINE=off``):

- ``quick``: what the ``memlane`` script runs (cli/fast.py → cli/quick.py);
- ``full``: the typer command line (cli/main.py → cli/commands.py), as for
  any form the quick parser leaves to it;
- ``quick --min-score 0.2``: the same with a score floor given.

A file is *entered* when a call goes into it from another file (a call
within a file, or an import's module code, is not an entry). From the
command's code (cli/quick_cmds.py's ``search_command``, which both ways run)
to the notes index's first SQLite statement of the search
(``SqliteIndex.search``) it records:

- ``path``: the memlane frames on the stack at that statement, as files
  (consecutive frames of one file count once): the road from the command
  to SQLite;
- ``walk``: every entry into a memlane file on the way (opening the
  project, its config and scope, the catch-up, the check included): the
  files entered, in the order first entered, and the entries per file.

Over the whole command it counts the argument checks: calls of
``check_request`` (engine/shared/request.py, the whole request) and of the
score floor's checks (``check_min_score``, and ``Memory.min_score``, which
calls it). The command line's parse (typer's, or cli/quick.py's) is not
counted: it reads the options' types and ranges and says a usage error.

Prints a table and the ordered path; JSON in ``benchmarks/results/walk_search.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

CHECKS = {
    ("engine/shared/request.py", "check_request"): "check_request",
    ("engine/shared/request.py", "check_min_score"): "check_min_score",
    ("engine/project.py", "min_score"): "Memory.min_score",
}


def _child(argv: list[str], full: bool) -> None:
    """Run ``memlane ARGV`` here under the profiler; print what it saw as JSON on stderr."""
    import sqlite3

    import memlane

    root = str(Path(memlane.__file__).parent) + os.sep
    entries: list[str] = []
    path: list[str] = []
    checks: Counter[str] = Counter()
    state = {"started": False, "done": False}

    def rel(frame: FrameType | None) -> str | None:
        if frame is None:
            return None
        name = frame.f_code.co_filename
        return name[len(root) :] if name.startswith(root) else None

    def in_index_search(frame: FrameType | None) -> bool:
        while frame is not None:
            if frame.f_code.co_name == "search" and rel(frame) == "index/sqlite/notes.py":
                return True
            frame = frame.f_back
        return False

    def hook(frame: FrameType, event: str, arg: object) -> None:
        if event == "call":
            here = rel(frame)
            if here is None:
                return
            check = CHECKS.get((here, frame.f_code.co_name))
            if check is not None:
                checks[check] += 1
            if frame.f_code.co_name == "search_command" and here == "cli/quick_cmds.py":
                state["started"] = True
            if frame.f_code.co_name == "<module>" or not state["started"] or state["done"]:
                return  # an import's module code, or before the command or after the query
            if rel(frame.f_back) != here:
                entries.append(here)
        elif event == "c_call" and not state["done"]:
            owner = getattr(arg, "__self__", None)
            if isinstance(owner, sqlite3.Connection | sqlite3.Cursor) and in_index_search(frame):
                state["done"] = True
                stack: list[str] = []
                walker: FrameType | None = frame
                while walker is not None:
                    name = rel(walker)
                    if name is not None and (not stack or stack[-1] != name):
                        stack.append(name)
                    walker = walker.f_back
                path.extend(reversed(stack))

    if full:
        from memlane.cli.main import main as entry
    else:
        from memlane.cli.fast import main as entry
    out = sys.stdout
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - the command's own output
    sys.setprofile(hook)
    try:
        code = entry(argv)
    finally:
        sys.setprofile(None)
        sys.stdout.close()
        sys.stdout = out
    report = {"exit": code, "reached_sqlite": state["done"], "path": path}
    report |= {"entries": entries, "checks": dict(checks)}
    sys.stderr.write("\nWALK " + json.dumps(report) + "\n")


def _measure(
    label: str, argv: list[str], full: bool, env: dict[str, str], cwd: Path
) -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", "full" if full else "quick", "--", *argv]
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    line = next((ln for ln in done.stderr.splitlines() if ln.startswith("WALK ")), None)
    if line is None:
        raise SystemExit(f"{label}: no walk reported\n{done.stderr}")
    seen = json.loads(line[5:])
    entries: list[str] = seen["entries"]
    counts = Counter(entries)
    path: list[str] = seen["path"]
    checks: dict[str, int] = seen["checks"]
    return {
        "run": label,
        "exit": seen["exit"],
        "path_files": len(path),
        "path_distinct": len(set(path)),
        "path_project_py": path.count("engine/project.py"),
        "walk_files": len(counts),
        "walk_entries": len(entries),
        "walk_project_py": counts["engine/project.py"],
        "check_request": checks.get("check_request", 0),
        "min_score_checks": checks.get("check_min_score", 0),
        "path": path,
        "walk_files_in_order": list(counts),
        "walk_counts": dict(counts.most_common()),
        "reached_sqlite": seen["reached_sqlite"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--query", default="retry queue")
    parser.add_argument("--lexical", action="store_true", help="add --lexical (no model load)")
    parser.add_argument("--child", choices=("quick", "full"), help=argparse.SUPPRESS)
    parser.add_argument("rest", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.rest, args.child == "full")
        return 0
    from _common import print_table, write_json
    from memlane.cli.demo import build_project

    root = Path(tempfile.mkdtemp(prefix="memlane-walk-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLANE_")}
    env |= {"MEMLANE_HOME": str(root / "home"), "MEMLANE_ENGINE": "off"}
    project = build_project(root)
    subprocess.run(
        [sys.executable, "-m", "memlane.cli.fast", "index"],
        env=env,
        cwd=project,
        check=True,
        capture_output=True,
    )
    search = ["search", *(["--lexical"] if args.lexical else []), args.query]
    runs = [
        ("quick", search, False),
        ("full (typer)", search, True),
        ("quick --min-score 0.2", [*search, "--min-score", "0.2"], False),
    ]
    rows = [_measure(label, argv, full, env, project) for label, argv, full in runs]
    table = [{k: v for k, v in r.items() if not isinstance(v, list | dict)} for r in rows]
    print_table(f"memlane {' '.join(search)}: from the command to the SQLite query", table)
    for row in rows:
        print(f"\npath ({row['run']}): " + " → ".join(row["path"]))
        walked = ", ".join(f"{name} ×{n}" for name, n in row["walk_counts"].items())
        print(f"walk ({row['run']}, entries per file): {walked}")
    print(f"\nJSON: {write_json('walk_search', {'command': search, 'rows': rows})}")
    return 0 if all(r["reached_sqlite"] and r["exit"] == 0 for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
