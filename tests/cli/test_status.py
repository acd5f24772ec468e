"""``memlane status``: the doctor, as a user runs it (real subprocesses)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

MEMLANE = [sys.executable, "-m", "memlane.cli.main"]


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MEMLANE, *args],
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    return root


def test_status_names_what_is_missing_and_where_settings_came_from(tmp_path: Path) -> None:
    project = _project(tmp_path)
    out = run(
        "-C",
        str(project),
        "status",
        env={
            "MEMLANE_EMBEDDING_PROVIDER": "openai",
            "MEMLANE_EMBEDDING_BASE_URL": "http://127.0.0.1:9/v1",
            "MEMLANE_EMBEDDING_MODEL": "absent",
            "MEMLANE_AUTO_CONTEXT": "on",
        },
    )
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "missing: embedder: embedding request to http://127.0.0.1:9/v1" in text
    assert "missing: store:" in text and "memlane write" in text
    assert "config           embedding.provider = openai  [env]" in text
    assert "auto-context     on: top 3, score >= 0.65" in text
    assert "capture llm      none" in text


def test_status_json_carries_capture_auto_context_and_config(tmp_path: Path) -> None:
    project = _project(tmp_path)
    run("-C", str(project), "write", "the api listens on 8080")
    out = run("-C", str(project), "status", "--json", "--no-probe")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["capture"]["enabled"] is True
    assert data["auto_context"]["enabled"] is False
    assert data["config"] == []
    assert data["missing"] == []
    assert data["session"] is None


def test_status_says_no_state_file_will_be_written(tmp_path: Path) -> None:
    """Store command declines state-dir, MEMSEARCH_DIR unset, store outside any .memsearch tree."""
    project = _project(tmp_path)
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
    out = run("-C", str(project), "status", "--no-probe", env={"MEMLANE_STORE_CMD": str(script)})
    assert out.returncode == 0, out.stderr
    row = next(line for line in out.stdout.splitlines() if line.startswith("index state"))
    assert "index: no state file will be written: the store command declined state-dir" in row
    assert "state-dir" in row and "MEMSEARCH_DIR is unset" in row
