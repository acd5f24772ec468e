"""Every write path on a full disk and on a read-only one (issue 14).

The store and memlane's home live on one small real tmpfs
(``small_tmpfs``). With the disk filled, or remounted read-only, each
operation that writes (a journal entry, a topic entry, forget, index, a
dream's apply) must fail with one line naming the problem, and change
nothing: every file of the store is byte for byte what it was. Once the disk
has room again (or is writable again) the same operations succeed and all
that was written before is still found. ``memlane status`` answers
throughout.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from harness import Tally

from helpers import Cli, CliResult

pytestmark = pytest.mark.subprocess

TOPIC = (
    "---\nname: Alpha\ndescription: alpha facts\ntype: project\nupdated: 2026-07-01\n---\n\n"
    "## Port\nthe api listens on 8080\n\n## Port again\nThe API listens on port 8080.\n"
)
PLAN = {
    "topics": [
        {
            "slug": "alpha",
            "description": "alpha facts: the api port",
            "entries": [
                {"title": "Port", "content": "the api listens on 8080", "updated": "2026-07-01"}
            ],
        }
    ],
    "delete": [],
    "summary": ["merged the duplicate port entries"],
}


class Disk:
    """The CLI on a project whose store and home are on the tmpfs *fs*."""

    def __init__(self, cli: Cli, fs: Any) -> None:
        self.cli = cli
        self.fs = fs
        self.store = fs.path / "memory"
        self.env: dict[str, str | None] = {
            "MEMLANE_EMBEDDING_PROVIDER": "none",
            "MEMSEARCH_DIR": str(fs.path),
            "MEMLANE_HOME": str(fs.path / "home"),
        }

    def __call__(self, *args: str) -> CliResult:
        return self.cli(*args, env=self.env)

    def files(self) -> dict[str, bytes]:
        """Every file the user owns in the store (not locks), as bytes."""
        return {
            str(p.relative_to(self.store)): p.read_bytes()
            for p in sorted(self.store.rglob("*"))
            if p.is_file() and not p.name.endswith(".lock")
        }


def _seed(disk: Disk, plan_path: Path) -> None:
    for n in range(4):
        assert disk("write", f"otter{n} entry written before the disk filled").returncode == 0
    (disk.store / "topics").mkdir(exist_ok=True)
    (disk.store / "topics" / "alpha.md").write_text(TOPIC, encoding="utf-8")
    (disk.store / "MEMORY.md").write_text(
        "# Project memory\n- [Alpha](topics/alpha.md) — Port; Port again\n", encoding="utf-8"
    )
    assert disk("index").returncode == 0, "the seed index"
    plan_path.write_text(json.dumps(PLAN), encoding="utf-8")


def _writes(disk: Disk, plan: Path, day: str) -> dict[str, tuple[str, ...]]:
    time = disk.files()[f"{day}.md"].decode().split("### ")[1][:5]
    return {
        # Longer than the page a full tmpfs may still have for the daily file.
        "write": ("write", "otter9 an entry for the full disk " + "lorem ipsum " * 2000),
        "topic add": ("topic", "add", "-t", "beta", "--title", "Beta fact", "beta fact text"),
        "forget": ("forget", "--date", day, "--time", f"{time}#1"),
        "reindex": ("reindex",),
        "dream apply": ("dream", "--apply-plan", str(plan), "--yes"),
    }


def _one_line_error(result: CliResult) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines, "the failure printed nothing"
    assert "Traceback" not in result.stderr, result.stderr
    assert lines[0].startswith("memlane: error: "), result.stderr
    return lines[0]


def _day(disk: Disk) -> str:
    [name] = [n for n in disk.files() if n[:4].isdigit()]
    return name.removesuffix(".md")


@pytest.mark.parametrize("operation", ["write", "topic add", "forget", "reindex", "dream apply"])
def test_a_full_disk_fails_each_write_cleanly_and_loses_nothing(
    cli: Cli, small_tmpfs: Any, tmp_path: Path, operation: str, tally: Tally
) -> None:
    tally.tried["full disk"] += 1
    disk = Disk(cli, small_tmpfs("2m"))
    plan = tmp_path / "plan.json"
    _seed(disk, plan)
    saved = _saved_plan(disk, plan)
    day = _day(disk)
    args = _writes(disk, saved, day)[operation]
    before = disk.files()
    disk.fs.fill()
    failed = disk(*args)
    assert failed.returncode != 0, f"{operation} succeeded on a full disk"
    line = _one_line_error(failed)
    assert "full" in line, f"{operation}: the error does not say the disk is full: {line}"
    assert disk.files() == before, f"{operation} changed the store while failing"
    status = disk("status", "--no-probe")
    assert status.returncode == 0, status.stderr
    disk.fs.free()
    done = disk(*args)
    assert done.returncode == 0, f"{operation} after freeing the disk: {done.stderr}"
    _all_found(disk, skip="otter0" if operation == "forget" else None)
    tally.held["full disk"] += 1


@pytest.mark.parametrize("operation", ["write", "topic add", "forget", "reindex", "dream apply"])
def test_a_read_only_disk_fails_each_write_cleanly_and_loses_nothing(
    cli: Cli, small_tmpfs: Any, tmp_path: Path, operation: str, tally: Tally
) -> None:
    tally.tried["read-only"] += 1
    disk = Disk(cli, small_tmpfs("4m"))
    plan = tmp_path / "plan.json"
    _seed(disk, plan)
    saved = _saved_plan(disk, plan)
    args = _writes(disk, saved, _day(disk))[operation]
    before = disk.files()
    disk.fs.remount(read_only=True)
    try:
        failed = disk(*args)
        assert failed.returncode != 0, f"{operation} succeeded on a read-only disk"
        line = _one_line_error(failed)
        assert "read-only" in line.lower() or "writable" in line, line
        assert disk.files() == before, f"{operation} changed the store while failing"
        status = disk("status", "--no-probe")
        assert status.returncode == 0, status.stderr
    finally:
        disk.fs.remount(read_only=False)
    done = disk(*args)
    assert done.returncode == 0, f"{operation} once writable again: {done.stderr}"
    _all_found(disk, skip="otter0" if operation == "forget" else None)
    tally.held["read-only"] += 1


def _saved_plan(disk: Disk, plan: Path) -> Path:
    """``dream --dry-run --save-plan`` needs an LLM; the plan is saved from a
    fake one on 127.0.0.1, for the files as they are now."""
    from fake_llm import FakeOpenAI

    saved = plan.with_name("saved-plan.json")
    with FakeOpenAI(answer=plan.read_text(encoding="utf-8")) as server:
        env = {
            **disk.env,
            "MEMLANE_LLM_PROVIDER": "openai",
            "MEMLANE_LLM_BASE_URL": server.base_url,
            "MEMLANE_LLM_MODEL": "fake-model",
        }
        result = disk.cli("dream", "--dry-run", "--save-plan", str(saved), env=env)
    assert result.returncode == 0, result.stderr
    return saved


def _all_found(disk: Disk, skip: str | None) -> None:
    for n in range(4):
        word = f"otter{n}"
        if word == skip:
            continue
        result = disk("search", word, "--json", "--mode", "lexical", "--min-score", "0")
        assert result.returncode == 0, result.stderr
        hits = json.loads(result.stdout)["hits"]
        assert any(word in hit["content"] for hit in hits), f"{word} is no longer found"


def test_a_running_server_still_searches_when_the_index_disk_fills(
    small_tmpfs: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A long-lived engine (the MCP server, the sidecar) holds its index
    # open. When the index's disk fills, bringing the index up to date fails,
    # but search still answers from the index as it was, and says so.
    from helpers import make_project, open_memory

    home = small_tmpfs("2m")
    monkeypatch.setenv("MEMLANE_HOME", str(home.path / "home"))
    project = make_project(tmp_path)
    with open_memory(project) as mem:
        for n in range(3):
            mem.write(f"otter{n} indexed before the disk filled")
        assert mem.search("otter1", mode="lexical", min_score=0).hits
        home.fill()
        mem.write("otter7 written after the disk filled " + "lorem " * 4000)
        result = mem.search("otter1", mode="lexical", min_score=0)
        assert any("otter1" in hit.content for hit in result.hits)
        assert any("is full" in notice for notice in result.notices), result.notices
        home.free()
        later = mem.search("otter7", mode="lexical", min_score=0)
        assert any("otter7" in hit.content for hit in later.hits)
