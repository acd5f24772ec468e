"""Bad environments and bad input: one clear line, no traceback, nothing lost."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import TOPIC_DAY
from memlane.core.errors import StoreError
from memlane.engine.memory import Memory

MEMLANE = [sys.executable, "-m", "memlane.cli.main"]


def run(
    *args: str, env: dict[str, str] | None = None, input: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*MEMLANE, *args],
        env={**os.environ, "MEMLANE_EMBEDDING_PROVIDER": "none", **(env or {})},
        capture_output=True,
        input=input,
        timeout=120,
        check=False,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    return root


def test_a_memlane_home_that_cannot_be_created_is_one_line(project: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    out = run(
        "-C", str(project), "status", "--no-probe", env={"MEMLANE_HOME": str(blocker / "home")}
    )
    err = out.stderr.decode()
    assert out.returncode == 1, err
    assert err.startswith("memlane: error: ") and "Traceback" not in err
    assert "a-file/home" in err  # names the path that failed


def test_input_that_is_not_utf8_is_refused_and_nothing_is_written(project: Path) -> None:
    out = run("-C", str(project), "write", "-", input=b"bad \xff bytes\n")
    err = out.stderr.decode()
    assert out.returncode == 1 and "not valid UTF-8" in err and "Traceback" not in err
    assert not list(project.glob(".memsearch/memory/*.md"))
    out = run("-C", str(project), "topic", "add", "-t", "x", "--title", "y", "-", input=b"\xff")
    err = out.stderr.decode()
    assert out.returncode == 1 and "Traceback" not in err
    assert not list(project.glob(".memsearch/memory/topics/.*tmp"))


def test_forget_refuses_an_entry_it_could_not_echo(project: Path) -> None:
    store = project / ".memsearch" / "memory"
    store.mkdir(parents=True)
    daily = store / "2026-01-02.md"
    original = (
        b"# 2026-01-02\n\n### 09:00\n- first\n\n### 10:00\n- secret \xff\xfe bytes\n\n"
        b"### 11:00\n- third\n"
    )
    daily.write_bytes(original)
    out = run("-C", str(project), "forget", "--date", "2026-01-02", "--time", "10:00")
    err = out.stderr.decode()
    assert out.returncode == 1 and "UTF-8" in err and "Traceback" not in err
    assert daily.read_bytes() == original  # nothing removed without its echo


def test_a_topic_rewrite_keeps_a_private_files_permissions(project: Path) -> None:
    assert (
        run(
            "-C", str(project), "topic", "add", "-t", "secrets", "--title", "A", "a fact"
        ).returncode
        == 0
    )
    store = project / ".memsearch" / "memory"
    for path in (store / "topics" / "secrets.md", store / "MEMORY.md"):
        path.chmod(0o600)
    assert (
        run(
            "-C", str(project), "topic", "add", "-t", "secrets", "--title", "B", "b fact"
        ).returncode
        == 0
    )
    for path in (store / "topics" / "secrets.md", store / "MEMORY.md"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


def test_text_that_cannot_be_scanned_for_secrets_is_refused_not_replaced(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import memlane.store.redaction as redaction

    def broken(text: str) -> redaction.Redaction:
        raise RuntimeError("scanner broke")

    monkeypatch.setattr(redaction, "_redact", broken)
    mem = Memory.open(project)
    with pytest.raises(StoreError, match="could not be scanned"):
        mem.write("Decision: we use postgres 16 for billing")
    assert not list(mem.scope.store.glob("*.md"))
    from memlane.store import topics

    with pytest.raises(StoreError, match="could not be scanned"):
        topics.add(mem.scope.store, content="x", topic="t", title="y", today=TOPIC_DAY)
