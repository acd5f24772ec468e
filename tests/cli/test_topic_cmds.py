"""``memlane topic`` and ``memlane memory`` as a user runs them (real subprocesses).

cli/main.py registers these commands with one line (``topic_cmds.register(app)``);
the subprocess below runs memlane's own entry point with exactly that line
applied, so the tests do not depend on when it lands in main.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ENTRY = (
    "import sys\n"
    "from memlane.cli import main, topic_cmds\n"
    "if not any(getattr(g, 'name', None) == 'topic' for g in main.app.registered_groups):\n"
    "    topic_cmds.register(main.app)\n"
    "main.run()\n"
)
MEMLANE = [sys.executable, "-c", ENTRY]
LEXICAL = {"MEMLANE_EMBEDDING_PROVIDER": "none"}


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MEMLANE, *args],
        env={**os.environ, **LEXICAL},
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def project(tmp_path: Path) -> str:
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    return str(root)


def test_add_list_search_remove_round_trip(project: str) -> None:
    out = run(
        "-C",
        project,
        "topic",
        "add",
        "staging uses port 2222",
        "--topic",
        "debugging.md",
        "--title",
        "SSH Gotcha",
    )
    assert out.returncode == 0, out.stderr
    assert 'Saved "SSH Gotcha" to topics/debugging.md (new topic), type feedback.' in out.stdout
    out = run(
        "-C",
        project,
        "topic",
        "add",
        "-",
        "--topic",
        "debugging.md",
        "--title",
        "MySQL Timeout",
        "--type",
        "project",
        "--json",
        stdin="connection timeout after 30s\n",
    )
    added = json.loads(out.stdout)
    assert added["index_line"] == "- [Debugging](topics/debugging.md) — SSH Gotcha; MySQL Timeout"
    assert added["type"] == "project"

    listed = json.loads(run("-C", project, "topic", "list", "--json").stdout)
    assert listed["topics"][0]["entries"] == ["SSH Gotcha", "MySQL Timeout"]
    assert "## MySQL Timeout" in run("-C", project, "topic", "list").stdout

    found = run("-C", project, "topic", "search", "timeout")
    assert (
        found.returncode == 0 and "## MySQL Timeout\nconnection timeout after 30s" in found.stdout
    )
    found_json = json.loads(run("-C", project, "topic", "search", "timeout", "--json").stdout)
    assert found_json["matches"][0]["title"] == "MySQL Timeout"

    wrong = run("-C", project, "topic", "remove", "MySQL Timout")
    assert wrong.returncode == 1 and "Traceback" not in wrong.stderr
    assert "close titles (nothing was removed): 'MySQL Timeout'" in wrong.stderr
    removed = run("-C", project, "topic", "remove", "MySQL Timeout")
    assert removed.returncode == 0 and "only remaining copy" in removed.stdout


def test_duplicate_and_unsafe_names_fail_with_one_clear_line(project: str) -> None:
    assert run("-C", project, "topic", "add", "a", "--topic", "t", "--title", "T").returncode == 0
    dup = run("-C", project, "topic", "add", "b", "--topic", "t", "--title", "T")
    assert dup.returncode == 1 and "already has an entry titled 'T'" in dup.stderr
    bad = run("-C", project, "topic", "add", "b", "--topic", "../../etc/passwd", "--title", "X")
    assert bad.returncode == 1 and "path separator" in bad.stderr
    assert "Traceback" not in dup.stderr + bad.stderr


def test_search_sessions_scope(project: str, tmp_path: Path) -> None:
    out = subprocess.run(
        [*MEMLANE, "-C", project, "topic", "search", "redis", "--scope", "sessions", "--json"],
        env={
            **os.environ,
            **LEXICAL,
            "HOME": str(tmp_path / "nohome"),
            "PI_CODING_AGENT_DIR": str(tmp_path / "nopi"),
        },
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {
        "scope": "sessions",
        "query": "redis",
        "scanned_sessions": [],
        "matches": [],
        "truncated": False,
    }


def test_memory_on_off_status(project: str, isolated_home: Path) -> None:
    status = run("-C", project, "memory", "status")
    assert status.returncode == 0, status.stderr
    assert "topic memory  on (topics.enabled, from default)" in status.stdout
    assert "MEMORY.md     0/200 lines, 0/25600 bytes" in status.stdout
    assert "last dream    never" in status.stdout

    off = run("-C", project, "memory", "off")
    assert off.returncode == 0 and "Topic memory is off" in off.stdout
    assert "enabled = false" in (isolated_home / "config.toml").read_text(encoding="utf-8")
    refused = run("-C", project, "topic", "add", "x", "--topic", "t", "--title", "T")
    assert refused.returncode == 1 and "memlane memory on" in refused.stderr
    assert json.loads(run("-C", project, "memory", "status", "--json").stdout)["enabled"] is False

    assert run("-C", project, "memory", "on").returncode == 0
    run("-C", project, "topic", "add", "x", "--topic", "t", "--title", "T")
    store = Path(project) / ".memsearch" / "memory"
    (store / ".dream-meta.json").write_text(
        json.dumps({"lastDreamAt": "2026-11-29T08:00:00Z", "sessionsSinceDream": 2}),
        encoding="utf-8",
    )
    data = json.loads(run("-C", project, "memory", "status", "--json").stdout)
    assert data["enabled"] is True and data["enabled_from"] == "global"
    assert data["topic_files"] == ["t.md"] and data["entries"] == 1
    assert data["index_usage"]["lines"] == 1
    assert data["last_dream"] == "2026-11-29T08:00:00Z"


def test_memory_on_says_when_the_environment_outranks_it(project: str) -> None:
    out = subprocess.run(
        [*MEMLANE, "-C", project, "memory", "on"],
        env={**os.environ, **LEXICAL, "MEMLANE_TOPICS_ENABLED": "false"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert "topics.enabled is false from the env layer" in out.stderr
