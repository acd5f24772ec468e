"""Which index a project uses (engine/index_backend.py) and where its files go."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import FixedClock, open_memory
from memlane.core.config import load_config
from memlane.core.errors import ConfigError
from memlane.core.paths import index_dir
from memlane.core.settings import IndexSettings
from memlane.engine.index_backend import (
    MILVUS_DEFAULT_URI,
    check_backend,
    is_remote_uri,
    ledger_path,
    milvus_uri,
    sqlite_index_path,
)


def test_sqlite_uri_is_a_directory_only_for_the_sqlite_backend(tmp_path: Path) -> None:
    sqlite = IndexSettings(backend="sqlite", uri=str(tmp_path))
    assert sqlite_index_path(sqlite, "ms_x_1") == tmp_path / "ms_x_1.sqlite"
    # Under Milvus, index.uri is the Milvus URI: the sessions file stays home.
    milvus = IndexSettings(backend="milvus", uri="http://127.0.0.1:19530")
    assert sqlite_index_path(milvus, "ms_x_1") == index_dir() / "ms_x_1.sqlite"


def test_milvus_uri_defaults_to_memsearch_and_resolves_lite_paths(tmp_path: Path) -> None:
    assert milvus_uri(IndexSettings(backend="milvus")) == str(
        Path(MILVUS_DEFAULT_URI).expanduser().absolute()
    )
    assert milvus_uri(IndexSettings(backend="milvus", uri="https://z.example")) == (
        "https://z.example"
    )
    assert is_remote_uri("HTTP://h:19530") and not is_remote_uri("~/milvus.db")


def test_one_ledger_per_store_collection_and_uri(tmp_path: Path) -> None:
    store = tmp_path / "p" / ".memsearch" / "memory"
    a = ledger_path(IndexSettings(backend="milvus", uri=str(tmp_path / "a.db")), "ms_p_1", store)
    b = ledger_path(IndexSettings(backend="milvus", uri=str(tmp_path / "b.db")), "ms_p_1", store)
    assert a != b and a.parent == b.parent == index_dir()
    assert a.name.startswith("ms_p_1-")
    # Two stores writing one shared collection keep their own records.
    other = tmp_path / "q" / ".memsearch" / "memory"
    settings = IndexSettings(backend="milvus", uri=str(tmp_path / "a.db"))
    assert ledger_path(settings, "ms_p_1", other) != a


def test_an_unknown_backend_is_a_clear_error(project: Path) -> None:
    with pytest.raises(ConfigError, match="sqlite or milvus"):
        check_backend(IndexSettings(backend="lancedb"))
    # From the environment it is not used: the index stays where it was, and said.
    cfg = load_config(project, env={"MEMLANE_INDEX_BACKEND": "lancedb"})
    assert cfg.index.backend == "sqlite"
    assert cfg.problems[0].startswith("$MEMLANE_INDEX_BACKEND: index.backend = 'lancedb'")


def test_the_collection_can_be_named(project: Path, clock: FixedClock) -> None:
    mem = open_memory(project, clock=clock, MEMLANE_INDEX_COLLECTION="team_memory")
    try:
        assert mem.collection == "team_memory"
        assert mem.internals.index_path.name == "team_memory.sqlite"
        mem.write("the team shares one collection")
        mem.sync()
        assert mem.status().scope["collection"] == "team_memory"
    finally:
        mem.close()


def test_a_token_is_only_ever_a_reference(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from memlane.core.paths import global_config_path

    monkeypatch.setenv("MY_TOKEN", "t0k")
    config = load_config(project, env={"MEMLANE_INDEX_TOKEN": "env:MY_TOKEN"})
    assert config.index.token == "t0k"
    assert "t0k" not in repr(config.index)
    path = global_config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('[index]\ntoken = "s3cret"\n')
    written = load_config(project, env={})
    assert written.index.token is None  # not used, and said without the secret
    (problem,) = written.problems
    assert "stores a secret in index.token" in problem and "s3cret" not in problem
