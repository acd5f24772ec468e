"""The key registry: every setting declared once, with its type, default,
range, help and environment names (key.py says what a declaration holds and
checks a value against it).

``memlane config list`` prints this table, ``memlane config reference``
writes docs/configuration.md from it, and the layers (layers.py) accept only
keys found here. The topic layer's keys live in topic_keys.py.
"""

from __future__ import annotations

import difflib

from memlane.core import settings as S
from memlane.core.config.key import Key, collection_rule, delays_rule
from memlane.core.config.topic_keys import TOPIC_KEYS
from memlane.core.errors import ConfigError
from memlane.core.settings import (
    BUNDLED_MODEL_NAME,
    DEFAULT_EMBED_BATCH_SIZE,
    DEFAULT_MAX_TOKENS,
)

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
        Key("embedding.max_tokens", int, DEFAULT_MAX_TOKENS, "truncation length in tokens", low=1),
        Key(
            "embedding.batch_size",
            int,
            DEFAULT_EMBED_BATCH_SIZE,
            "texts per embedding batch",
            low=1,
        ),
        Key(
            "embedding.timeout_s", float, 30.0, "HTTP timeout for provider openai, seconds", low=0.1
        ),
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
            rule=collection_rule,
            rule_text="letters, digits and _, not starting with a digit (Milvus's rule)",
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
        Key("index.rrf_k", int, 60, "RRF constant k (fusion rrf and wrrf)", low=1),
        Key(
            "index.alpha",
            float,
            0.4,
            "weight of the dense leg in [0, 1] for fusion wrrf and convex; BM25 gets 1 - alpha",
            low=0,
            high=1,
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
        Key(
            "llm.timeout_s", float, S.DISTILL_TIMEOUT_MS / 1000, "request timeout, seconds", low=0.1
        ),
        Key(
            "llm.daily_calls",
            int,
            S.LLM_DAILY_CALLS,
            "LLM calls per local day, all memlane processes of the user together "
            "(0: unlimited); past it capture writes verbatim digests",
            low=0,
        ),
        Key(
            "llm.daily_tokens",
            int,
            S.LLM_DAILY_TOKENS,
            "LLM tokens (in + out, as the provider reports them, else estimated) per local "
            "day (0: unlimited)",
            low=0,
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
        Key(
            "capture.distill_timeout_ms",
            int,
            S.DISTILL_TIMEOUT_MS,
            "how long, in milliseconds, the LLM may take to distil one exchange; past it the "
            "exchange is written as a verbatim digest",
            low=1,
        ),
        Key(
            "capture.index_debounce_ms",
            int,
            S.INDEX_DEBOUNCE_MS,
            "milliseconds to wait after a write before indexing it, so a burst of writes is "
            "indexed once",
            low=0,
        ),
        Key(
            "snapshot.today_chars",
            int,
            S.SNAPSHOT_TODAY_CHARS,
            "characters of today's daily file shown in the snapshot at session start (the newest "
            "entries; 0: none)",
            low=0,
        ),
        Key(
            "snapshot.yesterday_chars",
            int,
            S.SNAPSHOT_YESTERDAY_CHARS,
            "characters of yesterday's daily file shown in the snapshot at session start (0: none)",
            low=0,
        ),
        Key(
            "auto_context.enabled",
            bool,
            False,
            "inject relevant memory with each prompt",
            aliases=("MEMLANE_AUTO_CONTEXT", "PI_MEMSEARCH_AUTO_CONTEXT"),
            live=True,
        ),
        Key(
            "auto_context.top_k",
            int,
            S.AUTO_CONTEXT_TOP_K,
            "memory hits injected with one prompt at most (auto_context.enabled)",
            low=1,
            high=S.SEARCH_K_MAX,
            live=True,
        ),
        Key(
            "auto_context.score_floor",
            float,
            S.AUTO_CONTEXT_SCORE_FLOOR,
            "inject only hits scoring at or above this (calibrated relevance in [0, 1]; the "
            "default is the floor of the strong band, docs/search.md)",
            low=0,
            high=1,
            live=True,
        ),
        Key(
            "auto_context.char_budget",
            int,
            S.AUTO_CONTEXT_CHAR_BUDGET,
            "characters of injected memory per prompt at most",
            low=1,
            live=True,
        ),
        Key(
            "auto_context.cap_ms",
            int,
            S.AUTO_CONTEXT_CAP_MS,
            "milliseconds a prompt waits for auto-context at most; past it the prompt goes on "
            "without it",
            low=1,
            live=True,
        ),
        Key(
            "auto_context.query_limit",
            int,
            S.AUTO_CONTEXT_QUERY_LIMIT,
            "characters of the prompt used as the auto-context search query",
            low=1,
            live=True,
        ),
        Key(
            "auto_context.timeout_crash_threshold",
            int,
            S.TIMEOUT_CRASH_THRESHOLD,
            "consecutive auto-context searches that miss auto_context.cap_ms before the search "
            "worker counts as crashed and is restarted",
            low=1,
        ),
        Key(
            "auto_context.max_respawns",
            int,
            S.MAX_SIDECAR_RESPAWNS,
            "restarts of a crashed auto-context search worker before auto-context is off for the "
            "rest of the session",
            low=0,
        ),
        Key(
            "session.shutdown_cap_ms",
            int,
            S.SHUTDOWN_CAP_MS,
            "milliseconds a session's end waits at most for pending captures to be written",
            low=0,
        ),
        Key(
            "session.shutdown_grace_ms",
            int,
            S.SHUTDOWN_GRACE_MS,
            "milliseconds pi gives the memlane sidecar to exit after closing it, before killing it",
            low=0,
        ),
        Key(
            "engine.idle_s",
            float,
            600.0,
            "the warm engine exits after this many seconds with no client and nothing to do",
            aliases=("MEMLANE_DAEMON_IDLE_S",),
            low=0.1,
        ),
        Key(
            "engine.lite_hold_s",
            float,
            60.0,
            "the warm engine keeps a Milvus Lite database open this many seconds after its "
            "last use (a memlane command asking for it gets it at once; memsearch waits up to "
            "this long); 0.2 releases it after each use, as other processes do",
            low=0,
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
            "retry delays, in milliseconds, for an index operation another process holds the lock "
            "of; their sum bounds how long a search waits",
            rule=delays_rule,
            rule_text="whole milliseconds separated by commas, e.g. 200,500,1000",
        ),
        Key(
            "search.top_k",
            int,
            S.SEARCH_TOP_K,
            "hits a search returns when it does not ask for a number",
            low=1,
            high=S.SEARCH_K_MAX,
            live=True,
        ),
        Key(
            "search.min_score",
            float,
            S.SEARCH_MIN_SCORE,
            "hits scoring below this are not returned (calibrated relevance in [0, 1]; "
            "0 returns every match)",
            low=0,
            high=1,
            live=True,
        ),
        Key(
            "transcript.context",
            int,
            S.TRANSCRIPT_CONTEXT,
            "turns shown before and after the asked-for turn by `memlane transcript` and "
            "memory_transcript",
            low=0,
            live=True,
        ),
        Key(
            "transcript.limit",
            int,
            S.TRANSCRIPT_LIMIT,
            "turns shown by `memlane transcript` and memory_transcript when no turn is asked for "
            "(the newest)",
            low=1,
            live=True,
        ),
        Key(
            "transcript.turn_char_cap",
            int,
            S.TURN_CHAR_CAP,
            "characters shown of one transcript turn (cut beyond)",
            low=1,
            live=True,
        ),
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
        Key(
            "sessions.primer_top_k",
            int,
            S.SESSIONS_PRIMER_TOP_K,
            "primerTopK: recent sessions",
            low=1,
            high=S.SEARCH_K_MAX,
        ),
        Key(
            "sessions.primer_token_budget",
            int,
            S.SESSIONS_PRIMER_TOKEN_BUDGET,
            "token cap of the ## Project memory primer block",
            low=1,
        ),
        Key(
            "sessions.auto_recall",
            str,
            "heuristic",
            "autoRecall: off, heuristic (prompts that refer to the past) or always",
            choices=S.AUTO_RECALL_MODES,
            live=True,
        ),
        Key(
            "sessions.auto_recall_top_k",
            int,
            S.SESSIONS_AUTO_RECALL_TOP_K,
            "autoRecallTopK: hits injected on auto-recall",
            low=1,
            high=S.SEARCH_K_MAX,
            live=True,
        ),
        Key(
            "sessions.auto_recall_token_budget",
            int,
            S.SESSIONS_AUTO_RECALL_TOKEN_BUDGET,
            "autoRecallTokenBudget: hard token cap on the ## Recall block",
            low=1,
            live=True,
        ),
        Key(
            "sessions.recall_default_top_k",
            int,
            S.SESSIONS_RECALL_TOP_K,
            "recallDefaultTopK: default k of a session search",
            low=1,
            high=S.SEARCH_K_MAX,
            live=True,
        ),
        Key(
            "sessions.rrf_k",
            int,
            S.SESSIONS_RRF_K,
            "rrfK: RRF constant when index.fusion is rrf",
            low=1,
        ),
        Key(
            "sessions.lex_mult",
            int,
            S.SESSIONS_LEX_MULT,
            "lexMult: BM25 candidates = lex_mult * k when index.fusion is rrf",
            low=1,
        ),
        Key(
            "sessions.sem_mult",
            int,
            S.SESSIONS_SEM_MULT,
            "semMult: vector candidates = sem_mult * k when index.fusion is rrf",
            low=1,
        ),
        Key(
            "sessions.sweep_interval_ms",
            int,
            S.SESSIONS_SWEEP_INTERVAL_MS,
            "sweepIntervalMs: base sweep period (x2 per idle sweep up to sweep_max_interval_ms)",
            aliases=("PI_LCM_MEMORY_SWEEP_MS",),
            low=1,
        ),
        Key(
            "sessions.sweep_max_interval_ms",
            int,
            S.SESSIONS_SWEEP_MAX_INTERVAL_MS,
            "cap of the idle sweep backoff",
            low=1,
        ),
        Key(
            "sessions.debug",
            bool,
            False,
            "debugMode: write the side-channel trace log ($MEMLANE_HOME/trace.log), like "
            "MEMLANE_TRACE=1",
            aliases=("PI_LCM_MEMORY_DEBUG",),
        ),
        # --- end sessions layer ---
        Key(
            "scope.worktrees",
            str,
            "shared",
            "git worktrees of one repository: shared (each uses the main worktree's store and "
            "collection, so memory follows the repository) or separate (each checkout keeps its "
            "own, memsearch's rule: memory stays with a branch); docs/adr/0035",
            choices=("shared", "separate"),
        ),
        Key(
            "cross_repo.scan_roots",
            str,
            None,
            "directories (os.pathsep-separated) whose immediate children are searched by "
            'scope "all" when they hold .memsearch/memory/ or memory/',
            aliases=("MEMLANE_SCAN_ROOTS", "PI_MEMSEARCH_SCAN_ROOTS"),
        ),
    )
}
KEYS.update(TOPIC_KEYS)


def unknown_key(name: str) -> ConfigError:
    """The error for a setting that does not exist, naming the closest one."""
    close = difflib.get_close_matches(name, KEYS, n=1)
    hint = f"did you mean {close[0]}? " if close else ""
    return ConfigError(f"unknown setting {name!r}", f"{hint}`memlane config list` names them all")
