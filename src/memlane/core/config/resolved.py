"""The resolved configuration: each key's value with the layer it came from,
and the typed sections (core/settings.py) the rest of memlane reads.

Secrets stay ``env:VAR`` references here; ``Config.secret`` looks the
variable up only when a provider asks for the value.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from memlane.core import settings as S
from memlane.core.config.key import SECRET_PREFIX, Scalar, parse_delays
from memlane.core.config.keys import unknown_key
from memlane.core.errors import ConfigError
from memlane.core.settings import (
    DEFAULT_EMBED_BATCH_SIZE,
    DEFAULT_MAX_TOKENS,
    EmbeddingSettings,
    IndexSettings,
    LlmSettings,
    SessionSettings,
    SessionsSettings,
    TopicSettings,
)


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
    # Bad values a file or the environment set, each one line: not used (the
    # key keeps the value of the layer beneath), reported by every command.
    problems: list[str] = field(default_factory=list)

    def get(self, name: str) -> Scalar | None:
        if name not in self.values:
            raise unknown_key(name)
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

    def follow(self, fresh: Config, name: str) -> bool:
        """Take *name*'s value (and layer) from *fresh*, a reload of the same
        files; True when it changed. Every handle sharing this configuration
        sees the new value (a running session follows ``memlane memory
        on|off`` this way: engine/live/switch.py)."""
        value = fresh.values[name]
        if self.values.get(name) == value:
            return False
        self.values[name] = value
        return True

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
            token=self.secret("index.token"),
            collection=_opt_str(self.get("index.collection")),
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
            daily_calls=int(self.get("llm.daily_calls") or 0),
            daily_tokens=int(self.get("llm.daily_tokens") or 0),
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
        return parse_delays(text)
    except ValueError:  # only a Config built by hand: the layers checked theirs
        raise ConfigError(
            f"session.backoff_delays_ms must be comma-separated milliseconds, got {text!r}",
            'e.g. memlane config set session.backoff_delays_ms "200,500,1000,2000"',
        ) from None


def _opt_str(value: Scalar | None) -> str | None:
    return None if value is None or value == "" else str(value)
