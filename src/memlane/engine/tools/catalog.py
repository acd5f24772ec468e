"""Which agent tools exist, in the order every host lists them.

pi's extension declares these (its e2e test holds it to this list), the MCP
server generates its tool list from them and ``Tools.call`` looks a name up
here: one list, so a host cannot offer a tool the engine does not serve or
forget one it does. Every host serves the whole catalog today; a host that
ever serves fewer picks them from here.
"""

from __future__ import annotations

from memlane.engine.tools.spec import (
    MEMORY_COMPACT_SPEC,
    MEMORY_EXPAND_SPEC,
    MEMORY_FORGET_SPEC,
    MEMORY_SEARCH_SPEC,
    MEMORY_SIMILAR_SPEC,
    MEMORY_STATUS_SPEC,
    MEMORY_TOPIC_SPEC,
    MEMORY_TRANSCRIPT_SPEC,
    MEMORY_WRITE_SPEC,
    ToolSpec,
)

SPECS: tuple[ToolSpec, ...] = (
    MEMORY_WRITE_SPEC,
    MEMORY_SEARCH_SPEC,
    MEMORY_EXPAND_SPEC,
    MEMORY_TRANSCRIPT_SPEC,
    MEMORY_SIMILAR_SPEC,
    MEMORY_FORGET_SPEC,
    MEMORY_COMPACT_SPEC,
    MEMORY_STATUS_SPEC,
    MEMORY_TOPIC_SPEC,
)
SPEC_BY_NAME: dict[str, ToolSpec] = {spec.name: spec for spec in SPECS}
TOOL_NAMES: tuple[str, ...] = tuple(SPEC_BY_NAME)
