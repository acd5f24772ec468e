"""What each agent tool returns in structured form: one JSON Schema per tool.

MCP publishes these as ``outputSchema``; a client holds ``structuredContent``
to them (the SDKs' clients check every result that is not an error). Each
schema is one object that is either the tool's result (its key facts
required, more fields allowed: a result may grow a field without breaking a
client) or the error every tool can return, ``{"error", "hint"}``, so that
errors validate too.

A leaf like engine/shared/tool_spec.py: it imports nothing from the engine.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing unimported: ``memlane mcp`` lists these first
if TYPE_CHECKING:
    from typing import Any

_STRING = {"type": "string"}
_NULLABLE_STRING = {"type": ["string", "null"]}
_INTEGER = {"type": "integer"}
_NUMBER = {"type": "number"}
_BOOLEAN = {"type": "boolean"}
_STRINGS = {"type": "array", "items": _STRING}
_OBJECT = {"type": "object"}

_HEADLINE = {**_STRING, "description": "The text's first line: what happened, in one sentence."}
_NEXT = {**_STRING, "description": "What to call next, as the text says it."}
_NOTICES = {**_STRINGS, "description": "Notes the text shows as 'note: ...' lines."}

_ANCHOR = {
    "type": ["object", "null"],
    "description": "Where the memory was written: session, turn and transcript (L3's inputs).",
    "properties": {"session": _STRING, "turn": _STRING, "transcript": _STRING},
}

_HIT = {
    "type": "object",
    "properties": {
        "score": {**_NUMBER, "description": "Estimated relevance in [0, 1]."},
        "chunk_hash": {**_STRING, "description": "memory_expand's input."},
        "source": {
            **_STRING,
            "description": "The file the hit is in (a transcript for a session hit).",
        },
        "heading": _STRING,
        "start_line": _INTEGER,
        "end_line": _INTEGER,
        "content": _STRING,
        "project": _STRING,
        "kind": {**_STRING, "description": "journal, topic or session (unset for other projects)."},
        "session": {**_NULLABLE_STRING, "description": "A past message's session."},
        "turn": {**_STRING, "description": "A past message's turn: memory_transcript's turn."},
    },
    "required": ["score", "chunk_hash", "source", "content"],
}

_SEARCH: dict[str, Any] = {
    "properties": {
        "query": _STRING,
        "mode": {**_STRING, "enum": ["hybrid", "lexical", "semantic"]},
        "hits": {"type": "array", "items": _HIT},
        "headline": _HEADLINE,
        "score_meaning": {**_STRING, "description": "What the scores mean."},
        "next": _NEXT,
        "min_score": _NUMBER,
        "below_min_score": {**_INTEGER, "description": "Matches left out under min_score."},
        "nothing_relevant": {**_BOOLEAN, "description": "True when no hit is left."},
        "notices": _NOTICES,
    },
    "required": ["query", "mode", "hits", "headline"],
}

_SECTION: dict[str, Any] = {
    "properties": {
        "chunk_hash": _STRING,
        "source": _STRING,
        "heading": _STRING,
        "start_line": _INTEGER,
        "end_line": _INTEGER,
        "content": {**_STRING, "description": "The whole section, verbatim."},
        "anchor": _ANCHOR,
        "next": _NEXT,
    },
    "required": ["chunk_hash", "source", "content", "anchor"],
}

_TURN = {
    "type": "object",
    "properties": {
        "id": _STRING,
        "ids": _STRINGS,
        "role": _STRING,
        "time": _NULLABLE_STRING,
        "timestamp": _NULLABLE_STRING,
        "text": _STRING,
        "tool_calls": _STRINGS,
        "is_target": _BOOLEAN,
        "truncated": _BOOLEAN,
    },
    "required": ["id", "role", "text"],
}

_SUCCESS: dict[str, dict[str, Any]] = {
    "memory_write": {
        "properties": {
            "headline": _HEADLINE,
            "path": _STRING,
            "time": _STRING,
            "text": {**_STRING, "description": "The entry as written (secrets redacted)."},
            "anchor": _ANCHOR,
            "redactions": {
                "type": "integer",
                "description": "How many secrets were replaced by [REDACTED:kind] markers.",
            },
        },
        "required": ["headline", "path", "time", "text"],
    },
    "memory_search": _SEARCH,
    "memory_similar": _SEARCH,
    "memory_expand": _SECTION,
    "memory_transcript": {
        "properties": {
            "headline": _HEADLINE,
            "path": _STRING,
            "format": _STRING,
            "session_id": _NULLABLE_STRING,
            "target": _NULLABLE_STRING,
            "turns": {"type": "array", "items": _TURN},
            "notes": _STRINGS,
        },
        "required": ["headline", "path", "turns"],
    },
    "memory_forget": {
        "properties": {
            "headline": _HEADLINE,
            "source": _STRING,
            "start_line": _INTEGER,
            "end_line": _INTEGER,
            "markdown": {**_STRING, "description": "What was removed: the only copy left."},
            "kind": _STRING,
            "notices": _NOTICES,
        },
        "required": ["headline", "source", "markdown"],
    },
    "memory_compact": {
        "properties": {"summary": {**_STRING, "description": "The summary that was appended."}},
        "required": ["summary"],
    },
    "memory_status": {
        "properties": {
            "missing": {**_STRINGS, "description": "What does not work and how to fix it."},
            "scope": _OBJECT,
            "chunks": _INTEGER,
            "notices": _NOTICES,
        },
        "required": ["missing", "scope", "chunks"],
    },
    "memory_topic": {
        # One shape per action (add/remove: the change; list: topics; search:
        # matches); what every one of them has is the headline.
        "properties": {
            "headline": _HEADLINE,
            "action": _STRING,
            "title": _STRING,
            "topics": {"type": "array", "items": _OBJECT},
            "matches": {"type": "array", "items": _OBJECT},
            "capacity_problem": {
                **_NULLABLE_STRING,
                "description": "MEMORY.md over its limits and how to fix it (null when fine).",
            },
            "notices": _NOTICES,
        },
        "required": ["headline"],
    },
}

ERROR_PROPERTIES: dict[str, Any] = {
    "error": {**_STRING, "description": "What went wrong (the result is an error)."},
    "hint": {**_NULLABLE_STRING, "description": "What to do about it."},
}


def output_schema(name: str) -> dict[str, Any]:
    """The tool's ``outputSchema``: its result, or the error every tool can return.

    The ``anyOf`` sits at the root here, unlike an input schema's rules: an
    output schema never reaches a model, and JSON Schema validators take it.
    """
    success = _SUCCESS[name]
    return {
        "type": "object",
        "properties": {**success["properties"], **ERROR_PROPERTIES},
        "anyOf": [
            {"required": success["required"], "not": {"required": ["error"]}},
            {"required": ["error", "hint"]},
        ],
    }


def error_details(message: str, hint: str | None) -> dict[str, Any]:
    """The structured form of an error result."""
    return {"error": message, "hint": hint}
