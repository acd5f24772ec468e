"""The key registry: every setting declared once, with its type, default,
help and environment names, and the rule that turns a raw file or
environment value into the key's type.

``memlane config list`` prints this table; the layers (layers.py) accept
only keys found here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memlane.core import settings as S
from memlane.core.errors import ConfigError
from memlane.core.settings import (
    BUNDLED_MODEL_NAME,
    DEFAULT_EMBED_BATCH_SIZE,
    DEFAULT_MAX_TOKENS,
)

SECRET_PREFIX = "env:"

Scalar = str | int | float | bool


@dataclass(frozen=True)
class Key:
    name: str  # "section.key"
    type: type
    default: Scalar | None
    help: str
    secret: bool = False
    choices: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()  # extra environment names (drop-in migration)

    @property
    def env_name(self) -> str:
        section, key = self.name.split(".", 1)
        return f"MEMLANE_{section.upper()}_{key.upper()}"


KEYS: dict[str, Key] = {
    k.name: k
    for k in (
        Key(
            "embedding.provider",
            str,
            "onnx",
            "onnx (bundled model, or a model directory via embedding.path), openai "
            "(any OpenAI-compatible /v1/embeddings endpoint) or none (lexical search only)",
            choices=("onnx", "openai", "none"),
        ),
        Key("embedding.model", str, BUNDLED_MODEL_NAME, "model name; part of every chunk hash"),
        Key(
            "embedding.base_url",
            str,
            None,
            "endpoint for provider openai, e.g. http://127.0.0.1:11434/v1",
        ),
        Key("embedding.api_key", str, None, "API key for provider openai, as env:VAR", secret=True),
        Key(
            "embedding.path",
            str,
            None,
            "directory with model.onnx + tokenizer.json (provider onnx)",
        ),
        Key(
            "embedding.pooling",
            str,
            "mean",
            "pooling for a model directory",
            choices=("mean", "cls"),
        ),
        Key("embedding.max_tokens", int, DEFAULT_MAX_TOKENS, "truncation length in tokens"),
        Key("embedding.batch_size", int, DEFAULT_EMBED_BATCH_SIZE, "texts per embedding batch"),
        Key("embedding.timeout_s", float, 30.0, "HTTP timeout for provider openai, seconds"),
        Key(
            "index.backend",
            str,
            "sqlite",
            "index backend: sqlite (one local file per project) or milvus (Milvus Lite, a "
            "Milvus server or Zilliz Cloud, memsearch-compatible collections; docs/milvus.md)",
            choices=("sqlite", "milvus"),
        ),
        Key(
            "index.uri",
            str,
            None,
            "backend location. sqlite: a directory for the index files (default "
            "$MEMLANE_HOME/index). milvus: a Milvus Lite path (default ~/.memsearch/milvus.db, "
            "memsearch's), http(s)://host:19530 for a Milvus server, or a Zilliz Cloud endpoint",
        ),
        Key(
            "index.token",
            str,
            None,
            "token for a Milvus server or Zilliz Cloud (user:password or an API key), as env:VAR",
            secret=True,
        ),
        Key(
            "index.collection",
            str,
            None,
            "collection name (milvus); default ms_<project>_<8 hex>, memsearch's derivation. "
            "Set the same name on several machines to share one memory",
        ),
        Key(
            "index.fusion",
            str,
            "evidence",
            "how the lexical and dense legs are fused: evidence (each leg weighed by how "
            "well it matches this query; scores are calibrated relevance), rrf (memsearch's, "
            "k=index.rrf_k), wrrf (rrf weighted by index.alpha), convex (alpha * dense + "
            "(1 - alpha) * lexical on min-max normalised scores)",
            choices=("evidence", "rrf", "wrrf", "convex"),
        ),
        Key("index.rrf_k", int, 60, "RRF constant k (fusion rrf and wrrf)"),
        Key(
            "index.alpha",
            float,
            0.4,
            "weight of the dense leg in [0, 1] for fusion wrrf and convex; BM25 gets 1 - alpha",
        ),
        Key(
            "llm.provider",
            str,
            "auto",
            "LLM for distillation: auto (the host's model inside pi, `claude -p --model "
            "haiku` inside Claude Code, else none), openai "
            "(any OpenAI-compatible endpoint), anthropic, command (a CLI reading the prompt "
            "on stdin), host, none (capture writes a verbatim digest)",
            choices=S.LLM_PROVIDERS,
        ),
        Key("llm.model", str, None, "model id; default: the provider's cheap model"),
        Key("llm.base_url", str, None, "endpoint, e.g. http://127.0.0.1:11434/v1 (Ollama)"),
        Key("llm.api_key", str, None, "API key as env:VAR", secret=True),
        Key("llm.command", str, None, "provider command: e.g. claude -p --model haiku"),
        Key("llm.timeout_s", float, S.DISTILL_TIMEOUT_MS / 1000, "request timeout, seconds"),
        Key(
            "llm.daily_calls",
            int,
            S.LLM_DAILY_CALLS,
            "LLM calls per local day, all memlane processes of the user together "
            "(0: unlimited); past it capture writes verbatim digests",
        ),
        Key(
            "llm.daily_tokens",
            int,
            S.LLM_DAILY_TOKENS,
            "LLM tokens (in + out, as the provider reports them, else estimated) per local "
            "day (0: unlimited)",
        ),
        Key(
            "capture.enabled",
            bool,
            True,
            "distil every settled exchange into the daily file",
            aliases=("MEMLANE_CAPTURE", "PI_MEMSEARCH_CAPTURE"),
        ),
        Key(
            "capture.model",
            str,
            None,
            "model for distillation: <id> or <provider>/<id>; default the host's cheapest",
            aliases=("MEMLANE_CAPTURE_MODEL", "PI_MEMSEARCH_CAPTURE_MODEL"),
        ),
        Key("capture.distill_timeout_ms", int, S.DISTILL_TIMEOUT_MS, "DISTILL_TIMEOUT_MS"),
        Key("capture.index_debounce_ms", int, S.INDEX_DEBOUNCE_MS, "INDEX_DEBOUNCE_MS"),
        Key("snapshot.today_chars", int, S.SNAPSHOT_TODAY_CHARS, "SNAPSHOT_TODAY_CHARS"),
        Key(
            "snapshot.yesterday_chars", int, S.SNAPSHOT_YESTERDAY_CHARS, "SNAPSHOT_YESTERDAY_CHARS"
        ),
        Key(
            "auto_context.enabled",
            bool,
            False,
            "inject relevant memory with each prompt",
            aliases=("MEMLANE_AUTO_CONTEXT", "PI_MEMSEARCH_AUTO_CONTEXT"),
        ),
        Key("auto_context.top_k", int, S.AUTO_CONTEXT_TOP_K, "AUTO_CONTEXT_TOP_K"),
        Key(
            "auto_context.score_floor",
            float,
            S.AUTO_CONTEXT_SCORE_FLOOR,
            "AUTO_CONTEXT_SCORE_FLOOR: inject only hits at or above this score",
        ),
        Key(
            "auto_context.char_budget", int, S.AUTO_CONTEXT_CHAR_BUDGET, "AUTO_CONTEXT_CHAR_BUDGET"
        ),
        Key("auto_context.cap_ms", int, S.AUTO_CONTEXT_CAP_MS, "AUTO_CONTEXT_CAP_MS: deadline"),
        Key(
            "auto_context.query_limit", int, S.AUTO_CONTEXT_QUERY_LIMIT, "AUTO_CONTEXT_QUERY_LIMIT"
        ),
        Key(
            "auto_context.timeout_crash_threshold",
            int,
            S.TIMEOUT_CRASH_THRESHOLD,
            "TIMEOUT_CRASH_THRESHOLD: consecutive misses that count as a crash",
        ),
        Key(
            "auto_context.max_respawns",
            int,
            S.MAX_SIDECAR_RESPAWNS,
            "MAX_SIDECAR_RESPAWNS: restarts before auto-context is off for the session",
        ),
        Key("session.shutdown_cap_ms", int, S.SHUTDOWN_CAP_MS, "SHUTDOWN_CAP_MS"),
        Key("session.shutdown_grace_ms", int, S.SHUTDOWN_GRACE_MS, "SHUTDOWN_GRACE_MS"),
        Key(
            "engine.idle_s",
            float,
            600.0,
            "the warm engine exits after this many seconds with no client and nothing to do",
            aliases=("MEMLANE_DAEMON_IDLE_S",),
        ),
        Key(
            "engine.lite_hold_s",
            float,
            60.0,
            "the warm engine keeps a Milvus Lite database open this many seconds after its "
            "last use (a memlane command asking for it gets it at once; memsearch waits up to "
            "this long); 0.2 releases it after each use, as other processes do",
        ),
        Key(
            "engine.cli_starts",
            bool,
            False,
            "a one-off CLI command (search, write, ...) starts the warm engine when none "
            "runs; otherwise it uses one only when an agent or MCP client started it",
        ),
        Key(
            "session.backoff_delays_ms",
            str,
            ",".join(str(d) for d in S.BACKOFF_DELAYS_MS),
            "BACKOFF_DELAYS_MS: retry delays for a locked-out index operation; their sum "
            "bounds a search's wait on another process's lock",
        ),
        Key("search.top_k", int, S.SEARCH_TOP_K, "SEARCH_TOP_K: default hits per search"),
        Key(
            "search.min_score",
            float,
            S.SEARCH_MIN_SCORE,
            "hits scoring below this are not returned (calibrated relevance in [0, 1]; "
            "0 returns every match)",
        ),
        Key("transcript.context", int, S.TRANSCRIPT_CONTEXT, "TRANSCRIPT_CONTEXT"),
        Key("transcript.limit", int, S.TRANSCRIPT_LIMIT, "TRANSCRIPT_LIMIT"),
        Key("transcript.turn_char_cap", int, S.TURN_CHAR_CAP, "TURN_CHAR_CAP"),
        # --- sessions layer (issue 8): pi-lcm-memory's settings, same defaults ---
        Key(
            "sessions.enabled",
            bool,
            True,
            "index the project's agent transcripts message by message (master switch)",
            aliases=("PI_LCM_MEMORY_ENABLED",),
        ),
        Key("sessions.index_messages", bool, True, "indexMessages: embed user/assistant turns"),
        Key(
            "sessions.index_summaries",
            bool,
            True,
            "indexSummaries: embed compaction and branch summaries",
        ),
        Key(
            "sessions.skip_tool_io",
            bool,
            True,
            "skipToolIO: no vectors for tool calls/results (BM25 still covers them)",
        ),
        Key("sessions.primer", bool, True, "primer: session-start briefing of recent work"),
        Key("sessions.primer_top_k", int, S.SESSIONS_PRIMER_TOP_K, "primerTopK: recent sessions"),
        Key(
            "sessions.primer_token_budget",
            int,
            S.SESSIONS_PRIMER_TOKEN_BUDGET,
            "token cap of the ## Project memory primer block",
        ),
        Key(
            "sessions.auto_recall",
            str,
            "heuristic",
            "autoRecall: off, heuristic (prompts that refer to the past) or always",
            choices=S.AUTO_RECALL_MODES,
        ),
        Key(
            "sessions.auto_recall_top_k",
            int,
            S.SESSIONS_AUTO_RECALL_TOP_K,
            "autoRecallTopK: hits injected on auto-recall",
        ),
        Key(
            "sessions.auto_recall_token_budget",
            int,
            S.SESSIONS_AUTO_RECALL_TOKEN_BUDGET,
            "autoRecallTokenBudget: hard token cap on the ## Recall block",
        ),
        Key(
            "sessions.recall_default_top_k",
            int,
            S.SESSIONS_RECALL_TOP_K,
            "recallDefaultTopK: default k of a session search",
        ),
        Key("sessions.rrf_k", int, S.SESSIONS_RRF_K, "rrfK: RRF constant when index.fusion is rrf"),
        Key(
            "sessions.lex_mult",
            int,
            S.SESSIONS_LEX_MULT,
            "lexMult: BM25 candidates = lex_mult * k when index.fusion is rrf",
        ),
        Key(
            "sessions.sem_mult",
            int,
            S.SESSIONS_SEM_MULT,
            "semMult: vector candidates = sem_mult * k when index.fusion is rrf",
        ),
        Key(
            "sessions.sweep_interval_ms",
            int,
            S.SESSIONS_SWEEP_INTERVAL_MS,
            "sweepIntervalMs: base sweep period (x2 per idle sweep up to sweep_max_interval_ms)",
            aliases=("PI_LCM_MEMORY_SWEEP_MS",),
        ),
        Key(
            "sessions.sweep_max_interval_ms",
            int,
            S.SESSIONS_SWEEP_MAX_INTERVAL_MS,
            "cap of the idle sweep backoff",
        ),
        Key(
            "sessions.debug",
            bool,
            False,
            "debugMode: write the side-channel trace log ($MEMLANE_HOME/trace.log), like MEMLANE_TRACE=1",
            aliases=("PI_LCM_MEMORY_DEBUG",),
        ),
        # --- end sessions layer ---
        Key(
            "cross_repo.scan_roots",
            str,
            None,
            "directories (os.pathsep-separated) whose immediate children are searched by "
            'scope "all" when they hold .memsearch/memory/ or memory/',
            aliases=("MEMLANE_SCAN_ROOTS", "PI_MEMSEARCH_SCAN_ROOTS"),
        ),
        # --- topic layer: every key of pi-memory's memory.json (docs/topics.md) ---------
        Key(
            "topics.enabled",
            bool,
            True,
            "the topic layer (topic files, MEMORY.md, surfacing, extraction); "
            "memory.json: enabled; `memlane memory on|off`",
        ),
        Key(
            "topics.mem_index_max_lines",
            int,
            S.MEM_INDEX_MAX_LINES,
            "MEMORY.md lines before capacity warnings and snapshot truncation (memIndexMaxLines)",
        ),
        Key(
            "topics.mem_index_max_bytes",
            int,
            S.MEM_INDEX_MAX_BYTES,
            "MEMORY.md bytes before capacity warnings and snapshot truncation (memIndexMaxBytes)",
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
        ),
        Key(
            "dream.nudge_after_hours",
            float,
            24.0,
            "hours since the last dream before suggesting `memlane dream`",
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
        ),
        Key(
            "session_search.max_matches",
            int,
            5,
            "matches returned by memory_topic search scope=sessions",
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
        Key("auto_surfacing.max_files", int, 5, "topic files injected per prompt at most"),
        Key(
            "auto_surfacing.max_topic_bytes",
            int,
            4096,
            "bytes per injected topic file (cut beyond)",
        ),
        Key(
            "auto_surfacing.max_injection_bytes",
            int,
            20480,
            "bytes of injected topic content per prompt at most",
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
        ),
        # --- end topic layer ---------------------------------------------------------------
    )
}


def coerce(key: Key, raw: Any, origin: str) -> Scalar:
    """Turn a raw file or environment value into the key's type, or explain."""
    try:
        if key.type is bool:
            if isinstance(raw, bool):
                value: Scalar = raw
            elif str(raw).strip().lower() in ("1", "true", "on", "yes"):
                value = True
            elif str(raw).strip().lower() in ("0", "false", "off", "no"):
                value = False
            else:
                raise ValueError(raw)
        elif key.type is int:
            if isinstance(raw, bool):
                raise ValueError(raw)
            value = int(raw)
        elif key.type is float:
            value = float(raw)
        else:
            if not isinstance(raw, str):
                raise ValueError(raw)
            value = raw
    except (TypeError, ValueError):
        raise ConfigError(
            f"{key.name} in {origin} must be a {key.type.__name__}, got {raw!r}"
        ) from None
    if key.choices and value not in key.choices:
        raise ConfigError(
            f"{key.name} in {origin} must be one of {', '.join(key.choices)}, got {value!r}"
        )
    return value
