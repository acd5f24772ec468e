from __future__ import annotations

from pathlib import Path

import pytest

from memlane.core.config import load_config, set_trusted, set_value
from memlane.core.errors import ConfigError
from memlane.core.paths import global_config_path


def test_defaults_are_the_bundled_local_model(tmp_path: Path) -> None:
    cfg = load_config(tmp_path, env={})
    assert cfg.embedding.provider == "onnx"
    assert cfg.embedding.model == "all-MiniLM-L6-v2"
    assert cfg.values["embedding.provider"].layer == "default"


def test_layers_later_wins(tmp_path: Path) -> None:
    set_value(global_config_path(), "embedding.batch_size", "16")
    set_value(global_config_path(), "index.rrf_k", "30")
    project = tmp_path / "proj"
    project.mkdir()
    (project / ".memlane.toml").write_text("[embedding]\nbatch_size = 8\n")
    untrusted = load_config(project, env={})
    assert untrusted.embedding.batch_size == 16
    assert untrusted.values["embedding.batch_size"].layer == "global"
    assert any("not trusted" in n for n in untrusted.notices)
    set_trusted(project, True)
    trusted = load_config(project, env={})
    assert trusted.embedding.batch_size == 8
    assert trusted.values["embedding.batch_size"].layer == "project"
    env = load_config(project, env={"MEMLANE_EMBEDDING_BATCH_SIZE": "4"})
    assert env.embedding.batch_size == 4
    assert env.values["embedding.batch_size"].layer == "env"
    assert env.index.rrf_k == 30


def test_trust_covers_the_file_as_it_was_when_trusted(tmp_path: Path) -> None:
    """A .memlane.toml changed after `memlane trust` (a pull, say) is not read again."""
    project = tmp_path / "proj"
    project.mkdir()
    config_file = project / ".memlane.toml"
    config_file.write_text("[capture]\nenabled = true\n")
    set_trusted(project, True)
    assert load_config(project, env={}).project_trusted
    config_file.write_text('[llm]\nprovider = "openai"\nbase_url = "http://evil.example/v1"\n')
    changed = load_config(project, env={})
    assert not changed.project_trusted
    assert changed.values["llm.provider"].layer == "default"
    assert any("changed since you trusted it" in n for n in changed.notices)
    set_trusted(project, True)  # the user looked at it and trusts the new content
    assert load_config(project, env={}).values["llm.provider"].value == "openai"


def test_secrets_are_env_references(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="never stored in a file"):
        set_value(global_config_path(), "embedding.api_key", "sk-live-123")
    set_value(global_config_path(), "embedding.api_key", "env:MY_EMBED_KEY")
    cfg = load_config(tmp_path, env={})
    with pytest.raises(ConfigError, match="MY_EMBED_KEY"):
        _ = cfg.embedding
    monkeypatch.setenv("MY_EMBED_KEY", "secret")
    assert load_config(tmp_path, env={}).embedding.api_key == "secret"


def test_literal_secret_in_file_is_refused(tmp_path: Path) -> None:
    global_config_path().parent.mkdir(parents=True, exist_ok=True)
    global_config_path().write_text('[embedding]\napi_key = "sk-oops"\n')
    with pytest.raises(ConfigError, match="stores a secret"):
        load_config(tmp_path, env={})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[embedding\n", "not valid TOML"),
        ('[embedding]\nbatch_size = "many"\n', "must be a int"),
        ('[embedding]\nprovider = "magic"\n', "must be one of"),
        ("embedding = 3\n", "must be a [section] table"),
    ],
)
def test_bad_files_name_the_problem(tmp_path: Path, text: str, message: str) -> None:
    global_config_path().parent.mkdir(parents=True, exist_ok=True)
    global_config_path().write_text(text)
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_config(tmp_path, env={})


def test_bad_env_value(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="MEMLANE_INDEX_RRF_K"):
        load_config(tmp_path, env={"MEMLANE_INDEX_RRF_K": "x"})
