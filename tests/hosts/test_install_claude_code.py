"""`memlane install claude-code` / `uninstall claude-code`: both modes, both scopes, exact restore."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from memlane.cli import install_cmds
from memlane.core.errors import ConfigError
from memlane.hosts.claude_code import install as cc
from memlane.hosts.claude_code import plugin, trust
from memlane.hosts.claude_code.hook import LIMITS_S

PYTHON = "/opt/venv/bin/python"
MEMLANE = "/opt/venv/bin/memlane"
EVENTS = ["SessionStart", "UserPromptSubmit", "Stop", "PreCompact"]  # no SessionEnd: ADR 0023


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "home"
    directory.mkdir()
    monkeypatch.setenv("HOME", str(directory))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    return directory


def _install(project: Path | None = None, mode: str = "plugin") -> cc.InstallReport:
    return cc.install(project, mode=mode, python=PYTHON, memlane=MEMLANE)


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


# A user's settings in a formatting json.dumps would not produce.
USER_SETTINGS = (
    '{"model": "opus",\n'
    '  "permissions": {"allow": ["Bash(ls)"], "deny": []},\n'
    '  "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]},\n'
    '  "autoMemoryEnabled": true, "note": "ünïcode"}\n'
)


def test_plugin_mode_enables_the_plugin_from_user_settings(home: Path) -> None:
    report = _install()
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    directory = report.plugin_dir
    assert directory is not None and directory.is_relative_to(Path(cc.default_plugin_dir()).parent)
    assert settings == {
        "extraKnownMarketplaces": {
            "memlane": {"source": {"source": "directory", "path": str(directory)}}
        },
        "enabledPlugins": {"memlane@memlane": True},
        "permissions": {"allow": ["mcp__plugin_memlane_memlane", "Skill(memlane:recall)"]},
    }
    manifest = json.loads((directory / ".claude-plugin" / "plugin.json").read_text())
    market = json.loads((directory / ".claude-plugin" / "marketplace.json").read_text())
    assert manifest["name"] == "memlane"
    assert market["name"] == "memlane" and market["plugins"][0]["source"] == "./"
    hooks = json.loads((directory / "hooks" / "hooks.json").read_text())["hooks"]
    assert list(hooks) == EVENTS
    command = f"{PYTHON} -I -S {plugin.HOOK_SCRIPT}"
    for event, groups in hooks.items():
        (hook,) = groups[0]["hooks"]
        assert hook["command"] == command and hook["timeout"] > 0
        assert "async" not in hook  # Claude Code cancels async hooks when `claude -p` ends
        assert hook["timeout"] > LIMITS_S[event]  # the hook client gives up first
    assert hooks["SessionStart"][0]["matcher"] == "startup|resume|clear|compact"
    mcp = json.loads((directory / ".mcp.json").read_text())
    assert mcp == {
        "mcpServers": {"memlane": {"type": "stdio", "command": MEMLANE, "args": ["mcp"]}}
    }
    skill = (directory / "skills" / "recall" / "SKILL.md").read_text()
    assert "context: fork" in skill.split("---")[1]
    for tool in ("memory_search", "memory_expand", "memory_transcript"):
        assert f"mcp__plugin_memlane_memlane__{tool}" in skill
    memory_command = (directory / "commands" / "memory.md").read_text()
    assert f"{MEMLANE} memory on" in memory_command and "@MEMLANE@" not in memory_command
    assert "$ARGUMENTS" in skill  # /memlane:recall <question> is the skill itself
    # a command named recall would hide the skill in Claude Code 2.1
    assert not (directory / "commands" / "recall.md").exists()


def test_install_is_idempotent_and_uninstall_restores_the_bytes(home: Path) -> None:
    claude = home / ".claude"
    claude.mkdir()
    (claude / "settings.json").write_text(USER_SETTINGS, encoding="utf-8")
    before = _tree(home)

    first = _install()
    assert first.changed
    installed = _tree(home)
    again = _install()
    assert not again.changed
    assert any("already installed" in line for line in again.lines)
    assert _tree(home) == installed

    data = json.loads((claude / "settings.json").read_text())
    assert data["autoMemoryEnabled"] is True  # Claude Code's own memory stays on
    assert data["permissions"]["allow"] == [
        "Bash(ls)",
        "mcp__plugin_memlane_memlane",
        "Skill(memlane:recall)",
    ]
    assert data["hooks"]["Stop"][0]["hooks"][0]["command"] == "notify-send done"

    cc.uninstall()
    assert _tree(home) == before
    assert not cc.default_plugin_dir().exists()


def test_uninstall_keeps_what_the_user_changed_meanwhile(home: Path) -> None:
    claude = home / ".claude"
    claude.mkdir()
    (claude / "settings.json").write_text(USER_SETTINGS, encoding="utf-8")
    _install()
    data = json.loads((claude / "settings.json").read_text())
    data["theme"] = "light"
    data["permissions"]["allow"].append("Bash(git status)")
    (claude / "settings.json").write_text(json.dumps(data, indent=2))
    cc.uninstall()
    after = json.loads((claude / "settings.json").read_text())
    assert after["theme"] == "light"
    assert after["permissions"]["allow"] == ["Bash(ls)", "Bash(git status)"]
    assert "enabledPlugins" not in after and "extraKnownMarketplaces" not in after


def test_a_rule_the_user_already_had_survives_uninstall(home: Path) -> None:
    claude = home / ".claude"
    claude.mkdir()
    text = '{\n  "permissions": {\n    "allow": [\n      "mcp__memlane"\n    ]\n  }\n}\n'
    (claude / "settings.json").write_text(text)
    _install(mode="settings")
    assert json.loads((claude / "settings.json").read_text())["permissions"]["allow"] == [
        "mcp__memlane",
        "Skill(recall)",
    ]
    cc.uninstall()
    assert (claude / "settings.json").read_text() == text


def test_settings_mode_user_scope(home: Path) -> None:
    claude_json = home / ".claude.json"
    state = '{\n  "numStartups": 3,\n  "projects": {}\n}\n'
    claude_json.write_text(state)
    before = _tree(home)
    report = _install(mode="settings")
    assert report.mode == "settings"
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    assert list(settings["hooks"]) == EVENTS
    assert settings["permissions"]["allow"] == ["mcp__memlane", "Skill(recall)"]
    assert "enabledPlugins" not in settings
    servers = json.loads(claude_json.read_text())["mcpServers"]
    assert servers["memlane"]["command"] == MEMLANE
    assert (home / ".claude" / "skills" / "recall" / "SKILL.md").is_file()
    assert (home / ".claude" / "commands" / "memory.md").is_file()
    assert not cc.default_plugin_dir().exists()
    assert not _install(mode="settings").changed

    cc.uninstall()
    assert _tree(home) == before


def test_settings_mode_project_scope(home: Path, project: Path) -> None:
    (project / ".mcp.json").write_text('{"mcpServers": {"other": {"command": "x"}}}')
    before = _tree(project)
    report = _install(project, mode="settings")
    assert report.settings == project / ".claude" / "settings.json"
    settings = json.loads(report.settings.read_text())
    assert settings["enabledMcpjsonServers"] == ["memlane"]
    assert list(settings["hooks"]) == EVENTS
    servers = json.loads((project / ".mcp.json").read_text())["mcpServers"]
    assert list(servers) == ["other", "memlane"]
    assert (project / ".claude" / "commands" / "memory.md").is_file()
    assert any("trust" in line for line in report.lines)
    assert not (home / ".claude").exists() and not (home / ".claude.json").exists()
    cc.uninstall(project)
    assert _tree(project) == before
    assert not (project / ".claude").exists()


def test_plugin_mode_project_scope_shares_the_plugin_directory(home: Path, project: Path) -> None:
    _install(project)
    _install()
    directory = cc.default_plugin_dir()
    assert json.loads((project / ".claude" / "settings.json").read_text())["enabledPlugins"]
    cc.uninstall(project)
    assert directory.is_dir()  # the user settings still load it
    cc.uninstall()
    assert not directory.exists()
    assert not (project / ".claude").exists()


def test_switching_mode_takes_the_other_mode_out(home: Path) -> None:
    _install()
    _install(mode="settings")
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    assert "enabledPlugins" not in settings and "hooks" in settings
    assert settings["permissions"]["allow"] == ["mcp__memlane", "Skill(recall)"]
    assert not cc.default_plugin_dir().exists()
    _install()
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    assert "hooks" not in settings and settings["enabledPlugins"]
    assert not (home / ".claude" / "skills").exists()
    assert not (home / ".claude.json").exists()
    cc.uninstall()
    assert not (home / ".claude").exists()


def test_reinstall_with_another_python_replaces_the_hooks(home: Path) -> None:
    _install(mode="settings")
    cc.install(mode="settings", python="/new/python", memlane=MEMLANE)
    hooks = json.loads((home / ".claude" / "settings.json").read_text())["hooks"]
    commands = [g["hooks"][0]["command"] for groups in hooks.values() for g in groups]
    assert len(commands) == len(EVENTS)
    assert all(c.startswith("/new/python -I -S ") for c in commands)


def test_claude_config_dir_is_honoured(home: Path, tmp_path: Path) -> None:
    config = tmp_path / "config"
    env = {"HOME": str(home), "CLAUDE_CONFIG_DIR": str(config)}
    report = cc.install(mode="settings", env=env, python=PYTHON, memlane=MEMLANE)
    assert report.settings == config / "settings.json"
    assert json.loads((config / ".claude.json").read_text())["mcpServers"]["memlane"]
    assert (config / "skills" / "recall" / "SKILL.md").is_file()
    assert not (home / ".claude").exists() and not (home / ".claude.json").exists()
    cc.uninstall(env=env)
    assert not config.exists() or not any(config.iterdir())


def test_a_skill_of_the_users_is_never_overwritten(home: Path) -> None:
    mine = home / ".claude" / "skills" / "recall" / "SKILL.md"
    mine.parent.mkdir(parents=True)
    mine.write_text("my own recall skill\n")
    report = _install(mode="settings")
    assert mine.read_text() == "my own recall skill\n"
    assert any("kept your" in line for line in report.lines)
    cc.uninstall()
    assert mine.read_text() == "my own recall skill\n"


def test_broken_settings_are_reported_and_left_alone(home: Path) -> None:
    (home / ".claude").mkdir()
    (home / ".claude" / "settings.json").write_text("{not json")
    with pytest.raises(ConfigError, match="not valid JSON"):
        _install()
    assert (home / ".claude" / "settings.json").read_text() == "{not json"
    assert not (home / ".claude" / cc.RECORD_NAME).exists()


def test_uninstall_without_install_says_so(home: Path) -> None:
    report = cc.uninstall()
    assert not report.changed
    assert any("not installed" in line for line in report.lines)


def test_an_unknown_mode_is_refused(home: Path) -> None:
    with pytest.raises(ConfigError, match="unknown install mode"):
        _install(mode="magic")


def test_each_hook_timeout_is_its_client_limit_plus_the_margin() -> None:
    from memlane.hosts.claude_code.hook import LIMITS_S

    groups = plugin.hook_groups("cmd")
    # SessionEnd keeps a limit for the installs made before it went (ADR 0023).
    assert set(groups) == set(LIMITS_S) - {"SessionEnd"}
    for event in groups:
        limit = LIMITS_S[event]
        timeout = groups[event][0]["hooks"][0]["timeout"]
        assert timeout == math.ceil(limit) + plugin.TIMEOUT_MARGIN_S


# -- the CLI, in process ---------------------------------------------------------


def _app() -> typer.Typer:
    app = typer.Typer()
    install_cmds.register(app)
    return app


def test_cli_install_and_uninstall_claude_code(home: Path, project: Path) -> None:
    runner = CliRunner()
    out = runner.invoke(_app(), ["install", "claude-code", "--mode", "settings"])
    assert out.exit_code == 0, out.output
    assert "settings.json" in out.output and "hook.py" in out.output
    assert json.loads((home / ".claude" / "settings.json").read_text())["hooks"]
    again = runner.invoke(_app(), ["install", "claude-code", "--mode", "settings", "--user"])
    assert "already installed" in again.output
    out = runner.invoke(_app(), ["uninstall", "claude-code"])
    assert out.exit_code == 0 and "removed" in out.output
    assert not (home / ".claude").exists()


def test_cli_refuses_project_and_user_together(home: Path) -> None:
    out = CliRunner().invoke(_app(), ["install", "claude-code", "--project", "--user"])
    assert out.exit_code != 0
    assert not (home / ".claude").exists()


def test_uninstall_drops_the_marketplace_claude_code_registered(home: Path) -> None:
    report = _install()
    state = home / ".claude" / "plugins" / "known_marketplaces.json"
    state.parent.mkdir(parents=True)
    # What Claude Code writes once it has read the settings (2.1.332), beside another one.
    other = {"source": {"source": "github", "repo": "someone/tools"}}
    ours = {"source": {"source": "directory", "path": str(report.plugin_dir)}}
    state.write_text(json.dumps({"tools": other, "memlane": ours}, indent=2) + "\n")
    lines = cc.uninstall().lines
    assert json.loads(state.read_text()) == {"tools": other}
    assert any("marketplace" in line for line in lines)


def test_the_record_is_private_and_keeps_no_copy_of_claude_json(home: Path) -> None:
    (home / ".claude.json").write_text(
        '{\n  "oauthAccount": {"emailAddress": "me@example.com"}\n}\n'
    )
    report = _install(mode="settings")
    assert report.record.stat().st_mode & 0o077 == 0
    assert "me@example.com" not in report.record.read_text()
    cc.uninstall()
    assert "mcpServers" not in json.loads((home / ".claude.json").read_text())


# ---- trust: a project install loads nothing until Claude Code trusts the folder ------------


def _trust(home: Path, folder: Path) -> None:
    """What accepting Claude Code's trust dialog in *folder* records (seen with the real
    binary: tests/e2e/test_claude_trust.py)."""
    state = home / ".claude.json"
    data = json.loads(state.read_text()) if state.exists() else {}
    data.setdefault("projects", {})[str(folder)] = {"hasTrustDialogAccepted": True}
    state.write_text(json.dumps(data))


@pytest.mark.parametrize(
    ("mode", "effect"),
    [
        ("plugin", "Claude Code loads nothing of memlane there: no hooks, no tools, no skill"),
        ("settings", "memlane's tools there ask for permission"),
    ],
)
def test_a_project_install_in_an_untrusted_folder_says_so_and_how_to_trust_it(
    home: Path, project: Path, mode: str, effect: str
) -> None:
    report = _install(project, mode=mode)
    (line,) = [line for line in report.lines if "has not trusted" in line]
    assert line.startswith(f"Claude Code has not trusted {project} yet: until you trust it, ")
    assert effect in line
    assert f"run `claude` in {project} once and accept the trust dialog" in line
    assert "memlane never trusts a folder for you" in line
    assert not (home / ".claude.json").exists()  # never trusted on the user's behalf
    found = cc.installed([project])
    assert found is not None and found.scope == "project" and found.mode == mode
    assert found.trusted_by is None and found.problem is not None
    assert f"has not trusted {project}" in found.problem and effect in found.problem
    # Again, once the folder is trusted: said, and no problem left.
    _trust(home, project)
    again = _install(project, mode=mode)
    assert f"Claude Code trusts {project} ({project}), so it loads memlane there" in again.lines
    found = cc.installed([project])
    assert found is not None and found.trusted_by == project and found.problem is None


def test_trust_covers_a_folder_below_the_trusted_one_up_to_its_git_root(
    home: Path, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    inner = repo / "services" / "api"
    inner.mkdir(parents=True)
    (repo / ".git").mkdir()
    _trust(home, tmp_path)  # above the git root: not this repository's trust
    assert trust.trusted_by(inner) is None
    _trust(home, repo)
    assert trust.trusted_by(inner) == repo
    outside = tmp_path / "plain" / "dir"  # no git root: every folder above counts
    outside.mkdir(parents=True)
    assert trust.trusted_by(outside) == tmp_path


def test_claude_config_dir_holds_the_trust_record(
    home: Path, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "claude-config"
    config.mkdir()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    _trust(home, project)
    assert trust.trusted_by(project) is None
    _trust(config, project)
    assert trust.trusted_by(project) == project


def test_a_user_install_is_reported_without_a_trust_problem(home: Path, project: Path) -> None:
    _install()
    found = cc.installed([project])
    assert found is not None and found.scope == "user" and found.problem is None
    assert found.line() == f"installed for you (plugin mode, {home / '.claude' / 'settings.json'})"
    cc.uninstall()
    assert cc.installed([project]) is None


@pytest.mark.parametrize("mode", ["plugin", "settings"])
def test_installing_again_drops_the_session_end_hook_of_an_older_install(
    home: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """Installs before ADR 0023 had a SessionEnd hook; running install again takes it out."""
    with monkeypatch.context() as patch:
        patch.setattr(plugin, "HOOK_EVENTS", (*plugin.HOOK_EVENTS, ("SessionEnd", None, 3)))
        _install(mode=mode)
    hooks_file = (
        cc.default_plugin_dir() / "hooks" / "hooks.json"
        if mode == "plugin"
        else home / ".claude" / "settings.json"
    )
    assert "SessionEnd" in json.loads(hooks_file.read_text())["hooks"]
    _install(mode=mode)
    assert list(json.loads(hooks_file.read_text())["hooks"]) == EVENTS
    cc.uninstall()
    assert not (home / ".claude").exists()
