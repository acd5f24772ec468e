"""``memlane install codex`` / ``memlane uninstall codex``.

Codex reads its user configuration from ``$CODEX_HOME/config.toml``
(default ``~/.codex``). Install appends one block to it, between two marker
comments, holding:

- ``[mcp_servers.memlane]``: the stdio server (``memlane mcp``) with an
  ``env`` carrying ``MEMLANE_HOME`` and the other variables that key
  memlane's engine (hosts/mcp/config.py ``server_env``): Codex starts MCP
  servers with a short list of variables only;
- the hooks, inline ``[[hooks.<Event>]]`` tables: SessionStart,
  UserPromptSubmit, Stop and PreCompact, each a call of the server's
  unlisted ``codex_hook`` tool (``type = "mcp_tool"``) with the fields of the
  hook's input memlane reads, which Codex fills in: the already running
  server hands them to the warm engine, no process is started per hook
  (docs/adr/0038-codex-hooks-through-the-mcp-server.md);
- ``[hooks.state."<config.toml>:<event>:<group>:0"]`` with each hook's
  ``trusted_hash``: Codex runs a user's hook only once it is trusted, and
  the hash is Codex's own (``trusted_hash``) of the hook as written, so
  installing is the user's review (docs/adr/0036-codex-host.md).

It also writes the recall skill to ``$CODEX_HOME/skills/memlane-recall/``.
The record ``memlane-install.json`` beside config.toml keeps the exact text
appended and what was created; uninstall takes that text out (the file is
then byte for byte what it was, or removed when install created it), the
skill and the record. Install again changes nothing, or replaces the block
when something moved (a new Python, another ``MEMLANE_HOME``).
"""

from __future__ import annotations

import hashlib
import json
import shlex
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memlane.core.atomic import write_atomic
from memlane.core.errors import ConfigError
from memlane.hosts.codex.toml_block import BEGIN, END, SERVER_KEY, without_block
from memlane.hosts.mcp.config import server_env
from memlane.hosts.mcp.tools import CODEX_HOOK_TOOL
from memlane.hosts.settings_json import read_record
from memlane.transcripts.codex import codex_home

CONFIG_NAME = "config.toml"
RECORD_NAME = "memlane-install.json"
SKILL_NAME = "memlane-recall"
#: The line that marks a hook table as memlane's (uninstall finds them by it).
HOOK_TOOL_LINE = f"tool = {json.dumps(CODEX_HOOK_TOOL)}"
SKILL_FILE = Path(__file__).with_name("SKILL.md")
#: The hook input fields every event's call carries (hosts/codex/events.py reads them).
COMMON_FIELDS = ("hook_event_name", "session_id", "transcript_path", "cwd")
#: (Codex's event name, its key label in ``hooks.state``, timeout in seconds, the
#: fields of its input memlane reads besides the common ones). The timeouts are above
#: the hook client's own limits (hosts/claude_code/hook_client.py LIMITS_S), so Codex
#: never has to give up on a call. Codex fails a hook whose template names a field its
#: input lacks, so only fields Codex 0.171 always sends are named.
HOOKS: tuple[tuple[str, str, int, tuple[str, ...]], ...] = (
    ("SessionStart", "session_start", 30, ("source",)),
    ("UserPromptSubmit", "user_prompt_submit", 10, ("turn_id", "prompt")),
    ("Stop", "stop", 30, ("turn_id", "last_assistant_message", "stop_hook_active")),
    ("PreCompact", "pre_compact", 10, ("turn_id",)),
)


@dataclass
class InstallReport:
    config: Path
    record: Path
    changed: bool
    block: str = ""
    lines: list[str] = field(default_factory=list)


def hook_input(fields: tuple[str, ...]) -> dict[str, str]:
    """The ``input`` template of one event's hook: each field as Codex's placeholder,
    which Codex replaces with the value of the hook input's field (its JSON type kept)."""
    return {name: "${" + name + "}" for name in (*COMMON_FIELDS, *fields)}


