"""Issue 14, item 3 through the real CLI: links a repository commits never redirect memory.

``ln -s ~/.bashrc .memsearch/memory/$(date +%F).md`` then ``memlane write hello``
used to append the entry to ``~/.bashrc``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import NOW, Cli
from memlane.core.clock import local

LEXICAL = {"MEMLANE_EMBEDDING_PROVIDER": "none"}
SECRET = "alias ll='ls -l'  # the user's own shell profile\n"


@pytest.fixture
def bashrc(tmp_path: Path) -> Path:
    path = tmp_path / "home" / ".bashrc"
    path.parent.mkdir()
    path.write_text(SECRET, encoding="utf-8")
    return path


def _store(project: Path) -> Path:
    return project / ".memsearch" / "memory"


def _error_line(stderr: str) -> str:
    lines = stderr.splitlines()
    assert lines and lines[0].startswith("memlane: error: ")
    assert "Traceback" not in stderr
    return lines[0]


def test_write_refuses_a_daily_file_linked_to_the_shell_profile(
    cli: Cli, project: Path, bashrc: Path
) -> None:
    store = _store(project)
    store.mkdir(parents=True)
    daily = store / f"{local(NOW).date().isoformat()}.md"
    daily.symlink_to(bashrc)
    result = cli("write", "hello", env=LEXICAL)
    assert result.returncode == 1
    line = _error_line(result.stderr)
    assert str(daily) in line and "symbolic link" in line
    assert "remove the link" in result.stderr
    assert bashrc.read_text(encoding="utf-8") == SECRET


def test_index_and_status_report_the_link_and_keep_the_rest(
    cli: Cli, project: Path, bashrc: Path
) -> None:
    assert cli("write", "the team picked SQLite", env=LEXICAL).returncode == 0
    link = _store(project) / "2026-01-01.md"
    link.symlink_to(bashrc)
    indexed = cli("index", "--json", env=LEXICAL)
    report = json.loads(indexed.stdout)
    assert [f["path"] for f in report["failed_files"]] == [str(link)]
    found = cli("search", "SQLite", "--json", env=LEXICAL)
    assert found.returncode == 0 and "SQLite" in found.stdout
    leaked = cli("search", "alias", "--json", env=LEXICAL)
    assert "ls -l" not in leaked.stdout
    status = cli("status", "--no-probe", env=LEXICAL)
    assert any(
        line.startswith("failed file") and f"{link}: a symbolic link (to {bashrc})" in line
        for line in status.stdout.splitlines()
    )
    assert "could not be indexed" in status.stdout


def test_topic_add_refuses_a_linked_memory_index(cli: Cli, project: Path, bashrc: Path) -> None:
    store = _store(project)
    store.mkdir(parents=True)
    (store / "MEMORY.md").symlink_to(bashrc)
    result = cli("topic", "add", "use uv", "--topic", "tooling", "--title", "Use uv", env=LEXICAL)
    assert result.returncode == 1
    assert str(store / "MEMORY.md") in _error_line(result.stderr)
    assert bashrc.read_text(encoding="utf-8") == SECRET


def test_a_committed_store_link_is_refused_and_status_says_so(
    cli: Cli, project: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    (home / "memory").mkdir(parents=True)
    (project / ".memsearch").symlink_to(home, target_is_directory=True)
    result = cli("write", "hello", env=LEXICAL)
    assert result.returncode == 1
    assert "goes through a symbolic link" in _error_line(result.stderr)
    assert list((home / "memory").iterdir()) == []
    status = cli("status", "--no-probe", env=LEXICAL)
    assert status.returncode == 0
    assert f"missing: store: the memory store {_store(project)} goes through" in status.stdout
    assert list(home.iterdir()) == [home / "memory"]  # no state file, no lock there


def test_a_memsearch_dir_link_the_user_set_is_used_and_shown(
    cli: Cli, project: Path, tmp_path: Path
) -> None:
    real = tmp_path / "data" / "ms"
    real.mkdir(parents=True)
    alias = tmp_path / "my-memory"
    alias.symlink_to(real, target_is_directory=True)
    env = {**LEXICAL, "MEMSEARCH_DIR": str(alias)}
    assert cli("write", "hello", env=env).returncode == 0
    assert any((real / "memory").glob("*.md"))
    status = cli("status", "--no-probe", env=env)
    expected = f"store is a link to {real / 'memory'} (configured by MEMSEARCH_DIR={alias})"
    assert any(
        line.startswith("store link") and line.endswith(expected)
        for line in status.stdout.splitlines()
    )
