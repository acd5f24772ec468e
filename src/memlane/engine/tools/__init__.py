"""The agent-facing tools: one dispatch (``Tools.call``) for every host; their spec is engine/shared/tool_spec.py and engine/shared/tool_catalog.py."""
