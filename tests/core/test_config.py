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


def test_literal_secret_in_file_is_not_used(tmp_path: Path) -> None:
    global_config_path().parent.mkdir(parents=True, exist_ok=True)
    global_config_path().write_text('[embedding]\napi_key = "sk-oops"\n')
    cfg = load_config(tmp_path, env={})
    assert cfg.get("embedding.api_key") is None
    (problem,) = cfg.problems
    assert "stores a secret in embedding.api_key" in problem
    assert "sk-oops" not in problem


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[embedding\n", "is not valid TOML"),
        (
            '[embedding]\nbatch_size = "many"\n',
            "embedding.batch_size = 'many' is not allowed: it must be a whole number of at "
            "least 1; embedding.batch_size stays 32 (default) until that is fixed",
        ),
        (
            '[embedding]\nprovider = "magic"\n',
            "embedding.provider = 'magic' is not allowed: it must be one of onnx, openai, none",
        ),
        ("embedding = 3\n", "must be a [section] table"),
    ],
)
def test_a_bad_file_is_reported_and_memory_keeps_its_defaults(
    tmp_path: Path, text: str, message: str
) -> None:
    global_config_path().parent.mkdir(parents=True, exist_ok=True)
    global_config_path().write_text(text)
    cfg = load_config(tmp_path, env={})
    (problem,) = cfg.problems
    assert problem.startswith(str(global_config_path()))
    assert message in problem
    assert "\n" not in problem
    assert cfg.embedding.provider == "onnx"
    assert cfg.embedding.batch_size == 32


def test_a_bad_value_keeps_the_value_of_the_layer_beneath(tmp_path: Path) -> None:
    set_value(global_config_path(), "index.rrf_k", "30")
    cfg = load_config(tmp_path, env={"MEMLANE_INDEX_RRF_K": "x"})
    assert cfg.index.rrf_k == 30
    assert cfg.problems == [
        "$MEMLANE_INDEX_RRF_K: index.rrf_k = 'x' is not allowed: it must be a whole number "
        "of at least 1; index.rrf_k stays 30 (global) until that is fixed"
    ]


def test_an_unknown_key_in_a_file_is_a_note(tmp_path: Path) -> None:
    global_config_path().parent.mkdir(parents=True, exist_ok=True)
    global_config_path().write_text("[search]\ntopk = 3\n")
    cfg = load_config(tmp_path, env={})
    assert cfg.problems == []
    assert any("unknown setting search.topk is ignored" in n for n in cfg.notices)


def test_an_unknown_key_names_the_closest_one() -> None:
    with pytest.raises(ConfigError) as caught:
        set_value(global_config_path(), "search.topk", "3")
    assert caught.value.hint is not None
    assert "did you mean search.top_k?" in caught.value.hint
