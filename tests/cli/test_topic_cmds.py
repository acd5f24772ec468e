"""``memlane topic`` and ``memlane memory`` as a user runs them (in this process)."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import Cli

LEXICAL = {"MEMLANE_EMBEDDING_PROVIDER": "none"}


def test_add_list_search_remove_round_trip(cli: Cli, project: Path) -> None:
    out = cli(
        "topic",
        "add",
        "staging uses port 2222",
        "--topic",
        "debugging.md",
        "--title",
        "SSH Gotcha",
        env=LEXICAL,
    )
    assert out.returncode == 0, out.stderr
    assert 'Saved "SSH Gotcha" to topics/debugging.md (new topic), type feedback.' in out.stdout
    out = cli(
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
        input="connection timeout after 30s\n",
        env=LEXICAL,
    )
    assert out.returncode == 0, out.stderr
    added = json.loads(out.stdout)
    assert added["index_line"] == "- [Debugging](topics/debugging.md) — SSH Gotcha; MySQL Timeout"
    assert added["type"] == "project"
    topic_file = project / ".memsearch" / "memory" / "topics" / "debugging.md"
    assert "connection timeout after 30s" in topic_file.read_text(encoding="utf-8")

    listed = json.loads(cli("topic", "list", "--json", env=LEXICAL).stdout)
    assert listed["topics"][0]["entries"] == ["SSH Gotcha", "MySQL Timeout"]
    assert "## MySQL Timeout" in cli("topic", "list", env=LEXICAL).stdout

    found = cli("topic", "search", "timeout", env=LEXICAL)
    assert found.returncode == 0, found.stderr
    assert "## MySQL Timeout\nconnection timeout after 30s" in found.stdout
    found_json = json.loads(cli("topic", "search", "timeout", "--json", env=LEXICAL).stdout)
    assert found_json["matches"][0]["title"] == "MySQL Timeout"

    wrong = cli("topic", "remove", "MySQL Timout", env=LEXICAL)
    assert wrong.returncode == 1 and "Traceback" not in wrong.stderr
    assert "close titles (nothing was removed): 'MySQL Timeout'" in wrong.stderr
    removed = cli("topic", "remove", "MySQL Timeout", env=LEXICAL)
    assert removed.returncode == 0 and "only remaining copy" in removed.stdout
    assert "MySQL Timeout" not in topic_file.read_text(encoding="utf-8")
    left = json.loads(cli("topic", "list", "--json", env=LEXICAL).stdout)
    assert left["topics"][0]["entries"] == ["SSH Gotcha"]


def test_duplicate_and_unsafe_names_fail_with_one_clear_line(cli: Cli, project: Path) -> None:
    first = cli("topic", "add", "a", "--topic", "t", "--title", "T", env=LEXICAL)
    assert first.returncode == 0, first.stderr
    dup = cli("topic", "add", "b", "--topic", "t", "--title", "T", env=LEXICAL)
    assert dup.returncode == 1 and "already has an entry titled 'T'" in dup.stderr
    bad = cli("topic", "add", "b", "--topic", "../../etc/passwd", "--title", "X", env=LEXICAL)
    assert bad.returncode == 1 and "path separator" in bad.stderr
    assert "Traceback" not in dup.stderr + bad.stderr
    topics = project / ".memsearch" / "memory" / "topics"
    assert sorted(p.name for p in topics.iterdir()) == ["t.md"]


def test_search_sessions_scope(cli: Cli, tmp_path: Path) -> None:
    out = cli(
        "topic",
        "search",
        "redis",
        "--scope",
        "sessions",
        "--json",
        env={
            **LEXICAL,
            "HOME": str(tmp_path / "nohome"),
            "PI_CODING_AGENT_DIR": str(tmp_path / "nopi"),
        },
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {
        "scope": "sessions",
        "query": "redis",
        "scanned_sessions": [],
        "matches": [],
        "truncated": False,
    }


def test_memory_on_off_status(cli: Cli, project: Path, isolated_home: Path) -> None:
    status = cli("memory", "status", env=LEXICAL)
    assert status.returncode == 0, status.stderr
    assert "topic memory  on (topics.enabled, from default)" in status.stdout
    assert "MEMORY.md     0/200 lines, 0/25600 bytes" in status.stdout
    assert "last dream    never" in status.stdout

    off = cli("memory", "off", env=LEXICAL)
    assert off.returncode == 0 and "Topic memory is off" in off.stdout
    assert "enabled = false" in (isolated_home / "config.toml").read_text(encoding="utf-8")
    refused = cli("topic", "add", "x", "--topic", "t", "--title", "T", env=LEXICAL)
    assert refused.returncode == 1 and "memlane memory on" in refused.stderr
    assert json.loads(cli("memory", "status", "--json", env=LEXICAL).stdout)["enabled"] is False

    assert cli("memory", "on", env=LEXICAL).returncode == 0
    added = cli("topic", "add", "x", "--topic", "t", "--title", "T", env=LEXICAL)
    assert added.returncode == 0, added.stderr
    store = project / ".memsearch" / "memory"
    (store / ".dream-meta.json").write_text(
        json.dumps({"lastDreamAt": "2026-11-29T08:00:00Z", "sessionsSinceDream": 2}),
        encoding="utf-8",
    )
    data = json.loads(cli("memory", "status", "--json", env=LEXICAL).stdout)
    assert data["enabled"] is True and data["enabled_from"] == "global"
    assert data["topic_files"] == ["t.md"] and data["entries"] == 1
    assert data["index_usage"]["lines"] == 1
    assert data["last_dream"] == "2026-11-29T08:00:00Z"


def test_memory_on_says_when_the_environment_outranks_it(cli: Cli) -> None:
    out = cli("memory", "on", env={**LEXICAL, "MEMLANE_TOPICS_ENABLED": "false"})
    assert out.returncode == 0, out.stderr
    assert "topics.enabled is false from the env layer" in out.stderr
