"""The one protocol every LLM provider implements.

Distillation, memory compaction and dream consolidation only ever call
``complete``: a system prompt and a user prompt in, plain text out. A
provider raises ``LlmError`` (core/errors.py) with a short reason that can go
into a ``[distillation failed: <reason>]`` marker: "timed out after 30 s",
"HTTP 429 from http://…", "empty answer", never a traceback.

A provider that learns how many tokens a call used (the Messages API's
``usage``, OpenAI's ``usage``, ``claude -p --output-format json``) also
implements ``ReportsUsage``: the daily budget (llm/budget.py) counts what it
reports and estimates the rest.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

DEFAULT_MAX_TOKENS = 800


@runtime_checkable
class LLM(Protocol):
    @property
    def name(self) -> str:
        """``<provider>/<model>``, shown by status and in failure markers."""
        ...

    def complete(
        self,
        system: str,
        prompt: str,
        *,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        timeout_s: float | None = None,
    ) -> str:
        """The model's answer as plain text; raises ``LlmError`` on any failure."""
        ...


@dataclass(frozen=True)
class Usage:
    """Tokens one call used, as the provider reported them (cache reads and writes
    count as input: they are tokens the model read)."""

    input_tokens: int
    output_tokens: int

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens


@runtime_checkable
class ReportsUsage(Protocol):
    """A provider that can say what a call cost; ``usage`` is None when this
    answer did not say (a server that omits it)."""

    def complete_with_usage(
        self,
        system: str,
        prompt: str,
        *,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        timeout_s: float | None = None,
    ) -> tuple[str, Usage | None]: ...


class CompletesWithUsage(ABC):
    """A provider that reports usage: ``complete`` is ``complete_with_usage``
    without the usage, written once for all of them."""

    def complete(
        self,
        system: str,
        prompt: str,
        *,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        timeout_s: float | None = None,
    ) -> str:
        answer, _usage = self.complete_with_usage(
            system, prompt, max_tokens=max_tokens, timeout_s=timeout_s
        )
        return answer

    @abstractmethod
    def complete_with_usage(
        self,
        system: str,
        prompt: str,
        *,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        timeout_s: float | None = None,
    ) -> tuple[str, Usage | None]: ...
