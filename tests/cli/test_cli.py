"""The ``memlane`` command's arguments and output, run in this process on a fixed clock.

What only a real process shows (exit status of the console script, signals,
pipes, concurrent processes) is in ``test_smoke.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import Cli, make_project

LEXICAL = {"MEMLANE_EMBEDDING_PROVIDER": "none"}


def test_scope_json(cli: Cli, tmp_path: Path) -> None:
    project = make_project(tmp_path, "demo-proj")
    (project / "src").mkdir()
    out = cli("-C", str(project / "src"), "scope", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert set(data) == {"scope", "repository_dir", "store", "collection", "state_dir", "worktree"}
    assert data["worktree"] is None  # not a linked git worktree
    assert data["scope"] == str(project)
    assert data["repository_dir"] == str(project)
    assert data["store"] == str(project / ".memsearch" / "memory")
    assert data["collection"].startswith("ms_demo_proj_")
    assert data["state_dir"] == str(project / ".memsearch")


def test_write_search_expand_lexical(cli: Cli, project: Path) -> None:
    w = cli("write", "the nightly export now runs at 02:00 UTC", env=LEXICAL)
    assert w.returncode == 0, w.stderr
    daily = project / ".memsearch" / "memory" / "2026-11-30.md"
    assert w.stdout == f"Wrote an entry at 10:00 to {daily}\n"
    assert "### 10:00\n" in daily.read_text(encoding="utf-8")
    s = cli("search", "nightly export", "--json", env=LEXICAL)
    assert s.returncode == 0, s.stderr
    data = json.loads(s.stdout)
    assert data["mode"] == "lexical"
    assert data["hits"], data
    hit = data["hits"][0]
    assert set(hit) >= {
        "score",
        "chunk_hash",
        "source",
        "heading",
        "start_line",
        "end_line",
        "content",
    }
    assert hit["source"] == str(daily)
    e = cli("expand", hit["chunk_hash"], "--json", env=LEXICAL)
    assert e.returncode == 0, e.stderr
    section = json.loads(e.stdout)
    assert "02:00 UTC" in section["content"]
    assert section["anchor"]["session"] == "cli"
    human = cli("search", "nightly export", env=LEXICAL)
    assert human.returncode == 0, human.stderr
    assert hit["chunk_hash"] in human.stdout
    assert "lexical" in human.stdout


def test_write_from_stdin(cli: Cli, project: Path) -> None:
    out = cli("write", "-", "--json", input="first line\n- second line\n", env=LEXICAL)
    assert out.returncode == 0, out.stderr
    entry = json.loads(out.stdout)
    assert entry["time"] == "10:00"
    assert entry["path"] == str(project / ".memsearch" / "memory" / "2026-11-30.md")
    assert "### 10:00\n" in entry["text"]
    assert "- first line\n- second line" in entry["text"]


def test_search_bounds_take_a_time_and_a_zone(cli: Cli) -> None:
    """The issue's form, 2026-12-03T14:12:30Z, on --after and --before (core/bounds.py)."""
    assert cli("write", "the nightly export runs at two", env=LEXICAL).returncode == 0  # 10:00 UTC

    def found(*bounds: str) -> int:
        out = cli("search", "nightly export", "--json", *bounds, env=LEXICAL)
        assert out.returncode == 0, out.stderr
        return len(json.loads(out.stdout)["hits"])

    assert found("--after", "2026-11-30T09:59:30Z") == 1
    assert found("--after", "2026-11-30T10:00:30Z") == 0  # the entry is dated 10:00
    assert found("--before", "2026-11-30T11:00:00+01:00") == 0
    assert found("--before", "2026-11-30T11:00:30+01:00") == 1
    assert found("--after", "2026-11-30", "--before", "2026-12-01") == 1


