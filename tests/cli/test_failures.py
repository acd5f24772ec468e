"""Bad environments and bad input: one clear line, no traceback, nothing lost."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from helpers import TOPIC_DAY, Cli, FixedClock, open_memory
from memlane.core.errors import StoreError

LEXICAL = {"MEMLANE_EMBEDDING_PROVIDER": "none"}


def test_a_memlane_home_that_cannot_be_created_is_one_line(cli: Cli, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    out = cli("status", "--no-probe", env={**LEXICAL, "MEMLANE_HOME": str(blocker / "home")})
    assert out.returncode == 1, out
    assert out.stderr.startswith("memlane: error: ") and "Traceback" not in out.stderr
    assert "a-file/home" in out.stderr  # names the path that failed


def test_input_that_is_not_utf8_is_refused_and_nothing_is_written(cli: Cli, project: Path) -> None:
    store = project / ".memsearch" / "memory"
    out = cli("write", "-", input=b"bad \xff bytes\n", env=LEXICAL)
    assert out.returncode == 1, out
    assert "not valid UTF-8" in out.stderr and "Traceback" not in out.stderr
    assert not list(project.glob(".memsearch/memory/*.md"))
    out = cli("topic", "add", "-t", "x", "--title", "y", "-", input=b"\xff", env=LEXICAL)
    assert out.returncode == 1, out
    assert "not valid UTF-8" in out.stderr and "Traceback" not in out.stderr
    assert not (store / "topics" / "x.md").exists()
    assert not (store / "MEMORY.md").exists()
    assert not list(store.glob("topics/.*tmp"))


def test_forget_refuses_an_entry_it_could_not_echo(cli: Cli, project: Path) -> None:
    store = project / ".memsearch" / "memory"
    store.mkdir(parents=True)
    daily = store / "2026-01-02.md"
    original = (
        b"# 2026-01-02\n\n### 09:00\n- first\n\n### 10:00\n- secret \xff\xfe bytes\n\n"
        b"### 11:00\n- third\n"
    )
    daily.write_bytes(original)
    out = cli("forget", "--date", "2026-01-02", "--time", "10:00", env=LEXICAL)
    assert out.returncode == 1, out
    assert "UTF-8" in out.stderr and "Traceback" not in out.stderr
    assert daily.read_bytes() == original  # nothing removed without its echo


def test_a_topic_rewrite_keeps_a_private_files_permissions(cli: Cli, project: Path) -> None:
    first = cli("topic", "add", "-t", "secrets", "--title", "A", "a fact", env=LEXICAL)
    assert first.returncode == 0, first.stderr
    store = project / ".memsearch" / "memory"
    private = (store / "topics" / "secrets.md", store / "MEMORY.md")
    for path in private:
        path.chmod(0o600)
    second = cli("topic", "add", "-t", "secrets", "--title", "B", "b fact", env=LEXICAL)
    assert second.returncode == 0, second.stderr
    assert "## B" in (store / "topics" / "secrets.md").read_text(encoding="utf-8")  # rewritten
    for path in private:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


def test_text_that_cannot_be_scanned_for_secrets_is_refused_not_replaced(
    project: Path, clock: FixedClock
) -> None:
    import memlane.store.redaction as redaction

    with (
        redaction.scanner_failure(RuntimeError("scanner broke")),
        open_memory(project, clock=clock) as mem,
    ):
        with pytest.raises(StoreError, match="could not be scanned"):
            mem.write("Decision: we use postgres 16 for billing")
        assert not list(mem.scope.store.glob("*.md"))
        from memlane.store import topics

        with pytest.raises(StoreError, match="could not be scanned"):
            topics.add(mem.scope.store, content="x", topic="t", title="y", today=TOPIC_DAY)
        assert not (mem.scope.store / "topics" / "t.md").exists()


def _store_command_answering(tmp_path: Path, collection: str, memory_dir: str) -> str:
    (tmp_path / "answer-collection").write_text(collection)
    (tmp_path / "answer-memory-dir").write_text(memory_dir)
    (tmp_path / "answer-state-dir").write_text(str(tmp_path / "state"))
    script = tmp_path / "store-cmd.sh"
    script.write_text(f'#!/bin/sh\ncat "{tmp_path}/answer-$1"\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


def test_a_collection_that_climbs_out_of_the_index_directory_is_refused(
    cli: Cli, project: Path, tmp_path: Path
) -> None:
    # Enough ../ to reach / from any index directory, then back down here.
    escape = "../" * 40 + str(tmp_path / "x" / "evilcoll").lstrip("/")
    cmd = _store_command_answering(tmp_path, escape, str(tmp_path / "store" / "memory"))
    out = cli("write", "hello", env={**LEXICAL, "MEMLANE_STORE_CMD": cmd})
    assert out.returncode == 1, out
    assert out.stderr.startswith("memlane: error: ") and "Traceback" not in out.stderr
    assert "not a collection name" in out.stderr
    assert not (tmp_path / "x").exists()
    assert not (tmp_path / "store").exists()  # nothing written anywhere


def test_a_5mb_store_command_answer_is_a_short_error(
    cli: Cli, project: Path, tmp_path: Path
) -> None:
    cmd = _store_command_answering(tmp_path, "ms_ok_1", "/" + "m" * 5_000_148)
    out = cli("write", "hello", env={**LEXICAL, "MEMLANE_STORE_CMD": cmd})
    assert out.returncode == 1, out
    assert "is 5,000,149 bytes long" in out.stderr and "(5,000,149 characters)" in out.stderr
    assert len(out.stderr) < 1000 + 2 * len(cmd)
    assert len(out.stderr.splitlines()) == 2  # the error and its hint
