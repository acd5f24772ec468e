"""`memlane install opencode` / `memlane uninstall opencode`: OpenCode's configuration edited
exactly and reversibly, the plugin written and removed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from memlane.hosts.opencode import install as oc

MEMLANE = str(Path(sys.executable).parent / "memlane")


def env_for(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"HOME": str(tmp_path / "home"), "MEMLANE_HOME": str(tmp_path / "mh"), **extra}


def files(directory: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(directory)): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


ODD = (
    '{\n    "$schema": "https://opencode.ai/config.json",\n    "theme": "тёмная",\n'
    '    "mcp": {"other": {"type": "remote", "url": "https://x.example/mcp"}},\n'
    '    "plugin": ["opencode-wakatime"]\n}'  # no final newline, a 4-space indent
)


def test_install_then_uninstall_restores_every_byte(tmp_path: Path) -> None:
    env = env_for(tmp_path, MEMLANE_AUTO_CONTEXT="off", MEMLANE_NO_HOOKS="1")
    config = oc.config_file(None, env)
    config.parent.mkdir(parents=True)
    config.write_text(ODD, encoding="utf-8")
    (config.parent / "plugins").mkdir()
    (config.parent / "plugins" / "mine.js").write_text("export const Mine = async () => ({})\n")
    before = files(config.parent)

    report = oc.install(None, command=MEMLANE, env=env)
    assert report.changed
    data = json.loads(config.read_text(encoding="utf-8"))
    server = data["mcp"]["memlane"]
    assert server["type"] == "local" and server["command"] == [MEMLANE, "mcp"]
    assert server["environment"] == {
        "MEMLANE_HOME": str(tmp_path / "mh"),
        "MEMLANE_AUTO_CONTEXT": "off",
    }
    assert data["mcp"]["other"] and data["theme"] == "тёмная"
    plugin = (config.parent / "plugins" / "memlane.js").read_text()
    assert oc.plugin_source().as_uri() in plugin and MEMLANE in plugin
    assert '"MEMLANE_HOME"' in plugin

    assert not oc.install(None, command=MEMLANE, env=env).changed  # idempotent
    oc.uninstall(None, env=env)
    assert files(config.parent) == before
    assert not oc.uninstall(None, env=env).changed  # and again: nothing to do
    assert files(config.parent) == before


def test_a_configuration_install_created_goes_again(tmp_path: Path) -> None:
    env = env_for(tmp_path)
    oc.install(None, command=MEMLANE, env=env)
    directory = oc.config_dir(None, env)
    assert sorted(files(directory)) == ["memlane.json", "opencode.json", "plugins/memlane.js"]
    oc.uninstall(None, env=env)
    assert files(directory) == {}
    assert not (directory / "plugins").exists()


def test_project_install_uses_the_project_configuration(tmp_path: Path) -> None:
    env = env_for(tmp_path)
    project = tmp_path / "proj"
    project.mkdir()
    (project / "opencode.json").write_text('{"plugin": ["opencode-wakatime"]}\n')
    before = files(project)
    oc.install(project, command=MEMLANE, env=env)
    data = json.loads((project / "opencode.json").read_text())
    plugin = oc.plugin_file(project, env)
    assert data["plugin"] == ["opencode-wakatime", plugin.as_uri()]
    assert data["mcp"]["memlane"]["environment"]["MEMLANE_HOME"] == str(tmp_path / "mh")
    assert plugin.is_file() and plugin.is_relative_to(tmp_path / "mh")
    assert not (project / ".opencode").exists()  # OpenCode would install its SDK there
    assert not oc.config_dir(None, env).exists()
    oc.uninstall(project, env=env)
    assert files(project) == before
    assert not plugin.parent.exists()


def test_a_broken_configuration_is_refused_with_what_to_do(tmp_path: Path) -> None:
    from memlane.core.errors import ConfigError

    env = env_for(tmp_path)
    config = oc.config_file(None, env)
    config.parent.mkdir(parents=True)
    config.write_text("{ not json")
    with pytest.raises(ConfigError, match="not valid JSON") as caught:
        oc.install(None, command=MEMLANE, env=env)
    assert caught.value.hint
    assert config.read_text() == "{ not json"


def test_the_cli_commands(tmp_path: Path) -> None:
    env = {
        "PATH": "/usr/bin:/bin",
        **env_for(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
    }
    out = subprocess.run(
        [MEMLANE, "install", "opencode"], capture_output=True, text=True, env=env, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "xdg" / "opencode" / "plugins" / "memlane.js").is_file()
    out = subprocess.run(
        [MEMLANE, "uninstall", "opencode"], capture_output=True, text=True, env=env, timeout=60
    )
    assert out.returncode == 0 and "removed" in out.stdout
    assert not (tmp_path / "xdg" / "opencode" / "opencode.json").exists()