def test_empty_search_says_so(cli: Cli) -> None:
    assert cli("write", "alpha", env=LEXICAL).returncode == 0
    out = cli("search", "nothingmatcheshere", env=LEXICAL)
    assert out.returncode == 0, out.stderr
    assert "empty" in out.stdout
    assert (
        json.loads(cli("search", "nothingmatcheshere", "--json", env=LEXICAL).stdout)["hits"] == []
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("expand", "0123456789abcdef"), "no chunk 0123456789abcdef"),
        (("expand", "nothex"), "is not a chunk hash"),
        (("-C", "/definitely/not/here", "status"), "directory not found"),
        (("chunks", "missing.md"), "missing.md"),
        (("search", "x", "--after", "yesterday"), "is not a date"),
        (("search", "x", "--after", "2026-12-04", "--before", "2026-12-03"), "nothing can match"),
        (("search", "x", "--kind", "bogus"), "unknown kind"),
        (("write", "   "), "nothing to write"),
        (("search", "anything"), "no memory store at"),
        (("index",), "no memory store at"),
    ],
)
def test_errors_are_one_clear_line(cli: Cli, args: tuple[str, ...], message: str) -> None:
    out = cli(*args, env=LEXICAL)
    assert out.returncode == 1, out
    assert out.stderr.startswith("memlane: error: ")
    assert message in out.stderr.splitlines()[0]
    assert "Traceback" not in out.stderr
    assert out.stdout == ""


def test_chunks_of_a_file_with_a_non_utf8_line_leaves_the_line_out_and_says_so(
    cli: Cli, project: Path
) -> None:
    bad = project / "bad.md"
    bad.write_bytes(b"# title\n\nsome \xff\xfe bytes\nan intact line\n")
    out = cli("chunks", str(bad), "--json")
    assert out.returncode == 0, out
    assert [c["content"] for c in json.loads(out.stdout)] == ["# title\n\n\nan intact line"]
    assert out.stderr == (
        f"memlane: left out damaged {bad}:3: not valid UTF-8 (byte 0xff at offset 14): "
        '"some \\xff\\xfe bytes"\n'
    )


def test_store_command_failure_names_command_and_mode(cli: Cli) -> None:
    out = cli("scope", env={"MEMLANE_STORE_CMD": "false"})
    assert out.returncode == 1, out
    assert out.stderr.startswith("memlane: error: ")
    assert "`false memory-dir`" in out.stderr


def test_status_json(cli: Cli) -> None:
    assert cli("write", "an entry for status", env=LEXICAL).returncode == 0
    assert cli("index", env=LEXICAL).returncode == 0
    out = cli("status", "--json", env=LEXICAL)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["chunks"] == 1
    assert data["backend"] == "sqlite"
    assert data["model"] == "all-MiniLM-L6-v2"
    assert data["versions"]["memlane"]
    assert data["index_state"]["status"] == "ok"


def test_config_set_get_and_trust(cli: Cli, project: Path, isolated_home: Path) -> None:
    elsewhere = make_project(project.parent, "elsewhere")
    set_globally = cli("config", "set", "embedding.batch_size", "8", cwd=elsewhere)
    assert set_globally.returncode == 0, set_globally.stderr
    assert "batch_size = 8" in (isolated_home / "config.toml").read_text(encoding="utf-8")
    got = cli("config", "get", "embedding.batch_size")
    assert got.stdout.strip() == "8"
    (project / ".memlane.toml").write_text("[embedding]\nbatch_size = 4\n")
    listed = cli("config", "list", "--resolved")
    assert "embedding.batch_size = 8  [global]" in listed.stdout
    assert "not trusted" in listed.stdout
    assert cli("trust").returncode == 0
    listed = cli("config", "list", "--resolved")
    assert "embedding.batch_size = 4  [project]" in listed.stdout
    bad = cli("config", "set", "embedding.api_key", "sk-123")
    assert bad.returncode == 1 and "never stored" in bad.stderr
    assert "sk-123" not in (isolated_home / "config.toml").read_text(encoding="utf-8")


