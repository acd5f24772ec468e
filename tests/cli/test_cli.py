"""The ``memlane`` command as a user runs it: real subprocesses, real files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

MEMLANE = [sys.executable, "-m", "memlane.cli.main"]


def run(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MEMLANE, *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        input=input,
        timeout=120,
        check=False,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "demo-proj"
    (root / ".git").mkdir(parents=True)
    (root / "src").mkdir()
    return root


def test_scope_json(project: Path) -> None:
    out = run("-C", str(project / "src"), "scope", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert set(data) == {"scope", "repository_dir", "store", "collection", "state_dir"}
    assert data["scope"] == str(project.resolve())
    assert data["store"] == str(project.resolve() / ".memsearch" / "memory")
    assert data["collection"].startswith("ms_demo_proj_")
    assert data["state_dir"] == str(project.resolve() / ".memsearch")


def test_write_search_expand_lexical(project: Path) -> None:
    env = {"MEMLANE_EMBEDDING_PROVIDER": "none"}
    w = run("write", "the nightly export now runs at 02:00 UTC", cwd=project, env=env)
    assert w.returncode == 0, w.stderr
    assert "Wrote an entry" in w.stdout
    s = run("search", "nightly export", "--json", cwd=project, env=env)
    assert s.returncode == 0, s.stderr
    data = json.loads(s.stdout)
    assert data["mode"] == "lexical"
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
    e = run("expand", hit["chunk_hash"], "--json", cwd=project, env=env)
    assert e.returncode == 0, e.stderr
    section = json.loads(e.stdout)
    assert "02:00 UTC" in section["content"]
    assert section["anchor"]["session"] == "cli"
    human = run("search", "nightly export", cwd=project, env=env)
    assert hit["chunk_hash"] in human.stdout
    assert "lexical" in human.stdout


def test_write_from_stdin(project: Path) -> None:
    out = run(
        "write",
        "-",
        "--json",
        cwd=project,
        input="first line\n- second line\n",
        env={"MEMLANE_EMBEDDING_PROVIDER": "none"},
    )
    assert out.returncode == 0, out.stderr
    text = json.loads(out.stdout)["text"]
    assert "- first line\n- second line" in text


def test_empty_search_says_so(project: Path) -> None:
    run("write", "alpha", cwd=project, env={"MEMLANE_EMBEDDING_PROVIDER": "none"})
    out = run(
        "search", "nothingmatcheshere", cwd=project, env={"MEMLANE_EMBEDDING_PROVIDER": "none"}
    )
    assert out.returncode == 0
    assert "empty" in out.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("expand", "0123456789abcdef"), "no chunk 0123456789abcdef"),
        (("expand", "nothex"), "is not a chunk hash"),
        (("-C", "/definitely/not/here", "status"), "directory not found"),
        (("chunks", "missing.md"), "missing.md"),
        (("search", "x", "--after", "yesterday"), "is not a date"),
        (("search", "x", "--kind", "bogus"), "unknown kind"),
        (("write", "   "), "nothing to write"),
        (("search", "anything"), "no memory store at"),
        (("index",), "no memory store at"),
    ],
)
def test_errors_are_one_clear_line(project: Path, args: tuple[str, ...], message: str) -> None:
    out = run(*args, cwd=project, env={"MEMLANE_EMBEDDING_PROVIDER": "none"})
    assert out.returncode != 0
    assert "Traceback" not in out.stderr
    assert message in out.stderr
    assert out.stderr.startswith("memlane: error: ")


def test_non_utf8_chunks_file_is_a_clear_error(project: Path) -> None:
    bad = project / "bad.md"
    bad.write_bytes(b"# title\n\nsome \xff\xfe bytes\n")
    out = run("chunks", str(bad), cwd=project)
    assert out.returncode != 0
    assert "UTF-8" in out.stderr or "utf-8" in out.stderr
    assert "Traceback" not in out.stderr


def test_store_command_failure_names_command_and_mode(project: Path) -> None:
    out = run("scope", cwd=project, env={"MEMLANE_STORE_CMD": "false"})
    assert out.returncode != 0
    assert "`false memory-dir`" in out.stderr


def test_status_json(project: Path) -> None:
    env = {"MEMLANE_EMBEDDING_PROVIDER": "none"}
    run("write", "an entry for status", cwd=project, env=env)
    run("index", cwd=project, env=env)
    out = run("status", "--json", cwd=project, env=env)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["chunks"] == 1
    assert data["backend"] == "sqlite"
    assert data["model"] == "all-MiniLM-L6-v2"
    assert data["versions"]["memlane"]
    assert data["index_state"]["status"] == "ok"


def test_config_set_get_and_trust(project: Path) -> None:
    assert run("config", "set", "embedding.batch_size", "8").returncode == 0
    got = run("config", "get", "embedding.batch_size", cwd=project)
    assert got.stdout.strip() == "8"
    (project / ".memlane.toml").write_text("[embedding]\nbatch_size = 4\n")
    listed = run("config", "list", "--resolved", cwd=project)
    assert "embedding.batch_size = 8  [global]" in listed.stdout
    assert "not trusted" in listed.stdout
    assert run("trust", cwd=project).returncode == 0
    listed = run("config", "list", "--resolved", cwd=project)
    assert "embedding.batch_size = 4  [project]" in listed.stdout
    bad = run("config", "set", "embedding.api_key", "sk-123")
    assert bad.returncode != 0 and "never stored" in bad.stderr


def test_concurrent_writers_and_indexers_lose_nothing(project: Path) -> None:
    env = {**os.environ, "MEMLANE_EMBEDDING_PROVIDER": "none"}
    script = (
        "import sys\n"
        "from memlane.engine.memory import Memory\n"
        "tag = sys.argv[1]\n"
        "with Memory.open(sys.argv[2]) as mem:\n"
        "    for i in range(15):\n"
        "        mem.write(f'writer {tag} note number {i} token{tag}x{i}')\n"
        "        if i % 5 == 4:\n"
        "            mem.sync()\n"
        "            mem.search(f'token{tag}x{i}')\n"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(n), str(project)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(4)
    ]
    for p in procs:
        _, err = p.communicate(timeout=180)
        assert p.returncode == 0, err
    from memlane.engine.memory import Memory

    os.environ["MEMLANE_EMBEDDING_PROVIDER"] = "none"
    try:
        with Memory.open(project) as mem:
            mem.sync()
            for n in range(4):
                for i in range(15):
                    hits = mem.search(f"token{n}x{i}", 3).hits
                    assert hits and f"token{n}x{i}" in hits[0].content, (n, i)
            text = "".join(p.read_text() for p in mem.scope.store.glob("*.md"))
            assert text.count("### ") == 60
    finally:
        del os.environ["MEMLANE_EMBEDDING_PROVIDER"]


def test_chunks_json_equals_memsearch(project: Path) -> None:
    """`memlane chunks --json` matches the real memsearch chunker and chunk ids."""
    from memsearch.chunker import chunk_markdown, compute_chunk_id

    from memlane.cli.demo import fixtures_dir

    for name in ("2026-10-27.md", "2026-11-16.md"):
        path = fixtures_dir() / "memory" / name
        out = run("chunks", str(path), "--json", cwd=project)
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


def test_search_batch_json_lines(project: Path, tmp_path: Path) -> None:
    env = {"MEMLANE_EMBEDDING_PROVIDER": "none"}
    for text in ("the nightly export runs at 02:00 UTC", "rotate the staging API keys monthly"):
        assert run("write", text, cwd=project, env=env).returncode == 0
    queries = "nightly export\n\nstaging keys\n"
    out = run("search", "--batch", "-", "--json", "-k", "1", cwd=project, env=env, input=queries)
    assert out.returncode == 0, out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert [d["query"] for d in lines] == ["nightly export", "", "staging keys"]
    assert "02:00 UTC" in lines[0]["hits"][0]["content"]
    assert lines[1]["hits"] == []
    assert "API keys" in lines[2]["hits"][0]["content"]
    single = json.loads(
        run("search", "nightly export", "--json", "-k", "1", cwd=project, env=env).stdout
    )
    assert {k: v for k, v in lines[0].items() if k != "query"} == single
    qfile = tmp_path / "queries.txt"
    qfile.write_text("staging keys\n", encoding="utf-8")
    from_file = run("search", "--batch", str(qfile), "--json", cwd=project, env=env)
    assert from_file.returncode == 0, from_file.stderr
    assert json.loads(from_file.stdout)["query"] == "staging keys"


def test_search_batch_usage_errors(project: Path) -> None:
    env = {"MEMLANE_EMBEDDING_PROVIDER": "none"}
    run("write", "alpha", cwd=project, env=env)
    assert "--json" in run("search", "--batch", "-", cwd=project, env=env, input="x\n").stderr
    both = run("search", "x", "--batch", "-", "--json", cwd=project, env=env, input="x\n")
    assert both.returncode != 0
    assert "either a QUERY or --batch" in both.stderr


def test_search_mode_option(project: Path) -> None:
    env = {"MEMLANE_EMBEDDING_PROVIDER": "none"}
    run("write", "the nightly export runs at 02:00 UTC", cwd=project, env=env)
    lex = run("search", "nightly", "--mode", "lexical", "--json", cwd=project, env=env)
    assert lex.returncode == 0, lex.stderr
    assert json.loads(lex.stdout)["mode"] == "lexical"
    sem = run("search", "nightly", "--mode", "semantic", "--json", cwd=project, env=env)
    assert sem.returncode != 0
    assert "semantic search needs an embedder" in sem.stderr
    bad = run("search", "nightly", "--mode", "fuzzy", cwd=project, env=env)
    assert bad.returncode != 0 and "unknown search mode" in bad.stderr
    both = run("search", "nightly", "--lexical", "--mode", "semantic", cwd=project, env=env)
    assert both.returncode != 0 and "contradicts" in both.stderr


def test_an_unknown_option_is_a_usage_error_not_a_traceback(project: Path) -> None:
    out = run("-C", str(project), "search", "--no-such-option", "x")
    assert out.returncode == 2
    assert "No such option: --no-such-option" in out.stderr
    assert "Traceback" not in out.stderr
