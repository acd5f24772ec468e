"""memlane's OpenCode plugin (integrations/opencode/memlane.js) under Node: it parses, it
finds OpenCode's database by the rule memlane's reader uses, and its hooks fail open."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from memlane.hosts.opencode.install import plugin_source
from memlane.transcripts.locate import opencode_db

NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")


def node(script: str, env: dict[str, str] | None = None) -> str:
    assert NODE is not None
    out = subprocess.run(
        [NODE, "--input-type=module", "-e", script],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", **(env or {})},
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.parametrize(
    "env",
    [
        {"HOME": "/home/u"},
        {"HOME": "/home/u", "XDG_DATA_HOME": "/data"},
        {"HOME": "/home/u", "OPENCODE_DB": "beta.db"},
        {"HOME": "/home/u", "XDG_DATA_HOME": "/data", "OPENCODE_DB": "/abs/o.db"},
    ],
)
def test_the_database_rule_is_the_readers(env: dict[str, str]) -> None:
    source = plugin_source().as_uri()
    got = node(f"import {{ opencodeDb }} from {json.dumps(source)}; console.log(opencodeDb())", env)
    assert got.strip() == str(opencode_db(env))


def test_hooks_fail_open_without_memlane(tmp_path: Path) -> None:
    """A memlane that cannot run: every hook returns and changes nothing."""
    source = plugin_source().as_uri()
    script = f"""
import {{ memlanePlugin }} from {json.dumps(source)};
const hooks = await memlanePlugin({{ command: {json.dumps(str(tmp_path / "gone"))} }})(
  {{ directory: {json.dumps(str(tmp_path))} }});
await hooks.event({{ event: {{ type: "session.created", properties: {{ info: {{ id: "ses_1" }} }} }} }});
const parts = [{{ type: "text", text: "hello", id: "prt_1" }}];
await hooks["chat.message"]({{ sessionID: "ses_1" }}, {{ message: {{}}, parts }});
const system = ["You are opencode"];
await hooks["experimental.chat.system.transform"]({{ sessionID: "ses_1" }}, {{ system }});
const messages = [{{ info: {{ role: "user", sessionID: "ses_1" }}, parts }}];
await hooks["experimental.chat.messages.transform"]({{}}, {{ messages }});
await hooks.event({{ event: {{ type: "session.idle", properties: {{ sessionID: "ses_1" }} }} }});
console.log(JSON.stringify({{ system, parts: messages[0].parts.length }}));
"""
    got = json.loads(node(script, {"HOME": str(tmp_path)}))
    assert got == {"system": ["You are opencode"], "parts": 1}
