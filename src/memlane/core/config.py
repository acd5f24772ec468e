"""One configuration resolver, four layers, later wins (DESIGN.md §4b).

built-in defaults → global ``$MEMLANE_HOME/config.toml`` → project
``<repository dir>/.memlane.toml`` (only when trusted) → environment.

Every key is declared once in ``KEYS`` with its type, default and help, so
``memlane config list --resolved`` can show each value and where it came from.
Secrets are referenced as ``env:VAR`` and never stored in a file.
"""

from __future__ import annotations

import hashlib
import json
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memlane.core import settings as S
from memlane.core.atomic import write_atomic
from memlane.core.errors import ConfigError
from memlane.core.paths import global_config_path, trust_file_path
from memlane.core.regular_file import FileTooLargeError, NotRegularFileError, read_regular_file
from memlane.core.settings import (
    BUNDLED_MODEL_NAME,
    DEFAULT_EMBED_BATCH_SIZE,
    DEFAULT_MAX_TOKENS,
    EmbeddingSettings,
    IndexSettings,
    LlmSettings,
    SessionSettings,
    SessionsSettings,
    TopicSettings,
)

PROJECT_CONFIG_NAME = ".memlane.toml"
# A project config is a few hundred bytes; anything past this is not one.
CONFIG_MAX_BYTES = 1 << 20
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
        Key("index.backend", str, "sqlite", "index backend", choices=("sqlite",)),
        Key(
            "index.uri",
            str,
            None,
            "backend location; default $MEMLANE_HOME/index/<collection>.sqlite",
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
            "LLM for distillation: auto (the host's model inside pi, else none), openai "
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
            "session.backoff_delays_ms",
            str,
            ",".join(str(d) for d in S.BACKOFF_DELAYS_MS),
            "BACKOFF_DELAYS_MS: retry delays for a locked-out index operation",
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


@dataclass(frozen=True)
class Value:
    value: Scalar | None
    layer: str  # default | global | project | env


@dataclass(frozen=True)
class Config:
    values: dict[str, Value]
    project_file: Path | None = None
    project_trusted: bool = False
    notices: list[str] = field(default_factory=list)

    def get(self, name: str) -> Scalar | None:
        if name not in self.values:
            raise ConfigError(f"unknown setting {name!r}", "see `memlane config list`")
        return self.values[name].value

    def secret(self, name: str) -> str | None:
        """A secret's real value: ``env:VAR`` is looked up in the environment."""
        raw = self.get(name)
        if raw is None:
            return None
        text = str(raw)
        if text.startswith(SECRET_PREFIX):
            var = text[len(SECRET_PREFIX) :]
            resolved = os.environ.get(var)
            if not resolved:
                raise ConfigError(
                    f"{name} refers to the environment variable {var}, which is not set",
                    f"export {var}=... or change {name}",
                )
            return resolved
        return text

    def changed(self) -> list[dict[str, str]]:
        """Every value not at its built-in default, with the layer it came from."""
        out = []
        for name, value in self.values.items():
            if value.layer == "default":
                continue
            shown = str(value.value)
            out.append({"key": name, "value": shown, "layer": value.layer})
        return out

    @property
    def embedding(self) -> EmbeddingSettings:
        return EmbeddingSettings(
            provider=str(self.get("embedding.provider")),
            model=str(self.get("embedding.model")),
            base_url=_opt_str(self.get("embedding.base_url")),
            api_key=self.secret("embedding.api_key"),
            path=_opt_str(self.get("embedding.path")),
            pooling=str(self.get("embedding.pooling")),
            max_tokens=int(self.get("embedding.max_tokens") or DEFAULT_MAX_TOKENS),
            batch_size=int(self.get("embedding.batch_size") or DEFAULT_EMBED_BATCH_SIZE),
            timeout_s=float(self.get("embedding.timeout_s") or 30.0),
        )

    @property
    def index(self) -> IndexSettings:
        return IndexSettings(
            backend=str(self.get("index.backend")),
            uri=_opt_str(self.get("index.uri")),
            fusion=str(self.get("index.fusion")),
            rrf_k=int(self.get("index.rrf_k") or 60),
            alpha=float(self.get("index.alpha") or 0.0),
        )

    @property
    def llm(self) -> LlmSettings:
        return LlmSettings(
            provider=str(self.get("llm.provider")),
            model=_opt_str(self.get("llm.model")),
            base_url=_opt_str(self.get("llm.base_url")),
            api_key=self.secret("llm.api_key"),
            command=_opt_str(self.get("llm.command")),
            timeout_s=float(self.get("llm.timeout_s") or S.DISTILL_TIMEOUT_MS / 1000),
            capture_model=_opt_str(self.get("capture.model")),
        )

    @property
    def session(self) -> SessionSettings:
        def num(name: str) -> int:
            return int(self.get(name) or 0)

        return SessionSettings(
            capture_enabled=bool(self.get("capture.enabled")),
            distill_timeout_ms=num("capture.distill_timeout_ms"),
            index_debounce_ms=num("capture.index_debounce_ms"),
            snapshot_today_chars=num("snapshot.today_chars"),
            snapshot_yesterday_chars=num("snapshot.yesterday_chars"),
            auto_context_enabled=bool(self.get("auto_context.enabled")),
            auto_context_top_k=num("auto_context.top_k"),
            auto_context_score_floor=float(self.get("auto_context.score_floor") or 0.0),
            auto_context_char_budget=num("auto_context.char_budget"),
            auto_context_cap_ms=num("auto_context.cap_ms"),
            auto_context_query_limit=num("auto_context.query_limit"),
            timeout_crash_threshold=num("auto_context.timeout_crash_threshold"),
            max_sidecar_respawns=num("auto_context.max_respawns"),
            shutdown_cap_ms=num("session.shutdown_cap_ms"),
            shutdown_grace_ms=num("session.shutdown_grace_ms"),
            backoff_delays_ms=_delays(str(self.get("session.backoff_delays_ms") or "")),
            search_top_k=num("search.top_k"),
            search_min_score=float(self.get("search.min_score") or 0.0),
            transcript_context=num("transcript.context"),
            transcript_limit=num("transcript.limit"),
            turn_char_cap=num("transcript.turn_char_cap"),
        )

    @property
    def sessions(self) -> SessionsSettings:
        def num(name: str) -> int:
            return int(self.get(name) or 0)

        return SessionsSettings(
            enabled=bool(self.get("sessions.enabled")),
            index_messages=bool(self.get("sessions.index_messages")),
            index_summaries=bool(self.get("sessions.index_summaries")),
            skip_tool_io=bool(self.get("sessions.skip_tool_io")),
            primer=bool(self.get("sessions.primer")),
            primer_top_k=num("sessions.primer_top_k"),
            primer_token_budget=num("sessions.primer_token_budget"),
            auto_recall=str(self.get("sessions.auto_recall")),
            auto_recall_top_k=num("sessions.auto_recall_top_k"),
            auto_recall_token_budget=num("sessions.auto_recall_token_budget"),
            recall_default_top_k=num("sessions.recall_default_top_k"),
            rrf_k=num("sessions.rrf_k"),
            lex_mult=num("sessions.lex_mult"),
            sem_mult=num("sessions.sem_mult"),
            sweep_interval_ms=num("sessions.sweep_interval_ms"),
            sweep_max_interval_ms=num("sessions.sweep_max_interval_ms"),
            debug=bool(self.get("sessions.debug")),
        )

    # --- topic layer ---
    @property
    def topics(self) -> TopicSettings:
        def num(name: str) -> int:
            return int(self.get(name) or 0)

        return TopicSettings(
            enabled=bool(self.get("topics.enabled")),
            mem_index_max_lines=num("topics.mem_index_max_lines"),
            mem_index_max_bytes=num("topics.mem_index_max_bytes"),
            model=_opt_str(self.get("topics.model")),
            dream_nudge_after_sessions=num("dream.nudge_after_sessions"),
            dream_nudge_after_hours=float(self.get("dream.nudge_after_hours") or 0.0),
            dream_model=_opt_str(self.get("dream.model")),
            dream_think_level=str(self.get("dream.think_level")),
            session_search_max_sessions=num("session_search.max_sessions"),
            session_search_max_matches=num("session_search.max_matches"),
            auto_surfacing_enabled=bool(self.get("auto_surfacing.enabled")),
            auto_surfacing_model=_opt_str(self.get("auto_surfacing.model")),
            auto_surfacing_think_level=str(self.get("auto_surfacing.think_level")),
            auto_surfacing_max_files=num("auto_surfacing.max_files"),
            auto_surfacing_max_topic_bytes=num("auto_surfacing.max_topic_bytes"),
            auto_surfacing_max_injection_bytes=num("auto_surfacing.max_injection_bytes"),
            extract_memories_enabled=bool(self.get("extract_memories.enabled")),
            extract_memories_model=_opt_str(self.get("extract_memories.model")),
            extract_memories_think_level=str(self.get("extract_memories.think_level")),
            extract_memories_max_context_tokens=num("extract_memories.max_context_tokens"),
        )

    # --- end topic layer ---


def _delays(text: str) -> tuple[int, ...]:
    try:
        delays = tuple(int(part) for part in text.replace(" ", "").split(",") if part)
    except ValueError:
        raise ConfigError(
            f"session.backoff_delays_ms must be comma-separated milliseconds, got {text!r}",
            'e.g. memlane config set session.backoff_delays_ms "200,500,1000,2000"',
        ) from None
    if any(d < 0 for d in delays):
        raise ConfigError(f"session.backoff_delays_ms has a negative delay: {text!r}")
    return delays


def _opt_str(value: Scalar | None) -> str | None:
    return None if value is None or value == "" else str(value)


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


def read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        return {}
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}", "fix or remove the file") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None


