"""transcript, forget, compact and search --all as a user runs them (real subprocesses)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

MEMLANE = [sys.executable, "-m", "memlane.cli.main"]
LEXICAL = {"MEMLANE_EMBEDDING_PROVIDER": "none"}


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MEMLANE, *args],
        env={**os.environ, **LEXICAL, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    return root


def test_forget_by_hash_echoes_the_entry_and_search_no_longer_finds_it(project: Path) -> None:
    p = str(project)
    assert run("-C", p, "write", "the staging password rotation happens on fridays").returncode == 0
    assert run("-C", p, "write", "the api listens on 8080").returncode == 0
    found = json.loads(run("-C", p, "search", "rotation fridays", "--json").stdout)
    chunk_hash = found["hits"][0]["chunk_hash"]
    out = run("-C", p, "forget", chunk_hash)
    assert out.returncode == 0, out.stderr
    assert "only remaining copy" in out.stdout and "rotation happens on fridays" in out.stdout
    after = json.loads(run("-C", p, "search", "rotation fridays", "--json").stdout)
    assert all("fridays" not in h["content"] for h in after["hits"])
    still = json.loads(run("-C", p, "search", "api 8080", "--json").stdout)
    assert still["hits"] and "8080" in still["hits"][0]["content"]


def test_forget_without_an_address_says_what_to_pass(project: Path) -> None:
    run("-C", str(project), "write", "x marks the spot")
    out = run("-C", str(project), "forget")
    assert out.returncode == 1
    assert "needs a chunk_hash, or both date and time" in out.stderr
    assert "Traceback" not in out.stderr


def test_compact_without_an_llm_says_which_setting(project: Path) -> None:
    run("-C", str(project), "write", "something to condense")
    out = run("-C", str(project), "compact")
    assert out.returncode == 1
    assert "llm" in out.stderr and "Traceback" not in out.stderr


def test_transcript_reads_a_pi_session_file(project: Path, tmp_path: Path) -> None:
    session = tmp_path / "session.jsonl"
    lines = [
        {
            "type": "session",
            "version": 3,
            "id": "sess-1",
            "timestamp": "2026-08-13T14:00:00.000Z",
            "cwd": str(project),
        },
        {
            "type": "message",
            "id": "u1",
            "parentId": None,
            "timestamp": "2026-08-13T14:01:00.000Z",
            "message": {"role": "user", "content": "why is the cache cold?", "timestamp": 0},
        },
        {
            "type": "message",
            "id": "a1",
            "parentId": "u1",
            "timestamp": "2026-08-13T14:02:00.000Z",
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": "The TTL was 0."}],
                "timestamp": 0,
            },
        },
    ]
    session.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    out = run("-C", str(project), "transcript", str(session), "--turn", "a1")
    assert out.returncode == 0, out.stderr
    assert "why is the cache cold?" in out.stdout and "The TTL was 0." in out.stdout
    missing = run("-C", str(project), "transcript", str(session), "--turn", "zz")
    assert missing.returncode == 1 and "zz" in missing.stderr


def test_search_all_without_scan_roots_says_how_to_set_them(project: Path) -> None:
    run("-C", str(project), "write", "anything")
    out = run("-C", str(project), "search", "anything", "--all")
    assert out.returncode == 1
    assert "MEMLANE_SCAN_ROOTS" in out.stderr


def test_search_all_labels_hits_with_their_project(tmp_path: Path) -> None:
    root = tmp_path / "code"
    for name, note in (("alpha", "alpha uses postgres 16"), ("beta", "beta uses postgres 15")):
        proj = root / name
        (proj / ".git").mkdir(parents=True)
        assert run("-C", str(proj), "write", note).returncode == 0
        assert run("-C", str(proj), "index").returncode == 0
    out = run(
        "-C",
        str(root / "alpha"),
        "search",
        "postgres",
        "--all",
        "--json",
        env={"MEMLANE_SCAN_ROOTS": str(root)},
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert {Path(h["project"]).name for h in data["hits"]} == {"alpha", "beta"}
    beta_hit = next(h for h in data["hits"] if h["project"].endswith("beta"))
    expanded = run(
        "-C",
        str(root / "alpha"),
        "expand",
        beta_hit["chunk_hash"],
        "--project",
        beta_hit["project"],
    )
    assert expanded.returncode == 0, expanded.stderr
    assert "postgres 15" in expanded.stdout
