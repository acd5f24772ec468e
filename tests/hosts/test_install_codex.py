"""``memlane install codex`` / ``uninstall codex``: one marked block in config.toml, byte-exact removal."""

from __future__ import annotations

import hashlib
import json
import tomllib
from pathlib import Path

import pytest

from memlane.core.errors import ConfigError
from memlane.hosts.codex.install import HOOKS, hook_handler, install, trusted_hash, uninstall
from memlane.hosts.mcp.config import server_env

PYTHON = "/opt/py/bin/python3"
MEMLANE = "/opt/py/bin/memlane"
# A user's own config: comments, a hook of theirs, a table after it, no final newline.
USER_CONFIG = """\
# my codex settings
model = "o4-mini"   # the cheap one

[features]
hooks = true

[[hooks.SessionStart]]
[[hooks.SessionStart.hooks]]
type = "command"
command = "echo mine"

[projects."/home/me/work"]
trust_level = "trusted\""""


def env_for(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"HOME": str(tmp_path), "MEMLANE_HOME": str(tmp_path / "mh"), **extra}


def config_of(tmp_path: Path) -> Path:
    return tmp_path / ".codex" / "config.toml"


def do_install(tmp_path: Path, **extra: str) -> list[str]:
    return install(env_for(tmp_path, **extra), python=PYTHON, memlane=MEMLANE).lines


def test_install_appends_trusted_hooks_and_the_server_and_uninstall_restores_the_bytes(
    tmp_path: Path,
) -> None:
    config = config_of(tmp_path)
    config.parent.mkdir(parents=True)
    config.write_text(USER_CONFIG)
    before = config.read_bytes()

    do_install(tmp_path, MEMLANE_CAPTURE="off")
    text = config.read_text()
    assert text.startswith(USER_CONFIG + "\n")  # the user's bytes untouched, first
    data = tomllib.loads(text)
    server = data["mcp_servers"]["memlane"]
    assert server["command"] == MEMLANE and server["args"] == ["mcp"]
    assert server["env"] == {"MEMLANE_HOME": str(tmp_path / "mh"), "MEMLANE_CAPTURE": "off"}
    for event, label, timeout, fields in HOOKS:
        groups = data["hooks"][event]
        ours = groups[-1]["hooks"][0]
        # A call of the running server's hidden hook tool, no process per hook.
        assert (ours["type"], ours["server"], ours["tool"]) == ("mcp_tool", "memlane", "codex_hook")
        assert ours["timeout"] == timeout and ours == hook_handler(timeout, fields)
        assert ours["input"]["hook_event_name"] == "${hook_event_name}"
        assert ours["input"]["session_id"] == "${session_id}"
        index = len(groups) - 1  # after the user's own SessionStart group
        key = f"{config.absolute()}:{label}:{index}:0"
        assert data["hooks"]["state"][key]["trusted_hash"] == trusted_hash(label, ours)
    assert data["hooks"]["SessionStart"][0]["hooks"][0]["command"] == "echo mine"
    skill = tmp_path / ".codex" / "skills" / "memlane-recall" / "SKILL.md"
    assert skill.read_text().startswith("---\nname: memlane-recall\n")

    # again: nothing changes
    after = config.read_bytes()
    assert any("already" in line for line in do_install(tmp_path, MEMLANE_CAPTURE="off"))
    assert config.read_bytes() == after

    uninstall(env_for(tmp_path))
    assert config.read_bytes() == before
    assert not (tmp_path / ".codex" / "skills").exists()  # install had created it
    assert not (tmp_path / ".codex" / "memlane-install.json").exists()


def test_a_config_install_created_is_removed_and_what_codex_added_later_stays(
    tmp_path: Path,
) -> None:
    do_install(tmp_path)
    config = config_of(tmp_path)
    assert config.is_file()
    uninstall(env_for(tmp_path))
    assert not config.exists()

    do_install(tmp_path)
    with config.open("a") as handle:  # Codex trusts a project later
        handle.write('\n[projects."/p"]\ntrust_level = "trusted"\n')
    uninstall(env_for(tmp_path))
    assert config.read_text() == '\n[projects."/p"]\ntrust_level = "trusted"\n'


def test_a_moved_memlane_replaces_the_block(tmp_path: Path) -> None:
    do_install(tmp_path)
    install(env_for(tmp_path), python=PYTHON, memlane="/new/bin/memlane")
    text = config_of(tmp_path).read_text()
    assert text.count("# >>> memlane") == 1 and "/new/bin/memlane" in text and MEMLANE not in text


def test_refusals_say_what_to_do(tmp_path: Path) -> None:
    config = config_of(tmp_path)
    config.parent.mkdir(parents=True)
    config.write_text('[mcp_servers.memlane]\ncommand = "memlane"\n')
    with pytest.raises(ConfigError) as info:
        do_install(tmp_path)
    assert "codex mcp remove memlane" in (info.value.hint or "")
    config.write_text("model = [unclosed\n")
    with pytest.raises(ConfigError) as info:
        do_install(tmp_path)
    assert "not valid TOML" in info.value.message
    assert config.read_text() == "model = [unclosed\n"  # untouched


