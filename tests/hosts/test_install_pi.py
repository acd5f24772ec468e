"""`memlane install pi` / `memlane uninstall pi`: pi's settings edited exactly and reversibly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from memlane.cli import install_cmds
from memlane.core.errors import ConfigError
from memlane.hosts.pi import install as pi_install

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "agent"
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(directory))
    return directory


@pytest.fixture
def package(tmp_path: Path) -> Path:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "package.json").write_text('{"name": "memlane-pi"}\n')
    return pkg


def test_package_dir_is_the_repository_pi_package() -> None:
    pkg = pi_install.package_dir()
    assert pkg == REPO / "integrations" / "pi"
    manifest = json.loads((pkg / "package.json").read_text())
    assert "pi-package" in manifest["keywords"]
    assert manifest["pi"]["extensions"] == ["./extensions/memlane.ts"]
    assert (pkg / "extensions" / "memlane.ts").is_file()
    for skill in ("recall", "skill-drafting"):
        assert (pkg / "skills" / skill / "SKILL.md").is_file()


def test_agent_dir_honours_pi_coding_agent_dir(tmp_path: Path) -> None:
    assert pi_install.agent_dir({"PI_CODING_AGENT_DIR": str(tmp_path)}) == tmp_path
    assert pi_install.agent_dir({}) == Path.home() / ".pi" / "agent"


def test_install_creates_settings_and_record_then_uninstall_removes_them(
    agent: Path, package: Path
) -> None:
    report = pi_install.install(command="/opt/venv/bin/memlane", package=package)
    settings = agent / "settings.json"
    record = agent / "memlane.json"
    assert report.changed
    assert json.loads(settings.read_text()) == {"packages": [str(package)]}
    recorded = json.loads(record.read_text())
    assert recorded["command"] == "/opt/venv/bin/memlane"
    assert recorded["package"] == str(package)
    assert any(str(settings) in line for line in report.lines)
    assert any("/opt/venv/bin/memlane" in line for line in report.lines)

    undone = pi_install.uninstall(package=package)
    assert undone.changed
    assert not settings.exists()
    assert not record.exists()


def test_install_is_idempotent(agent: Path, package: Path) -> None:
    pi_install.install(command="/x/memlane", package=package)
    before = (agent / "settings.json").read_bytes()
    again = pi_install.install(command="/x/memlane", package=package)
    assert not again.changed
    assert (agent / "settings.json").read_bytes() == before
    assert json.loads(before)["packages"] == [str(package)]
    assert any("already" in line for line in again.lines)


def test_install_keeps_other_settings_and_uninstall_restores_the_bytes(
    agent: Path, package: Path
) -> None:
    agent.mkdir()
    original = {
        "theme": "dark",
        "defaultModel": "fake-big",
        "packages": ["npm:@example/pi-tools@1.0.0", {"source": "../other", "skills": []}],
        "nested": {"z": 1, "a": [1, 2, {"ü": "ß"}]},
        "enableSkillCommands": False,
    }
    text = json.dumps(original, indent=2, ensure_ascii=False) + "\n"
    (agent / "settings.json").write_text(text, encoding="utf-8")

    pi_install.install(command="/x/memlane", package=package)
    installed = json.loads((agent / "settings.json").read_text(encoding="utf-8"))
    assert list(installed) == list(original)
    assert installed["packages"] == [*original["packages"], str(package)]
    for key in ("theme", "defaultModel", "nested", "enableSkillCommands"):
        assert installed[key] == original[key]

    pi_install.uninstall(package=package)
    assert (agent / "settings.json").read_text(encoding="utf-8") == text
    assert not (agent / "memlane.json").exists()


def test_uninstall_drops_a_packages_key_install_created(agent: Path, package: Path) -> None:
    agent.mkdir()
    text = '{\n\t"theme": "light"\n}\n'
    (agent / "settings.json").write_text(text)
    pi_install.install(command="/x/memlane", package=package)
    assert '\t"packages"' in (agent / "settings.json").read_text()  # tab indentation kept
    pi_install.uninstall(package=package)
    assert (agent / "settings.json").read_text() == text


def test_a_relative_entry_for_the_package_counts_as_installed(agent: Path, package: Path) -> None:
    agent.mkdir()
    (agent / "settings.json").write_text(json.dumps({"packages": ["../pkg"]}, indent=2) + "\n")
    report = pi_install.install(command="/x/memlane", package=package)
    assert json.loads((agent / "settings.json").read_text()) == {"packages": ["../pkg"]}
    assert any("already" in line for line in report.lines)
    pi_install.uninstall(package=package)
    assert json.loads((agent / "settings.json").read_text()) == {"packages": []}


def test_project_install_uses_dot_pi(tmp_path: Path, agent: Path, package: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    report = pi_install.install(project, command="/x/memlane", package=package)
    assert report.settings == project / ".pi" / "settings.json"
    assert json.loads(report.settings.read_text()) == {"packages": [str(package)]}
    assert json.loads((project / ".pi" / "memlane.json").read_text())["command"] == "/x/memlane"
    assert not (agent / "settings.json").exists()
    assert any("trust" in line for line in report.lines)
    pi_install.uninstall(project, package=package)
    assert not (project / ".pi" / "settings.json").exists()


def test_broken_settings_are_reported_and_left_alone(agent: Path, package: Path) -> None:
    agent.mkdir()
    (agent / "settings.json").write_text("{not json")
    with pytest.raises(ConfigError, match="not valid JSON"):
        pi_install.install(command="/x/memlane", package=package)
    assert (agent / "settings.json").read_text() == "{not json"
    assert not (agent / "memlane.json").exists()


def test_reinstall_updates_the_recorded_command(agent: Path, package: Path) -> None:
    pi_install.install(command="/old/memlane", package=package)
    report = pi_install.install(command="/new/memlane", package=package)
    assert report.changed
    assert json.loads((agent / "memlane.json").read_text())["command"] == "/new/memlane"
    # uninstall still knows install created the file
    pi_install.uninstall(package=package)
    assert not (agent / "settings.json").exists()


def test_memlane_executable_prefers_the_running_script(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "bin" / "memlane"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    monkeypatch.setattr("sys.argv", [str(script), "install", "pi"])
    assert pi_install.memlane_executable() == str(script)


def test_cli_install_and_uninstall(tmp_path: Path, agent: Path) -> None:
    app = typer.Typer()

    @app.callback()
    def root() -> None:
        pass

    install_cmds.register(app)
    runner = CliRunner()
    result = runner.invoke(app, ["install", "pi"])
    assert result.exit_code == 0, result.output
    assert "settings.json" in result.output
    listed = json.loads((agent / "settings.json").read_text())["packages"]
    assert listed == [str(REPO / "integrations" / "pi")]

    result = runner.invoke(app, ["uninstall", "pi"])
    assert result.exit_code == 0, result.output
    assert not (agent / "settings.json").exists()


@pytest.mark.subprocess
def test_package_dir_in_an_installed_wheel_layout(tmp_path: Path) -> None:
    """The wheel force-includes integrations/pi as memlane/integrations/pi (pyproject.toml)."""
    import shutil
    import subprocess
    import sys

    site = tmp_path / "site"
    shutil.copytree(REPO / "src" / "memlane", site / "memlane")
    shutil.copytree(REPO / "integrations" / "pi", site / "memlane" / "integrations" / "pi")
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "from memlane.hosts.pi.install import package_dir; print(package_dir())",
        ],
        env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    assert out.stdout.strip() == str(site / "memlane" / "integrations" / "pi")