def _layer_from_file(path: Path) -> dict[str, Scalar]:
    data = read_toml(path)
    out: dict[str, Scalar] = {}
    for section, body in data.items():
        if not isinstance(body, dict):
            raise ConfigError(
                f"{path}: top-level {section!r} must be a [section] table",
                "see `memlane config list` for the known settings",
            )
        for key, raw in body.items():
            name = f"{section}.{key}"
            spec = KEYS.get(name)
            if spec is None:
                # Later versions add keys: tolerate, but do not guess.
                continue
            value = coerce(spec, raw, str(path))
            if spec.secret and not str(value).startswith(SECRET_PREFIX):
                raise ConfigError(
                    f"{path} stores a secret in {name}",
                    f'write {name} = "env:VARIABLE" and export the secret instead',
                )
            out[name] = value
    return out


def _layer_from_env(env: Mapping[str, str]) -> dict[str, Scalar]:
    out: dict[str, Scalar] = {}
    for spec in KEYS.values():
        for var in (spec.env_name, *spec.aliases):
            if var in env and env[var] != "":
                out[spec.name] = coerce(spec, env[var], f"${var}")
                break
    return out


def _file_digest(project_dir: str | Path) -> str | None:
    """sha256 of the project's .memlane.toml, or None when there is none."""
    path = Path(project_dir) / PROJECT_CONFIG_NAME
    try:
        # A repository can commit .memlane.toml as a link to /dev/zero or a
        # FIFO: read only a regular file, never blocking, capped.
        data = read_regular_file(path, max_bytes=CONFIG_MAX_BYTES, what="project config")
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (NotRegularFileError, FileTooLargeError) as exc:
        raise ConfigError(exc.message, exc.hint) from None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None
    return hashlib.sha256(data).hexdigest()


