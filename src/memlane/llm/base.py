"""The one protocol every LLM provider implements.

Distillation, memory compaction and dream consolidation only ever call
``complete``: a system prompt and a user prompt in, plain text out. A
provider raises ``LlmError`` (core/errors.py) with a short reason that can go
into a ``[distillation failed: <reason>]`` marker: "timed out after 30 s",
"HTTP 429 from http://…", "empty answer", never a traceback.
"""

from __future__ import annotations

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
