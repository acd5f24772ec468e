"""The agent tools as data the pi package's TypeScript declares them from.

pi's extension registers memlane's tools itself (integrations/pi/extensions/
memlane/tools.ts) so they exist before its sidecar starts; what each tool is
called, says and takes comes from the one catalog (engine/shared/tool_catalog.py),
exported here into ``integrations/pi/extensions/memlane/tool-specs.json``:
the name, the title pi shows a person (``label``), the line pi lists it by
(``snippet``), the description the model reads and the JSON Schema of its
arguments (pi validates a call against any JSON Schema). So pi's model is
told exactly what an MCP client is told. A test keeps the shipped file equal
to ``export()`` (tests/hosts/test_pi_tool_export.py).

Regenerate after changing a tool: ``python -m memlane.hosts.pi.tools_js``.
"""

from __future__ import annotations

from typing import Any

from memlane.engine.shared.tool_catalog import SPECS
from memlane.hosts.pi import package_data

#: The file the pi package reads, beside its modules.
EXPORT_NAME = "tool-specs.json"
FORMAT_VERSION = 1


def export() -> dict[str, Any]:
    """Every tool of the catalog, in its order, as pi's ``registerTool`` takes it."""
    return {
        "version": FORMAT_VERSION,
        "tools": [
            {
                "name": spec.name,
                "label": spec.title,
                "snippet": spec.snippet,
                "description": spec.description,
                "parameters": spec.json_schema(),
            }
            for spec in SPECS
        ],
    }


FILE = package_data.DataFile(EXPORT_NAME, export)
render = FILE.render
package_file = FILE.path
main = FILE.main


if __name__ == "__main__":
    raise SystemExit(main())
