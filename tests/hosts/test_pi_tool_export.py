"""The tools pi's package declares are the catalog's own.

integrations/pi/extensions/memlane/tool-specs.json is generated from the one
catalog (engine/shared/tool_catalog.py, by memlane.hosts.pi.tools_js), and pi's
tools.ts registers every tool from it: a tool added, renamed or described
otherwise in Python without regenerating the file fails here.
tests/e2e/test_pi_lifecycle.py checks what the real pi declares, and the pi
e2e tests call them.
"""

from __future__ import annotations

import json

from memlane.engine.shared.tool_catalog import SPECS
from memlane.hosts.mcp.tools import tool_definitions
from memlane.hosts.pi.tools_js import export, package_file, render


def test_the_shipped_tool_specs_are_what_the_catalog_exports_now() -> None:
    shipped = package_file().read_text(encoding="utf-8")
    assert shipped == render(), (
        "tool-specs.json is out of date: run `python -m memlane.hosts.pi.tools_js`"
    )


def test_pi_and_mcp_clients_are_told_the_same_thing() -> None:
    pi = {tool["name"]: tool for tool in export()["tools"]}
    mcp = {tool["name"]: tool for tool in tool_definitions()}
    assert list(pi) == list(mcp) == [spec.name for spec in SPECS]
    for name, tool in pi.items():
        assert tool["description"] == mcp[name]["description"]
        assert tool["parameters"] == mcp[name]["inputSchema"]
        assert tool["label"] == mcp[name]["title"]
        assert tool["snippet"] and "\n" not in tool["snippet"]


def test_pi_reads_the_file_rather_than_declaring_tools_itself() -> None:
    tools_ts = (package_file().parent / "tools.ts").read_text(encoding="utf-8")
    assert '"./tool-specs.json"' in tools_ts
    for spec in SPECS:  # no description of its own
        assert spec.description[:40] not in tools_ts
    assert json.loads(package_file().read_text(encoding="utf-8"))["version"] == 1