def trusted_projects() -> dict[str, str | None]:
    """Trusted project directories, each with the digest of the file it trusted.

    Trust covers the file as it was when `memlane trust` ran (as direnv's
    `allow` does): a `.memlane.toml` changed afterwards, e.g. by a pull,
    can move memory or send it elsewhere, so it is not read again until the
    user trusts the new content.
    """
    path = trust_file_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError):
        raise ConfigError(
            f"{path} is unreadable or not JSON", "remove it and run `memlane trust` again"
        ) from None
    if isinstance(data, list):  # the first format: directories only, no digest
        return {str(p): "" for p in data}
    if not isinstance(data, dict) or not all(isinstance(v, str | None) for v in data.values()):
        raise ConfigError(
            f"{path} must map trusted directories to file digests",
            "remove it and run `memlane trust` again",
        )
    return {str(k): v for k, v in data.items()}


def set_trusted(project_dir: Path, trusted: bool) -> None:
    path = trust_file_path()
    current = trusted_projects()
    real = os.path.realpath(project_dir)
    if trusted:
        current[real] = _file_digest(real)
    else:
        current.pop(real, None)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(dict(sorted(current.items())), indent=2) + "\n")


def load_config(repository_dir: Path | None = None, env: Mapping[str, str] | None = None) -> Config:
    env = os.environ if env is None else env
    values = {name: Value(spec.default, "default") for name, spec in KEYS.items()}
    for name, value in _layer_from_file(global_config_path()).items():
        values[name] = Value(value, "global")
    project_file: Path | None = None
    trusted = False
    notices: list[str] = []
    if repository_dir is not None:
        candidate = repository_dir / PROJECT_CONFIG_NAME
        if candidate.is_file():
            project_file = candidate
            real = os.path.realpath(repository_dir)
            known = trusted_projects()
            trusted = real in known and known[real] == _file_digest(real)
            if trusted:
                for name, value in _layer_from_file(candidate).items():
                    values[name] = Value(value, "project")
            elif real in known:
                notices.append(
                    f"{candidate} changed since you trusted it, so it was not read; "
                    "check what it now sets and run `memlane trust` again to use it"
                )
            else:
                notices.append(
                    f"{candidate} was not read because this project is not trusted; "
                    "run `memlane trust` to use it"
                )
    for name, value in _layer_from_env(env).items():
        values[name] = Value(value, "env")
    return Config(
        values=values, project_file=project_file, project_trusted=trusted, notices=notices
    )


