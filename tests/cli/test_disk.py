"""A full disk, a damaged daily file and an unwritable index, through the real CLI.

Issue 14, item 1: a write that hit ENOSPC in the middle of a multi-byte
character left invalid UTF-8 in the daily file, and the indexer then
dropped every entry of that day. Item 9: ``memlane status`` failed on a
read-only index directory, and a full index disk said "disk I/O error".
The disks here are real tmpfs mounts (``small_tmpfs``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from helpers import Cli, CliResult

LEXICAL = {"MEMLANE_EMBEDDING_PROVIDER": "none"}
JAPANESE = "日本語の長いメモを書いています。ディスクがいっぱいになるまで。"


class Lexical:
    """The ``cli`` with the embedder off and *env* added to every call."""

    def __init__(self, cli: Cli, **env: str) -> None:
        self.cli = cli
        self.env: dict[str, str | None] = {**LEXICAL, **env}

    def __call__(self, *args: str, input: str | None = None) -> CliResult:
        return self.cli(*args, env=self.env, input=input)


def _hits(run: Lexical, query: str) -> list[dict[str, Any]]:
    result = run("search", query, "--json", "-k", "50")
    assert result.returncode == 0, result.stderr
    hits: list[dict[str, Any]] = json.loads(result.stdout)["hits"]
    return hits


def _daily_files(fs: Any) -> list[Path]:
    return sorted((fs.path / "memory").glob("*.md"))


def test_a_full_disk_never_takes_a_day_out_of_search(cli: Cli, small_tmpfs: Any) -> None:
    # The repro: five writes, index, fill the disk, write long
    # Japanese text until it fails, free the disk, write again.
    fs = small_tmpfs("2m")
    run = Lexical(cli, MEMSEARCH_DIR=str(fs.path))
    for n in range(5):
        assert run("write", f"walrus entry {n} before the disk filled").returncode == 0
    assert run("index").returncode == 0
    [daily] = _daily_files(fs)

    fs.fill(leave=40_000)
    accepted: list[int] = []
    for n in range(100):
        before = daily.read_bytes()
        text = f"walrus jp{n}\n" + JAPANESE * 150  # about 14 KB, one line of it Japanese
        failed = run("write", "-", input=text)
        if failed.returncode != 0:
            break
        accepted.append(n)
    else:
        raise AssertionError("the disk never filled up")
    assert accepted, "some Japanese entries fitted before the disk was full"

    # All or nothing: the failed write left the file exactly as it was, and said why.
    assert daily.read_bytes() == before
    assert "is full: the entry was not written; the file is unchanged" in failed.stderr
    assert "df -h" in failed.stderr and "Traceback" not in failed.stderr
    assert len(failed.stderr.strip().splitlines()) == 2  # the message and its hint

    fs.free()
    assert run("write", "walrus entry after the disk was freed").returncode == 0
    expected = 5 + len(accepted) + 1
    assert len(_hits(run, "walrus")) == expected
    assert run("reindex").returncode == 0
    assert len(_hits(run, "walrus")) == expected

    status = run("status", "--no-probe", "--json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["damaged_lines"] == []


DAMAGED = (
    b"# 2026-11-30\n"
    b"\n"
    b"## Session 09:00\n"
    b"\n"
    b"### 09:00\n"
    b"<!-- session:a turn:1 transcript:none -->\n"
    b"- narwhal migration plan is agreed\n"
    b"\n"
    b"### 09:05\n"
    b"<!-- session:a turn:2 transcript:none -->\n"
    b"- torn by a full disk \xe3\x81\n"  # line 11: invalid UTF-8 in the middle
    b"- narwhal backups run nightly\n"
    b"\n"
    b"### 09:10\n"
    b"<!-- session:a turn:3 transcript:none -->\n"
    b"- narwhal dashboards moved to grafana\n"
    b"\n"
    b"### 09:15\n"
    b"<!-- session:cli turn:16"  # line 19: a torn anchor, the file's end
)


def _damaged_store(run: Lexical) -> Path:
    assert run("write", "a first entry so the store exists").returncode == 0
    listing = run("scope", "--json")
    store = Path(json.loads(listing.stdout)["store"])
    daily = store / "2026-11-29.md"
    daily.write_bytes(DAMAGED)
    return daily


def test_a_damaged_file_keeps_its_intact_entries_in_search_and_status_names_the_lines(
    cli: Cli,
) -> None:
    run = Lexical(cli)
    daily = _damaged_store(run)
    index = run("index")
    assert index.returncode == 0
    assert f"{daily}: indexed its intact entries without 2 damaged line(s)" in index.stderr
    contents = [hit["content"] for hit in _hits(run, "narwhal")]
    assert len(contents) == 3
    assert any("backups run nightly" in text for text in contents)
    assert all("torn by" not in text for text in contents)

    status = run("status", "--no-probe")
    assert status.returncode == 0
    assert f"{daily}:11: not valid UTF-8 (byte 0xe3 at offset" in status.stdout
    assert f"{daily}:19: an HTML comment (an anchor?) opens here and is never closed" in (
        status.stdout
    )
    assert "missing: store: 2 damaged line(s) in 1 file(s)" in status.stdout
    assert "`memlane status --fix`" in status.stdout

    # reindex keeps the intact entries too
    assert run("reindex").returncode == 0
    assert len(_hits(run, "narwhal")) == 3


def test_status_fix_asks_first_and_refuses_without_a_terminal(cli: Cli) -> None:
    run = Lexical(cli)
    daily = _damaged_store(run)
    refused = run("status", "--fix")  # the test's stdin is no terminal
    assert refused.returncode == 1
    assert "no terminal to confirm on" in refused.stderr
    assert "memlane status --fix --yes" in refused.stderr
    assert "would move line(s) 11, 18, 19 of" in refused.stdout
    assert daily.read_bytes() == DAMAGED
    assert not daily.with_name(daily.name + ".damaged").exists()


def test_status_fix_yes_moves_the_damage_aside_and_nothing_intact(cli: Cli) -> None:
    run = Lexical(cli)
    daily = _damaged_store(run)
    fixed = run("status", "--fix", "--yes")
    assert fixed.returncode == 0, fixed.stderr
    aside = daily.with_name(daily.name + ".damaged")
    assert f"Moved 3 line(s) of {daily} to {aside}." in fixed.stdout

    lines = DAMAGED.split(b"\n")
    kept = b"\n".join(line for n, line in enumerate(lines, 1) if n not in (11, 18, 19))
    assert daily.read_bytes() == kept + b"\n"
    moved = aside.read_bytes().split(b"\n")
    assert moved[0].startswith(b"# 3 line(s) set aside from 2026-11-29.md")
    assert moved[1:] == [lines[10], lines[17], lines[18], b""]

    # the repaired file was indexed: the intact entries are all still found
    assert len(_hits(run, "narwhal")) == 3
    status = run("status", "--no-probe", "--json")
    assert json.loads(status.stdout)["damaged_lines"] == []
    again = run("doctor", "--repair", "--yes")
    assert again.returncode == 0 and "Nothing damaged" in again.stdout

    # .damaged is appended to, never overwritten
    daily.write_bytes(kept + b"\n- later torn \xff line\n")
    assert run("status", "--fix", "--yes").returncode == 0
    assert aside.read_bytes().startswith(b"\n".join(moved))
    assert aside.read_bytes().endswith(b"- later torn \xff line\n")


def test_yes_without_fix_is_a_usage_error(cli: Cli) -> None:
    run = Lexical(cli)
    result = run("status", "--yes")
    assert result.returncode == 2
    assert "--yes only answers" in result.stderr


def test_forget_removes_an_intact_entry_of_a_damaged_file(cli: Cli) -> None:
    run = Lexical(cli)
    _damaged_store(run)
    assert run("index").returncode == 0
    [hit] = [h for h in _hits(run, "narwhal") if "grafana" in h["content"]]
    forgot = run("forget", hit["chunk_hash"])
    assert forgot.returncode == 0, forgot.stderr
    assert len(_hits(run, "narwhal")) == 2


def test_a_full_index_disk_says_disk_full_and_status_still_answers(
    cli: Cli, small_tmpfs: Any
) -> None:
    fs = small_tmpfs("1m")
    run = Lexical(cli, MEMLANE_HOME=str(fs.path))
    assert run("write", "an entry to index").returncode == 0
    fs.fill()
    for n in range(10):  # enough text that the index must grow
        assert run("write", f"word{n} " * 2000).returncode == 0
    index = run("index")
    assert index.returncode == 1
    assert "is full: the index could not be written" in index.stderr
    assert "disk I/O error" not in index.stderr

    status = run("status", "--no-probe")
    assert status.returncode == 0, status.stderr
    assert "missing: index: the disk holding" in status.stdout
    assert "is full" in status.stdout


def test_status_reports_a_read_only_index_directory(cli: Cli, small_tmpfs: Any) -> None:
    fs = small_tmpfs("4m")
    run = Lexical(cli, MEMLANE_HOME=str(fs.path))
    assert run("write", "an entry to index").returncode == 0
    assert run("index").returncode == 0
    fs.remount(read_only=True)
    try:
        status = run("status", "--no-probe")
    finally:
        fs.remount(read_only=False)
    assert status.returncode == 0, status.stderr
    assert "is not writable (Read-only file system)" in status.stdout
    assert "set MEMLANE_HOME" in status.stdout
