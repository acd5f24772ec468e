"""transcript, forget, compact and search --all as a user runs them (in this process)."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import Cli, make_project

LEXICAL = {"MEMLANE_EMBEDDING_PROVIDER": "none"}


def test_forget_by_hash_echoes_the_entry_and_search_no_longer_finds_it(
    cli: Cli, project: Path
) -> None:
    note = "the staging password rotation happens on fridays"
    assert cli("write", note, env=LEXICAL).returncode == 0
    assert cli("write", "the api listens on 8080", env=LEXICAL).returncode == 0
    found = json.loads(cli("search", "rotation fridays", "--json", env=LEXICAL).stdout)
    assert found["hits"] and note in found["hits"][0]["content"]
    out = cli("forget", found["hits"][0]["chunk_hash"], env=LEXICAL)
    assert out.returncode == 0, out.stderr
    assert "only remaining copy" in out.stdout and "rotation happens on fridays" in out.stdout
    daily = project / ".memsearch" / "memory" / "2026-11-30.md"
    assert "fridays" not in daily.read_text(encoding="utf-8")
    after = json.loads(cli("search", "rotation fridays", "--json", env=LEXICAL).stdout)
    assert after["hits"] == []
    still = json.loads(cli("search", "api 8080", "--json", env=LEXICAL).stdout)
    assert still["hits"] and "8080" in still["hits"][0]["content"]


def test_forget_without_an_address_says_what_to_pass(cli: Cli) -> None:
    assert cli("write", "x marks the spot", env=LEXICAL).returncode == 0
    out = cli("forget", env=LEXICAL)
    assert out.returncode == 1
    assert "needs a chunk_hash, or both date and time" in out.stderr
    assert "Traceback" not in out.stderr


def test_compact_without_an_llm_says_which_setting(cli: Cli, project: Path) -> None:
    assert cli("write", "something to condense", env=LEXICAL).returncode == 0
    before = (project / ".memsearch" / "memory" / "2026-11-30.md").read_text(encoding="utf-8")
    out = cli("compact", env=LEXICAL)
    assert out.returncode == 1
    assert "llm" in out.stderr and "Traceback" not in out.stderr
    after = (project / ".memsearch" / "memory" / "2026-11-30.md").read_text(encoding="utf-8")
    assert after == before


def test_transcript_reads_a_pi_session_file(cli: Cli, project: Path, tmp_path: Path) -> None:
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
    out = cli("transcript", str(session), "--turn", "a1", env=LEXICAL)
    assert out.returncode == 0, out.stderr
    assert "why is the cache cold?" in out.stdout and "The TTL was 0." in out.stdout
    missing = cli("transcript", str(session), "--turn", "zz", env=LEXICAL)
    assert missing.returncode == 1 and "zz" in missing.stderr


def test_search_all_without_scan_roots_says_how_to_set_them(cli: Cli) -> None:
    assert cli("write", "anything", env=LEXICAL).returncode == 0
    out = cli("search", "anything", "--all", env=LEXICAL)
    assert out.returncode == 1
    assert "MEMLANE_SCAN_ROOTS" in out.stderr


def test_search_all_labels_hits_with_their_project(cli: Cli, tmp_path: Path) -> None:
    root = tmp_path / "code"
    for name, note in (("alpha", "alpha uses postgres 16"), ("beta", "beta uses postgres 15")):
        proj = make_project(root, name)
        assert cli("-C", str(proj), "write", note, env=LEXICAL).returncode == 0
        assert cli("-C", str(proj), "index", env=LEXICAL).returncode == 0
    scan = {**LEXICAL, "MEMLANE_SCAN_ROOTS": str(root)}
    out = cli("-C", str(root / "alpha"), "search", "postgres", "--all", "--json", env=scan)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert {Path(h["project"]).name for h in data["hits"]} == {"alpha", "beta"}
    beta_hit = next(h for h in data["hits"] if h["project"].endswith("beta"))
    expanded = cli(
        "-C",
        str(root / "alpha"),
        "expand",
        beta_hit["chunk_hash"],
        "--project",
        beta_hit["project"],
        env=scan,
    )
    assert expanded.returncode == 0, expanded.stderr
    assert "postgres 15" in expanded.stdout