def render_toml(data: Mapping[str, Mapping[str, Scalar]]) -> str:
    """A small TOML writer for flat ``[section] key = scalar`` files."""
    lines: list[str] = []
    for section in sorted(data):
        if lines:
            lines.append("")
        lines.append(f"[{section}]")
        for key in sorted(data[section]):
            lines.append(f"{key} = {_toml_scalar(data[section][key])}")
    return "\n".join(lines) + "\n"


def _toml_scalar(value: Scalar) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(value, ensure_ascii=False)


def set_value(path: Path, name: str, raw: str | None) -> None:
    """Set (or with ``raw`` None, unset) one key in a config file, atomically."""
    spec = KEYS.get(name)
    if spec is None:
        raise ConfigError(f"unknown setting {name!r}", "see `memlane config list`")
    data: dict[str, dict[str, Scalar]] = {
        s: dict(b) for s, b in read_toml(path).items() if isinstance(b, dict)
    }
    section, key = name.split(".", 1)
    if raw is None:
        data.get(section, {}).pop(key, None)
    else:
        value = coerce(spec, raw, "the command line")
        if spec.secret and not str(value).startswith(SECRET_PREFIX):
            raise ConfigError(
                f"{name} is a secret and is never stored in a file",
                f"use `memlane config set {name} env:VARIABLE` and export the secret",
            )
        data.setdefault(section, {})[key] = value
    data = {s: b for s, b in data.items() if b}
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, render_toml(data))
