"""``memlane status``: the doctor, as a user runs it (in this process)."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

from fake_llm import FakeOpenAI
from helpers import Cli


def test_status_names_what_is_missing_and_where_settings_came_from(cli: Cli) -> None:
    # An OpenAI-compatible server without an embeddings endpoint: a 404 is not
    # retried, so the probe fails at once (a closed port waits out the backoff).
    with FakeOpenAI(embeddings=False) as fake_openai:
        _status_names_what_is_missing(cli, fake_openai)


def _status_names_what_is_missing(cli: Cli, fake_openai: FakeOpenAI) -> None:
    out = cli(
        "status",
        env={
            "MEMLANE_EMBEDDING_PROVIDER": "openai",
            "MEMLANE_EMBEDDING_BASE_URL": fake_openai.base_url,
            "MEMLANE_EMBEDDING_MODEL": "absent",
            "MEMLANE_AUTO_CONTEXT": "on",
        },
    )
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert f"missing: embedder: embedding request to {fake_openai.base_url}/embeddings" in text
    assert "missing: store:" in text and "memlane write" in text
    assert "config           embedding.provider = openai  [env]" in text
    assert "auto-context     on: top 3, score >= 0.9" in text
    assert "capture llm      auto: in Claude Code " in text


def test_status_json_carries_capture_auto_context_and_config(cli: Cli) -> None:
    lexical = {"MEMLANE_EMBEDDING_PROVIDER": "none"}
    assert cli("write", "the api listens on 8080", env=lexical).returncode == 0
    out = cli("status", "--json", "--no-probe")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["capture"]["enabled"] is True
    assert data["auto_context"]["enabled"] is False
    assert data["config"] == []
    assert data["missing"] == []
    assert data["session"] is None


def test_status_says_no_state_file_will_be_written(cli: Cli, tmp_path: Path) -> None:
    """Store command declines state-dir, MEMSEARCH_DIR unset, store outside any .memsearch tree."""
    store = tmp_path / "stores" / "proj" / "memory"
    script = tmp_path / "store-cmd.sh"
    script.write_text(
        f"""#!/bin/sh
case "$1" in
  memory-dir) echo "{store}" ;;
  collection) echo "ms_custom_collection" ;;
  state-dir) exit 0 ;;
esac
"""
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    out = cli("status", "--no-probe", env={"MEMLANE_STORE_CMD": str(script)})
    assert out.returncode == 0, out.stderr
    rows = [line for line in out.stdout.splitlines() if line.startswith("index state")]
    assert len(rows) == 1, out.stdout
    row = rows[0]
    assert "index: no state file will be written: the store command declined state-dir" in row
    assert "state-dir" in row and "MEMSEARCH_DIR is unset" in row


def test_status_says_when_claude_code_has_not_trusted_a_project_install(
    cli: Cli, project: Path, isolated_home: Path
) -> None:
    from memlane.hosts.claude_code.install import install

    install(project, python=sys.executable, memlane="/opt/venv/bin/memlane")
    settings = project / ".claude" / "settings.json"
    out = cli("status", "--no-probe")
    assert out.returncode == 0, out.stderr
    assert (
        f"claude code      installed in this project (plugin mode, {settings}); "
        "this folder is not trusted yet" in out.stdout
    )
    assert (
        f"missing: claude code: memlane is installed in {settings}, but Claude Code has not "
        f"trusted {project}, so Claude Code loads nothing of memlane there: no hooks, no tools, "
        f"no skill; to trust it, run `claude` in {project} once and accept the trust dialog"
    ) in out.stdout
    # Trusted as Claude Code records it (CLAUDE_CONFIG_DIR's .claude.json in these tests).
    state = isolated_home / "claude" / ".claude.json"
    state.parent.mkdir(exist_ok=True)
    state.write_text(json.dumps({"projects": {str(project): {"hasTrustDialogAccepted": True}}}))
    data = json.loads(cli("status", "--json", "--no-probe").stdout)
    assert data["claude_code"]["trusted_by"] == str(project)
    assert not [m for m in data["missing"] if m.startswith("claude code")]
