"""Typed settings sections, filled by the config resolver (core/config/).

Kept apart from the resolver so embed/ and index/ can depend on the shapes
without pulling in file and environment handling.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memlane.core import confidence
from memlane.core.cosine_scale import CosineScale

BUNDLED_MODEL_NAME = "all-MiniLM-L6-v2"
DEFAULT_MAX_TOKENS = 256
DEFAULT_EMBED_BATCH_SIZE = 32


@dataclass(frozen=True)
class EmbeddingSettings:
    """Which embedder to use.

    provider:
      - ``"onnx"``: the bundled all-MiniLM-L6-v2 int8 model (default), or a
        user model directory when ``path`` is set (model.onnx + tokenizer.json).
      - ``"openai"``: any OpenAI-compatible ``/v1/embeddings`` endpoint.
      - ``"none"``: no embedder; search is lexical only.
    model: the model name; it is part of every chunk hash.
    """

    provider: str = "onnx"
    model: str = BUNDLED_MODEL_NAME
    base_url: str | None = None
    api_key: str | None = None
    path: str | None = None
    pooling: str = "mean"  # mean | cls
    max_tokens: int = DEFAULT_MAX_TOKENS
    batch_size: int = DEFAULT_EMBED_BATCH_SIZE
    timeout_s: float = 30.0


@dataclass(frozen=True)
class IndexSettings:
    backend: str = "sqlite"
    uri: str | None = None
    # The resolved secret (index.token = "env:VAR"): never written, never in a repr.
    token: str | None = field(default=None, repr=False)
    collection: str | None = None  # overrides the derived collection name
    # "evidence": each leg weighed by its evidence for the query, calibrated
    # scores (index/legs/relevance.py, ADR 0010); "rrf" (k=60) stays selectable
    # for parity with memsearch, "convex" and "wrrf" for comparison.
    fusion: str = "evidence"
    rrf_k: int = 60
    alpha: float = 0.4  # dense leg weight for fusion wrrf/convex; lexical gets 1 - alpha
    # Not a setting: the embedding model's cosine scale, set by the engine
    # when it opens an index (engine/calibration); None is the bundled model's.
    cosine_scale: CosineScale | None = None


# Auto-context (docs/session.md) injects a hit only at or above this score: "the
# store likely holds what the prompt is about", on the calibrated scale of
# search scores (index/legs/relevance.py): the floor of the strong band
# (core/confidence.py), which every push into an agent's context keeps.
# Measured by `python benchmarks/quality/calibrate.py` (ADR 0010) and
# benchmarks/quality/trust.py.
AUTO_CONTEXT_SCORE_FLOOR = confidence.STRONG


# Session lifecycle constants (docs/session.md). Each is the default of a config key
# (core/config/keys.py) so a user can tune it; the names stay greppable.
SNAPSHOT_TODAY_CHARS = 3000
SNAPSHOT_YESTERDAY_CHARS = 2000
INDEX_DEBOUNCE_MS = 5000
SHUTDOWN_CAP_MS = 15000
DISTILL_TIMEOUT_MS = 30000
AUTO_CONTEXT_TOP_K = 3
AUTO_CONTEXT_CHAR_BUDGET = 2000
AUTO_CONTEXT_CAP_MS = 300
AUTO_CONTEXT_QUERY_LIMIT = 500
TIMEOUT_CRASH_THRESHOLD = 3
MAX_SIDECAR_RESPAWNS = 2
SHUTDOWN_GRACE_MS = 2000
BACKOFF_DELAYS_MS: tuple[int, ...] = (200, 500, 1000, 2000)
SEARCH_TOP_K = 5
# The most hits one search may return (a request's k, and every top_k setting).
SEARCH_K_MAX = 100
# Hits scoring below this are not returned: "nothing relevant" is an answer.
# On the calibrated scale of the default fusion (index/legs/relevance.py, ADR
# 0010): the floor of the weak band (core/confidence.py). An explicit search
# asks for candidates, each labelled with its band, so only what has no
# evidence at all is silenced; an agent told "nothing stored" redoes work.
SEARCH_MIN_SCORE = confidence.WEAK
TRANSCRIPT_CONTEXT = 3
TRANSCRIPT_LIMIT = 20
TURN_CHAR_CAP = 2000

LLM_PROVIDERS = ("auto", "openai", "anthropic", "command", "host", "none")
#: The daily LLM budget per user (0: unlimited), shared by every memlane
#: process; docs/adr/0016-claude-code-llm-and-a-daily-budget.md says why.
LLM_DAILY_CALLS = 1000
LLM_DAILY_TOKENS = 2_000_000


@dataclass(frozen=True)
class LlmSettings:
    """Which LLM distils exchanges (and, later, compacts and dreams).

    provider:
      - ``"auto"`` (default): the host's model when the host can answer
        (pi's ``llm.complete``), else ``"none"``. Nothing leaves the machine
        unless the user configured a remote provider or runs inside a host
        that already talks to one.
      - ``"openai"``: any OpenAI-compatible chat completions endpoint.
      - ``"anthropic"``: the Anthropic Messages API.
      - ``"command"``: a CLI reading the prompt on stdin (``claude -p``).
      - ``"host"``: the host answers ``llm.complete``.
      - ``"none"``: no LLM; capture writes a verbatim digest.
    capture_model: ``<id>`` or ``<provider>/<id>`` for distillation.
    daily_calls, daily_tokens: the budget of one local day across every
    memlane process of the user (0: unlimited); past it, calls fail at once.
    """

    provider: str = "auto"
    model: str | None = None
    base_url: str | None = None
    api_key: str | None = None
    command: str | None = None
    timeout_s: float = DISTILL_TIMEOUT_MS / 1000
    capture_model: str | None = None
    daily_calls: int = LLM_DAILY_CALLS
    daily_tokens: int = LLM_DAILY_TOKENS


@dataclass(frozen=True)
class SessionSettings:
    capture_enabled: bool = True
    distill_timeout_ms: int = DISTILL_TIMEOUT_MS
    index_debounce_ms: int = INDEX_DEBOUNCE_MS
    snapshot_today_chars: int = SNAPSHOT_TODAY_CHARS
    snapshot_yesterday_chars: int = SNAPSHOT_YESTERDAY_CHARS
    auto_context_enabled: bool = False
    auto_context_top_k: int = AUTO_CONTEXT_TOP_K
    auto_context_score_floor: float = AUTO_CONTEXT_SCORE_FLOOR
    auto_context_char_budget: int = AUTO_CONTEXT_CHAR_BUDGET
    auto_context_cap_ms: int = AUTO_CONTEXT_CAP_MS
    auto_context_query_limit: int = AUTO_CONTEXT_QUERY_LIMIT
    timeout_crash_threshold: int = TIMEOUT_CRASH_THRESHOLD
    max_sidecar_respawns: int = MAX_SIDECAR_RESPAWNS
    shutdown_cap_ms: int = SHUTDOWN_CAP_MS
    shutdown_grace_ms: int = SHUTDOWN_GRACE_MS
    backoff_delays_ms: tuple[int, ...] = BACKOFF_DELAYS_MS
    search_top_k: int = SEARCH_TOP_K
    search_min_score: float = SEARCH_MIN_SCORE
    transcript_context: int = TRANSCRIPT_CONTEXT
    transcript_limit: int = TRANSCRIPT_LIMIT
    turn_char_cap: int = TURN_CHAR_CAP


# --- sessions layer (pi-lcm-memory's settings, issue 8) -------------------
SESSIONS_SWEEP_INTERVAL_MS = 30_000
SESSIONS_SWEEP_MAX_INTERVAL_MS = 300_000  # idle backoff cap: 5 min
SESSIONS_RRF_K = 20
SESSIONS_LEX_MULT = 4
SESSIONS_SEM_MULT = 16
SESSIONS_RECALL_TOP_K = 10
SESSIONS_PRIMER_TOP_K = 5
SESSIONS_PRIMER_TOKEN_BUDGET = 300
SESSIONS_AUTO_RECALL_TOP_K = 5
SESSIONS_AUTO_RECALL_TOKEN_BUDGET = 600
AUTO_RECALL_MODES = ("off", "heuristic", "always")


@dataclass(frozen=True)
class SessionsSettings:
    """The sessions layer: every past message of the project's agent sessions.

    Mirrors pi-lcm-memory's settings table (its README);
    the embedding model and its cache are the ``[embedding]`` section's.
    """

    enabled: bool = True
    index_messages: bool = True
    index_summaries: bool = True
    skip_tool_io: bool = True
    primer: bool = True
    primer_top_k: int = SESSIONS_PRIMER_TOP_K
    primer_token_budget: int = SESSIONS_PRIMER_TOKEN_BUDGET
    auto_recall: str = "heuristic"
    auto_recall_top_k: int = SESSIONS_AUTO_RECALL_TOP_K
    auto_recall_token_budget: int = SESSIONS_AUTO_RECALL_TOKEN_BUDGET
    recall_default_top_k: int = SESSIONS_RECALL_TOP_K
    rrf_k: int = SESSIONS_RRF_K
    lex_mult: int = SESSIONS_LEX_MULT
    sem_mult: int = SESSIONS_SEM_MULT
    sweep_interval_ms: int = SESSIONS_SWEEP_INTERVAL_MS
    sweep_max_interval_ms: int = SESSIONS_SWEEP_MAX_INTERVAL_MS
    debug: bool = False


# --- topic layer (curated knowledge; pi-memory's memory.json) -------------------------------
# Defaults are pi-memory's, so a migrated setup behaves the same. Keys:
# core/config/keys.py, block "topic layer"; mapping table: docs/topics.md.
MEM_INDEX_MAX_LINES = 200
MEM_INDEX_MAX_BYTES = 25600
THINK_LEVELS = ("off", "minimal", "low", "medium", "high", "xhigh")


@dataclass(frozen=True)
class TopicSettings:
    """The topic layer: topic files, MEMORY.md, surfacing, extraction, dream.

    ``*_model`` is ``None`` when unset; a task's model falls back to
    ``model`` (pi-memory's ``defaults.model``), then to the host's model.
    """

    enabled: bool = True
    mem_index_max_lines: int = MEM_INDEX_MAX_LINES
    mem_index_max_bytes: int = MEM_INDEX_MAX_BYTES
    model: str | None = None
    dream_nudge_after_sessions: int = 5
    dream_nudge_after_hours: float = 24.0
    dream_model: str | None = None
    dream_think_level: str = "high"
    session_search_max_sessions: int = 10
    session_search_max_matches: int = 5
    auto_surfacing_enabled: bool = True
    auto_surfacing_model: str | None = None
    auto_surfacing_think_level: str = "off"
    auto_surfacing_max_files: int = 5
    auto_surfacing_max_topic_bytes: int = 4096
    auto_surfacing_max_injection_bytes: int = 20480
    extract_memories_enabled: bool = True
    extract_memories_model: str | None = None
    extract_memories_think_level: str = "high"
    extract_memories_max_context_tokens: int = 2000

    def model_for(self, task: str) -> str | None:
        """The model for ``dream``, ``auto_surfacing`` or ``extract_memories``,
        falling back to the shared ``topics.model``; None means the host's."""
        own = {
            "dream": self.dream_model,
            "auto_surfacing": self.auto_surfacing_model,
            "extract_memories": self.extract_memories_model,
        }.get(task)
        return own or self.model


# --- end topic layer -------------------------------------------------------------------------
