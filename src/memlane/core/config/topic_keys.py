"""The topic layer's settings: every key of pi-memory's ``memory.json``
(docs/topics.md), declared like the rest (keys.py merges them into ``KEYS``).
"""

from __future__ import annotations

from memlane.core import settings as S
from memlane.core.config.key import Key

TOPIC_KEYS: dict[str, Key] = {
    k.name: k
    for k in (
        Key(
            "topics.enabled",
            bool,
            True,
            "the topic layer (topic files, MEMORY.md, surfacing, extraction); "
            "memory.json: enabled; `memlane memory on|off`",
            live=True,
        ),
        Key(
            "topics.mem_index_max_lines",
            int,
            S.MEM_INDEX_MAX_LINES,
            "MEMORY.md lines before capacity warnings and snapshot truncation (memIndexMaxLines)",
            low=1,
        ),
        Key(
            "topics.mem_index_max_bytes",
            int,
            S.MEM_INDEX_MAX_BYTES,
            "MEMORY.md bytes before capacity warnings and snapshot truncation (memIndexMaxBytes)",
            low=1,
        ),
        Key(
            "topics.model",
            str,
            None,
            "shared model for dream, surfacing and extraction: <id> or <provider>/<id>; "
            "default the host's (defaults.model)",
        ),
        Key(
            "dream.nudge_after_sessions",
            int,
            5,
            "sessions since the last dream before suggesting `memlane dream`",
            low=0,
        ),
        Key(
            "dream.nudge_after_hours",
            float,
            24.0,
            "hours since the last dream before suggesting `memlane dream`",
            low=0,
        ),
        Key("dream.model", str, None, "model for dream consolidation; default topics.model"),
        Key(
            "dream.think_level",
            str,
            "high",
            "thinking effort for dream",
            choices=S.THINK_LEVELS,
        ),
        Key(
            "session_search.max_sessions",
            int,
            10,
            "newest session files scanned by memory_topic search scope=sessions",
            low=1,
        ),
        Key(
            "session_search.max_matches",
            int,
            5,
            "matches returned by memory_topic search scope=sessions",
            low=1,
        ),
        Key(
            "auto_surfacing.enabled",
            bool,
            True,
            "inject relevant topic files with each prompt",
        ),
        Key(
            "auto_surfacing.model",
            str,
            None,
            "model for the optional surfacing rerank; default topics.model",
        ),
        Key(
            "auto_surfacing.think_level",
            str,
            "off",
            "thinking effort for the surfacing rerank",
            choices=S.THINK_LEVELS,
        ),
        Key("auto_surfacing.max_files", int, 5, "topic files injected per prompt at most", low=1),
        Key(
            "auto_surfacing.max_topic_bytes",
            int,
            4096,
            "bytes per injected topic file (cut beyond)",
            low=1,
        ),
        Key(
            "auto_surfacing.max_injection_bytes",
            int,
            20480,
            "bytes of injected topic content per prompt at most",
            low=1,
        ),
        Key(
            "extract_memories.enabled",
            bool,
            True,
            "propose topic entries from each exchange",
        ),
        Key(
            "extract_memories.model",
            str,
            None,
            "model for extraction; default topics.model",
        ),
        Key(
            "extract_memories.think_level",
            str,
            "high",
            "thinking effort for extraction",
            choices=S.THINK_LEVELS,
        ),
        Key(
            "extract_memories.max_context_tokens",
            int,
            2000,
            "tokens of conversation the extraction reads at most",
            low=1,
        ),
    )
}
