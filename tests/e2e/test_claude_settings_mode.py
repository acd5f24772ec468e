"""``memlane install claude-code --project --mode settings`` with the real Claude Code.

No plugin: the hooks are in the project's ``.claude/settings.json``, the MCP
server ``memlane`` in its ``.mcp.json``, the skill and the command under
``.claude/``. Claude Code applies a project's permission rules once the folder
is trusted (what its trust dialog records; done here by hand). One ``claude
-p`` run shows the hooks ran (the SessionStart context reached the model),
the skill is listed as ``recall``, and ``mcp__memlane__*`` tools run without a
prompt; uninstall leaves the project as it was, byte for byte.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from claude_harness import ClaudeInstall, ClaudeWorld

from fake_anthropic import FakeClaude, Request, Turn

pytestmark = pytest.mark.e2e


def tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".memsearch" not in p.parts
    }


def test_settings_mode_in_a_trusted_project(claude_install: ClaudeInstall, tmp_path: Path) -> None:
    with FakeClaude() as model:
        world = ClaudeWorld(
            claude_install,
            tmp_path,
            model.base_url,
            env_extra={"MEMLANE_EMBEDDING_PROVIDER": "none"},
        )
        (world.project / ".mcp.json").write_text('{"mcpServers": {}}\n')
        before = tree(world.project)
        world.install(mode="settings", project=True)
        world.trust_project()
        assert json.loads((world.project / ".mcp.json").read_text())["mcpServers"]["memlane"]

        seen: list[Request] = []

        def done(request: Request) -> Turn:
            seen.append(request)
            return Turn.say("Memory is on.")

        model.agent(Turn.call("mcp__memlane__memory_status"), done)
        result = world.run("Is memory on?")
        assert result.returncode == 0, result.stderr
        first = model.agent_requests[0]
        assert "Project memory (memlane)" in first.system  # the project's SessionStart hook
        assert "- recall:" in first.everything.replace("\\n", "\n")  # the skill, unprefixed
        (status,) = seen[0].tool_results
        assert status.name == "mcp__memlane__memory_status"
        assert not status.is_error, status.text
        assert str(world.project) in status.text

    world.stop_engine()
    lines = world.uninstall(project=True)
    assert any("removed" in line for line in lines)
    assert tree(world.project) == before