@pytest.mark.parity
def test_chunks_json_equals_memsearch(cli: Cli) -> None:
    """`memlane chunks --json` matches the real memsearch chunker and chunk ids."""
    from memsearch.chunker import chunk_markdown, compute_chunk_id

    from memlane.cli.demo import fixtures_dir

    for name in ("2026-10-27.md", "2026-11-16.md"):
        path = fixtures_dir() / "memory" / name
        out = cli("chunks", str(path), "--json")
        assert out.returncode == 0, out.stderr
        ours = json.loads(out.stdout)
        source = str(path.resolve())
        text = path.read_bytes().decode("utf-8")
        theirs = [
            {
                "heading": c.heading,
                "heading_level": c.heading_level,
                "start_line": c.start_line,
                "end_line": c.end_line,
                "content_hash": c.content_hash,
                "chunk_hash": compute_chunk_id(
                    source, c.start_line, c.end_line, c.content_hash, "all-MiniLM-L6-v2"
                ),
                "content": c.content,
            }
            for c in chunk_markdown(text, source)
        ]
        assert ours == theirs
        assert len(ours) > 3


def test_search_batch_json_lines(cli: Cli, tmp_path: Path) -> None:
    for text in ("the nightly export runs at 02:00 UTC", "rotate the staging API keys monthly"):
        assert cli("write", text, env=LEXICAL).returncode == 0
    queries = "nightly export\n\nstaging keys\n"
    out = cli("search", "--batch", "-", "--json", "-k", "1", env=LEXICAL, input=queries)
    assert out.returncode == 0, out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert [d["query"] for d in lines] == ["nightly export", "", "staging keys"]
    assert "02:00 UTC" in lines[0]["hits"][0]["content"]
    assert lines[1]["hits"] == []
    assert "API keys" in lines[2]["hits"][0]["content"]
    single = json.loads(cli("search", "nightly export", "--json", "-k", "1", env=LEXICAL).stdout)
    assert {k: v for k, v in lines[0].items() if k != "query"} == single
    qfile = tmp_path / "queries.txt"
    qfile.write_text("staging keys\n", encoding="utf-8")
    from_file = cli("search", "--batch", str(qfile), "--json", env=LEXICAL)
    assert from_file.returncode == 0, from_file.stderr
    assert json.loads(from_file.stdout)["query"] == "staging keys"


def test_search_batch_usage_errors(cli: Cli) -> None:
    assert cli("write", "alpha", env=LEXICAL).returncode == 0
    without_json = cli("search", "--batch", "-", env=LEXICAL, input="x\n")
    assert without_json.returncode == 1 and "--json" in without_json.stderr
    both = cli("search", "x", "--batch", "-", "--json", env=LEXICAL, input="x\n")
    assert both.returncode == 1
    assert "either a QUERY or --batch" in both.stderr


def test_search_mode_option(cli: Cli) -> None:
    assert cli("write", "the nightly export runs at 02:00 UTC", env=LEXICAL).returncode == 0
    lex = cli("search", "nightly", "--mode", "lexical", "--json", env=LEXICAL)
    assert lex.returncode == 0, lex.stderr
    assert json.loads(lex.stdout)["mode"] == "lexical"
    sem = cli("search", "nightly", "--mode", "semantic", "--json", env=LEXICAL)
    assert sem.returncode == 1
    assert "semantic search needs an embedder" in sem.stderr
    bad = cli("search", "nightly", "--mode", "fuzzy", env=LEXICAL)
    assert bad.returncode == 1 and "unknown search mode" in bad.stderr
    both = cli("search", "nightly", "--lexical", "--mode", "semantic", env=LEXICAL)
    assert both.returncode == 1 and "contradicts" in both.stderr


def test_an_unknown_option_is_a_usage_error_not_a_traceback(cli: Cli, project: Path) -> None:
    out = cli("-C", str(project), "search", "--no-such-option", "x")
    assert out.returncode == 2
    assert "No such option: --no-such-option" in out.stderr
    assert "Traceback" not in out.stderr
    assert out.stdout == ""
