"""``memlane migrate --to``: another backend filled from the store, reusing vectors.

Vectors come from a fake OpenAI-compatible embedding server on 127.0.0.1, so
every embedding call is counted at the server.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fake_embedding import FakeEmbeddings
from helpers import NOW, Cli, FixedClock, open_memory
from memlane.core.errors import ConfigError
from memlane.core.settings import IndexSettings
from memlane.engine.migrate import switch_commands, target_settings
from memlane.engine.project import Memory


def _embedding_env(server: FakeEmbeddings, model: str = "fake-embed") -> dict[str, str]:
    return {
        "MEMLANE_EMBEDDING_PROVIDER": "openai",
        "MEMLANE_EMBEDDING_BASE_URL": server.base_url,
        "MEMLANE_EMBEDDING_MODEL": model,
    }


def _texts_embedded(server: FakeEmbeddings) -> int:
    return sum(
        len(r["json"]["input"]) for r in server.requests if r["path"].endswith("/embeddings")
    )


def _seeded(project: Path, server: FakeEmbeddings, clock: FixedClock) -> Memory:
    mem = open_memory(project, clock=clock, lexical=False, **_embedding_env(server))
    for text in (
        "moved the hot cache to Redis with five minute TTLs",
        "the flaky upload test waits for the S3 mock to be ready",
        "release builds are signed with the key in the team vault",
    ):
        mem.write(text)
    report = mem.sync()
    assert report.embedded_chunks == 3
    return mem


def test_migrate_to_another_sqlite_directory_reuses_every_vector(
    project: Path, tmp_path: Path, fake_embeddings: FakeEmbeddings, clock: FixedClock
) -> None:
    from memlane.engine.migrate import migrate

    mem = _seeded(project, fake_embeddings, clock)
    before = _texts_embedded(fake_embeddings)
    target = target_settings(mem.config.index, f"sqlite:{tmp_path / 'elsewhere'}")
    report = migrate(mem, target)
    mem.close()

    assert report.model_matched
    assert (report.reused, report.embedded, report.chunks) == (3, 0, 3)
    assert _texts_embedded(fake_embeddings) == before  # nothing went to the embedder
    assert (tmp_path / "elsewhere" / f"{mem.collection}.sqlite").is_file()

    moved = open_memory(
        project,
        clock=clock,
        lexical=False,
        MEMLANE_INDEX_URI=str(tmp_path / "elsewhere"),
        **_embedding_env(fake_embeddings),
    )
    try:
        assert moved.sync().embedded_chunks == 0  # the copy is complete
        # The fake vectors carry no meaning: the words find it, and the
        # dense leg ran (mode hybrid) on the copied vectors.
        result = moved.search("Redis TTLs hot cache", mode="hybrid")
        assert result.mode == "hybrid"
        assert "Redis" in result.hits[0].content
    finally:
        moved.close()


def test_migrate_embeds_again_when_the_model_changed(
    project: Path, tmp_path: Path, fake_embeddings: FakeEmbeddings, clock: FixedClock
) -> None:
    from memlane.engine.migrate import migrate

    _seeded(project, fake_embeddings, clock).close()
    other = open_memory(
        project, clock=clock, lexical=False, **_embedding_env(fake_embeddings, "fake-embed-2")
    )
    before = _texts_embedded(fake_embeddings)
    try:
        report = migrate(other, target_settings(other.config.index, f"sqlite:{tmp_path / 'b'}"))
    finally:
        other.close()
    assert not report.model_matched
    assert (report.reused, report.embedded) == (0, 3)
    assert _texts_embedded(fake_embeddings) - before == 3
    assert any("embedded again" in n for n in report.notices)


def test_migrate_to_where_the_index_already_is_is_refused(
    project: Path, fake_embeddings: FakeEmbeddings, clock: FixedClock
) -> None:
    from memlane.engine.migrate import migrate

    mem = _seeded(project, fake_embeddings, clock)
    try:
        with pytest.raises(ConfigError, match="already is"):
            migrate(mem, target_settings(mem.config.index, "sqlite"))
    finally:
        mem.close()


def test_target_settings_read_the_uri() -> None:
    current = IndexSettings(fusion="rrf")
    lite = target_settings(current, "~/m.db", collection="team")
    assert (lite.backend, lite.uri, lite.collection, lite.fusion) == (
        "milvus",
        "~/m.db",
        "team",
        "rrf",
    )
    remote = target_settings(current, "https://h.example:19530", token="tok")
    assert (remote.backend, remote.token) == ("milvus", "tok")
    assert "tok" not in repr(remote)  # a token never shows in a repr or a log line
    assert target_settings(current, "sqlite").uri is None
    assert target_settings(current, "sqlite:///srv/idx").uri == "/srv/idx"
    with pytest.raises(ConfigError):
        target_settings(current, "  ")
    # The current server's token goes to that server only.
    on_zilliz = IndexSettings(backend="milvus", uri="https://z.example:443", token="zk")
    assert target_settings(on_zilliz, "https://z.example:443", collection="c").token == "zk"
    assert target_settings(on_zilliz, "http://other-host:19530").token is None
    assert target_settings(on_zilliz, "/tmp/m.db").token is None
    with_password = target_settings(current, "http://root:pw@h:19530")
    assert "pw" not in " ".join(switch_commands(with_password))
    commands = switch_commands(remote, "env:ZILLIZ_TOKEN")
    assert commands == [
        "memlane config set index.backend milvus",
        "memlane config set index.uri https://h.example:19530",
        "memlane config set index.token env:ZILLIZ_TOKEN",
    ]


def test_cli_migrate_prints_how_to_switch(
    project: Path, tmp_path: Path, fake_embeddings: FakeEmbeddings
) -> None:
    env = _embedding_env(fake_embeddings)
    cli = Cli(FixedClock(NOW), cwd=project)
    assert cli("write", "the deploy runs from the release branch only", env=env).returncode == 0
    assert cli("index", env=env).returncode == 0
    target = tmp_path / "copy"
    done = cli("migrate", "--to", f"sqlite:{target}", "--json", env=env)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["reused"] == 1 and report["embedded"] == 0
    assert report["switch"][-1] == f"memlane config set index.uri {target}"
    text = cli("migrate", "--to", f"sqlite:{tmp_path / 'copy2'}", env=env)
    assert text.returncode == 0, text.stderr
    assert "1 vectors reused" in text.stdout and "memlane config set index.backend" in text.stdout
    refused = cli("migrate", "--to", str(tmp_path / "m.db"), "--token", "abc", env=env)
    assert refused.returncode != 0
    assert "env:VARIABLE" in refused.stderr and "Traceback" not in refused.stderr