def test_dry_run_writes_nothing(tmp_path: Path) -> None:
    report = install(env_for(tmp_path), python=PYTHON, memlane=MEMLANE, dry_run=True)
    assert "[mcp_servers.memlane]" in report.block
    assert not (tmp_path / ".codex").exists()


def test_uninstall_without_install_says_so(tmp_path: Path) -> None:
    assert "was not installed" in uninstall(env_for(tmp_path)).lines[0]


def test_hooks_off_in_the_config_is_pointed_out(tmp_path: Path) -> None:
    config = config_of(tmp_path)
    config.parent.mkdir(parents=True)
    config.write_text("[features]\nhooks = false\n")
    assert any("hooks are off" in line for line in do_install(tmp_path))


def test_the_trust_hash_is_codexs() -> None:
    # SHA-256 of the hook's identity as compact JSON, keys sorted at every level (what
    # Codex 0.171 compares; it ran hooks installed with these without asking,
    # tests/e2e/test_codex.py).
    identity = (
        '{"event_name":"stop","hooks":[{"input":{"b":"${b}","a":"${a}"},'
        '"server":"memlane","timeout":30,"tool":"codex_hook","type":"mcp_tool"}]}'
    ).replace('{"b":"${b}","a":"${a}"}', '{"a":"${a}","b":"${b}"}')
    expected = "sha256:" + hashlib.sha256(identity.encode()).hexdigest()
    handler = {
        "type": "mcp_tool",
        "tool": "codex_hook",
        "server": "memlane",
        "timeout": 30,
        "input": {"b": "${b}", "a": "${a}"},
    }
    assert trusted_hash("stop", handler) == expected


def test_server_env_carries_the_home_and_what_keys_the_engine(tmp_path: Path) -> None:
    env = server_env(
        {
            "HOME": str(tmp_path),
            "MEMLANE_CAPTURE": "off",
            "MEMLANE_LLM_API_KEY": "sk-secret",
            "MEMSEARCH_TOP_K": "7",
            "CODEX_HOME": "/c",
            "PATH": "/bin",
        }
    )
    assert env == {
        "MEMLANE_HOME": str((tmp_path / ".memlane").resolve()),
        "CODEX_HOME": "/c",
        "MEMLANE_CAPTURE": "off",
        "MEMSEARCH_TOP_K": "7",
    }
    assert json.dumps(env)  # plain strings


def test_uninstall_after_codex_rewrote_the_server_tables(tmp_path: Path) -> None:
    """What `codex mcp add foo -- echo hi` (0.171) does to the block: the marker above
    the first [mcp_servers.*] table dropped, the env keys rewritten, foo's table put
    after memlane's. Uninstall takes memlane's tables out and keeps foo."""
    config = config_of(tmp_path)
    config.parent.mkdir(parents=True)
    config.write_text(USER_CONFIG)
    do_install(tmp_path)
    text = config.read_text()
    begin = text.index("# >>> memlane")
    env_at = text.index("[mcp_servers.memlane.env]\n") + len("[mcp_servers.memlane.env]\n")
    env_end = text.index("\n\n", env_at)
    rewritten = (
        text[:begin]
        + text[begin:env_at].split("\n", 1)[1]
        + f'MEMLANE_HOME = "{tmp_path / "mh"}"\n'
        + '\n[mcp_servers.foo]\ncommand = "echo"\nargs = ["hi"]'
        + text[env_end:]
    )
    tomllib.loads(rewritten)
    config.write_text(rewritten)
    uninstall(env_for(tmp_path))
    left = tomllib.loads(config.read_text())
    assert left["mcp_servers"] == {"foo": {"command": "echo", "args": ["hi"]}}
    assert [g["hooks"][0]["command"] for g in left["hooks"]["SessionStart"]] == ["echo mine"]
    assert set(left["hooks"]) == {"SessionStart"}
    assert "memlane" not in config.read_text()
    assert left["projects"] == {"/home/me/work": {"trust_level": "trusted"}}


def test_uninstall_finds_an_older_installs_command_hooks(tmp_path: Path) -> None:
    """An install from before the hooks went through the MCP server ran a hook command;
    its record names it, and uninstall still finds those tables once Codex rewrote the
    file (the markers gone)."""
    config = config_of(tmp_path)
    config.parent.mkdir(parents=True)
    command = f"{PYTHON} -I -S /old/memlane/hosts/codex/hook.py"
    old = (
        '[mcp_servers.memlane]\ncommand = "memlane"\nargs = ["mcp"]\n\n'
        '[[hooks.Stop]]\n[[hooks.Stop.hooks]]\ntype = "command"\n'
        f"command = {json.dumps(command)}\ntimeout = 30\n\n"
        '[[hooks.Stop]]\n[[hooks.Stop.hooks]]\ntype = "command"\ncommand = "echo mine"\n'
    )
    config.write_text(old)
    record = {"config": str(config), "inserted": "gone", "hook_command": command}
    (config.parent / "memlane-install.json").write_text(json.dumps(record))
    uninstall(env_for(tmp_path))
    left = tomllib.loads(config.read_text())
    assert "mcp_servers" not in left
    assert [g["hooks"][0]["command"] for g in left["hooks"]["Stop"]] == ["echo mine"]