def hook_handler(timeout: int, fields: tuple[str, ...]) -> dict[str, Any]:
    """One hook as Codex normalises it: what ``trusted_hash`` hashes."""
    return {
        "type": "mcp_tool",
        "server": SERVER_KEY,
        "tool": CODEX_HOOK_TOOL,
        "input": hook_input(fields),
        "timeout": timeout,
    }


def mcp_command(memlane: str | None = None, python: str | None = None) -> list[str]:
    from memlane.hosts.claude_code.plugin import mcp_server

    server = mcp_server(memlane, python)
    return [str(server["command"]), *[str(a) for a in server["args"]]]


def _canonical(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _canonical(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    return value


def trusted_hash(label: str, handler: dict[str, Any]) -> str:
    """Codex's trust hash of a hook group with no matcher and one *handler*: SHA-256 of
    its normalised identity as compact JSON with sorted keys."""
    identity = {"event_name": label, "hooks": [handler]}
    text = json.dumps(_canonical(identity), separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _toml(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string


def _parse(text: str, path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"{path} is not valid TOML ({exc})",
            "fix the file (Codex cannot read it either), then run `memlane install codex` again",
        ) from exc


def _inline_table(values: dict[str, str]) -> str:
    return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in values.items()) + " }"


def render_block(config: Path, original: str, server: list[str], env: dict[str, str]) -> str:
    """The text to append to *original*: the separator it needs, then the marked block."""
    parsed = _parse(original, config)
    servers = parsed.get("mcp_servers")
    if isinstance(servers, dict) and SERVER_KEY in servers:
        raise ConfigError(
            f"{config} already has an MCP server named memlane",
            "remove it (`codex mcp remove memlane`), then run `memlane install codex` again",
        )
    hooks = parsed.get("hooks") if isinstance(parsed.get("hooks"), dict) else {}
    exe, *args = server
    lines = [BEGIN, f"[mcp_servers.{SERVER_KEY}]", f"command = {_toml(exe)}"]
    lines.append("args = [" + ", ".join(_toml(a) for a in args) + "]")
    lines.append("")
    lines.append(f"[mcp_servers.{SERVER_KEY}.env]")
    lines += [f"{_toml(k)} = {_toml(v)}" for k, v in env.items()]
    states = []
    for event, label, timeout, fields in HOOKS:
        existing = hooks.get(event) if isinstance(hooks, dict) else None
        group = len(existing) if isinstance(existing, list) else 0
        lines += ["", f"[[hooks.{event}]]", f"[[hooks.{event}.hooks]]", 'type = "mcp_tool"']
        lines += [f"server = {_toml(SERVER_KEY)}", HOOK_TOOL_LINE]
        lines += [f"input = {_inline_table(hook_input(fields))}", f"timeout = {timeout}"]
        key = f"{config}:{label}:{group}:0"
        states.append((key, trusted_hash(label, hook_handler(timeout, fields))))
    for key, digest in states:
        lines += ["", f"[hooks.state.{_toml(key)}]", f"trusted_hash = {_toml(digest)}"]
    lines.append(END)
    separator = "\n" if original and not original.endswith("\n") else ""
    if original.strip():
        separator += "\n"
    block = separator + "\n".join(lines) + "\n"
    _parse(original + block, config)  # a file Codex can read, or an error that says why
    return block


def state_keys(config: Path, original: str) -> list[str]:
    """The ``hooks.state`` keys of memlane's hooks appended to *original*."""
    parsed = _parse(original, config)
    hooks = parsed.get("hooks") if isinstance(parsed.get("hooks"), dict) else {}
    keys = []
    for event, label, _, _ in HOOKS:
        existing = hooks.get(event) if isinstance(hooks, dict) else None
        group = len(existing) if isinstance(existing, list) else 0
        keys.append(f"{config}:{label}:{group}:0")
    return keys


def _skill_text(memlane: str) -> str:
    return SKILL_FILE.read_text(encoding="utf-8").replace("{{MEMLANE}}", memlane)


def install(
    env: dict[str, str] | None = None,
    *,
    python: str | None = None,
    memlane: str | None = None,
    dry_run: bool = False,
) -> InstallReport:
    """Install memlane into Codex (see the module docstring). Idempotent."""
    import os

    environ = dict(os.environ if env is None else env)
    base = codex_home(environ).absolute()
    config = base / CONFIG_NAME
    record_path = base / RECORD_NAME
    record = read_record(record_path)
    existed = config.is_file()
    current = config.read_text(encoding="utf-8") if existed else ""
    original, found = without_block(current, record) if record else (current, False)
    server = mcp_command(memlane, python)
    block = render_block(config, original, server, server_env(environ))
    report = InstallReport(config, record_path, False, block)
    if dry_run:
        report.lines.append(f"would append to {config}:")
        report.lines.append(block.rstrip("\n"))
        return report
    created = bool(record.get("created_file")) if record else not existed
    skill_dir = base / "skills" / SKILL_NAME
    skill_text = _skill_text(server[0] if len(server) == 1 else shlex.join(server))
    skill_path = skill_dir / "SKILL.md"
    if original + block != current:
        base.mkdir(parents=True, exist_ok=True)
        write_atomic(config, original + block)
        report.changed = True
        verb = "updated memlane's block in" if found else "added memlane's hooks and MCP server to"
        report.lines.append(f"{verb} {config}")
    skills_created = (
        bool(record.get("skills_dir_created")) if record else not skill_dir.parent.exists()
    )
    if not skill_path.is_file() or skill_path.read_text(encoding="utf-8") != skill_text:
        skill_dir.mkdir(parents=True, exist_ok=True)
        write_atomic(skill_path, skill_text)
        report.changed = True
        report.lines.append(f"wrote the recall skill {skill_path}")
    new_record = {
        "config": str(config),
        "inserted": block,
        "hook_lines": [HOOK_TOOL_LINE],
        "state_keys": state_keys(config, original),
        "created_file": created,
        "skill": str(skill_path),
        "skills_dir_created": skills_created,
    }
    if new_record != record:
        write_atomic(record_path, json.dumps(new_record, indent=2) + "\n")
    if not report.changed:
        report.lines.append(f"memlane is installed in Codex already ({config})")
    features = _parse(original, config).get("features")
    if isinstance(features, dict) and (
        features.get("hooks") is False or features.get("codex_hooks") is False
    ):
        report.lines.append(
            "note: hooks are off in this config.toml ([features] hooks = false): memlane "
            "captures and injects nothing until they are on; its MCP tools work"
        )
    report.lines.append("start a new Codex session to load it (docs/codex.md)")
    return report


def uninstall(env: dict[str, str] | None = None) -> InstallReport:
    """Revert ``install``: the block out of config.toml, the skill, the record."""
    import os

    environ = dict(os.environ if env is None else env)
    base = codex_home(environ).absolute()
    config = base / CONFIG_NAME
    record_path = base / RECORD_NAME
    record = read_record(record_path)
    report = InstallReport(config, record_path, False)
    if not record:
        report.lines.append(f"memlane was not installed in Codex here (no {record_path})")
        return report
    if config.is_file():
        current = config.read_text(encoding="utf-8")
        text, found = without_block(current, record)
        if not found:
            report.lines.append(
                f"memlane's block is no longer in {config}: nothing taken out of it"
            )
        elif record.get("created_file") and not text.strip():
            config.unlink()
            report.lines.append(f"removed {config} (install had created it)")
        else:
            write_atomic(config, text)
            report.lines.append(f"took memlane's block out of {config}")
        report.changed = found
    skill = Path(str(record.get("skill") or base / "skills" / SKILL_NAME / "SKILL.md"))
    if skill.is_file():
        skill.unlink()
        report.lines.append(f"removed the recall skill {skill}")
    for directory in (skill.parent, skill.parent.parent):
        if directory == skill.parent.parent and not record.get("skills_dir_created"):
            break
        try:
            directory.rmdir()
        except OSError:
            break
    record_path.unlink(missing_ok=True)
    return report
