"""The daily LLM budget: ``llm.daily_calls`` and ``llm.daily_tokens`` per user
and local day, whichever memlane process makes the call (pi's sidecar, the
Claude Code engine, the CLI's compact and dream).

``make_llm`` (llm/factory.py) wraps every LLM it builds in ``BudgetedLLM``,
so distillation, extraction, the surfacing rerank, compaction and dreaming
all count. A call first reserves its place under the lock of
``$MEMLANE_HOME/llm-usage.lock``: past either limit it raises
``LlmBudgetExhausted`` at once, without reaching the provider (capture then
writes a verbatim digest, as for any ``LlmError``). After the call, its
tokens are added: the provider's own count when it reports one
(``ReportsUsage``), else an estimate of four characters a token over the
system prompt, the prompt and the answer; the file keeps the two apart so
status can say which. A failed call counts as a call and adds no tokens.

The counters live in ``$MEMLANE_HOME/llm-usage.json``, replaced atomically;
the day is the clock's local date, so a new day starts from zero. The call
limit is exact (places are reserved under the lock); the token limit can be
passed by the calls already under way when it is reached (a call's size is
known only after it), one per thread or process that was calling. When the file cannot be written (a read-only
home), calls go ahead uncounted: the budget guards spending, it must not
stop distillation the user configured.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from memlane.core.atomic import write_atomic
from memlane.core.clock import SYSTEM_CLOCK, Clock
from memlane.core.errors import LlmError
from memlane.core.locks import lock_file
from memlane.core.paths import memlane_home
from memlane.llm.base import DEFAULT_MAX_TOKENS, ReportsUsage, Usage

if TYPE_CHECKING:
    from memlane.llm.base import LLM

log = logging.getLogger(__name__)

USAGE_FILE = "llm-usage.json"
LOCK_FILE = "llm-usage.lock"
#: The estimate for a provider that reports no usage.
CHARS_PER_TOKEN = 4
RAISE_HINT = "raise llm.daily_calls / llm.daily_tokens (0: unlimited), or wait for tomorrow"


def exhausted_notice(reason: str) -> str:
    """What a session and ``memlane status`` say once the budget is spent."""
    return f"llm: {reason}; captured exchanges are verbatim digests until tomorrow; {RAISE_HINT}"


class LlmBudgetExhausted(LlmError):
    """Today's LLM budget is spent; nothing was sent."""


@dataclass(frozen=True)
class Limits:
    """``llm.daily_calls`` and ``llm.daily_tokens``; 0 is unlimited."""

    calls: int
    tokens: int

    def reached(self, usage: DayUsage) -> str | None:
        """Why *usage* leaves no room for another call; None while there is room."""
        if self.calls and usage.calls >= self.calls:
            return f"daily LLM budget reached: {usage.calls} of {self.calls} calls today"
        if self.tokens and usage.tokens >= self.tokens:
            return f"daily LLM budget reached: {usage.tokens} of {self.tokens} tokens today"
        return None


@dataclass
class DayUsage:
    """One day's counters, as ``llm-usage.json`` holds them."""

    day: str
    calls: int = 0
    tokens_reported: int = 0  # counted by the provider
    tokens_estimated: int = 0  # CHARS_PER_TOKEN, for providers that do not say
    refused: int = 0  # calls refused past the budget

    @property
    def tokens(self) -> int:
        return self.tokens_reported + self.tokens_estimated

    def to_json(self) -> dict[str, int | str]:
        return {**asdict(self), "tokens": self.tokens}

    @classmethod
    def parse(cls, raw: bytes, day: str) -> DayUsage:
        """The counters in *raw* if they are *day*'s; a fresh day otherwise."""
        try:
            body = json.loads(raw)
        except ValueError:
            log.warning("%s is damaged; today's LLM counters start again", USAGE_FILE)
            return cls(day)
        if not isinstance(body, dict) or body.get("day") != day:
            return cls(day)

        def number(name: str) -> int:
            value = body.get(name)
            return value if isinstance(value, int) and value >= 0 else 0

        return cls(
            day,
            calls=number("calls"),
            tokens_reported=number("tokens_reported"),
            tokens_estimated=number("tokens_estimated"),
            refused=number("refused"),
        )


class Ledger:
    """The shared counters file; every change is read-modify-replace under its lock."""

    def __init__(self, home: Path | None = None, clock: Clock = SYSTEM_CLOCK) -> None:
        self.home = home if home is not None else memlane_home()
        self.path = self.home / USAGE_FILE
        self.clock = clock

    def day(self) -> str:
        return self.clock.today().isoformat()

    def today(self) -> DayUsage:
        """Today's counters, without the lock (the file is only ever replaced whole)."""
        day = self.day()
        try:
            return DayUsage.parse(self.path.read_bytes(), day)
        except OSError:
            return DayUsage(day)

    def reserve(self, limits: Limits) -> str | None:
        """Count one call for today and return the day; ``LlmBudgetExhausted``
        (the refusal counted) when the budget has no room. None: the file
        cannot be written, so the call goes ahead uncounted."""
        refusal: list[str] = []

        def take(usage: DayUsage) -> None:
            reason = limits.reached(usage)
            if reason:
                usage.refused += 1
                refusal.append(reason)
            else:
                usage.calls += 1

        day = self._update(take)
        if refusal:
            raise LlmBudgetExhausted(refusal[0], RAISE_HINT)
        return day

    def settle(self, day: str, tokens: int, *, reported: bool) -> None:
        """Add a finished call's tokens to *day* (nothing once that day is over)."""

        def add(usage: DayUsage) -> None:
            if reported:
                usage.tokens_reported += tokens
            else:
                usage.tokens_estimated += tokens

        if tokens > 0:
            self._update(add, only_day=day)

    def _update(
        self, change: Callable[[DayUsage], None], only_day: str | None = None
    ) -> str | None:
        day = self.day()
        if only_day is not None and only_day != day:
            return day
        try:
            self.home.mkdir(parents=True, exist_ok=True)
            with lock_file(self.home / LOCK_FILE, exclusive=True, mode=0o600):
                try:
                    usage = DayUsage.parse(self.path.read_bytes(), day)
                except FileNotFoundError:
                    usage = DayUsage(day)
                change(usage)
                data = json.dumps(usage.to_json(), sort_keys=True) + "\n"
                write_atomic(self.path, data, new_file_mode=0o600)
        except OSError as exc:
            log.warning("LLM budget not counted: %s cannot be written (%s)", self.path, exc)
            return None
        return day


class BudgetedLLM:
    """An LLM whose calls are counted against, and refused past, the daily budget."""

    def __init__(self, inner: LLM, limits: Limits, ledger: Ledger) -> None:
        self.inner = inner
        self.limits = limits
        self.ledger = ledger

    def __repr__(self) -> str:
        return f"BudgetedLLM({self.inner!r})"

    @property
    def name(self) -> str:
        return self.inner.name

    def complete(
        self,
        system: str,
        prompt: str,
        *,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        timeout_s: float | None = None,
    ) -> str:
        day = self.ledger.reserve(self.limits)
        usage: Usage | None = None
        if isinstance(self.inner, ReportsUsage):
            answer, usage = self.inner.complete_with_usage(
                system, prompt, max_tokens=max_tokens, timeout_s=timeout_s
            )
        else:
            answer = self.inner.complete(system, prompt, max_tokens=max_tokens, timeout_s=timeout_s)
        if day is not None:
            if usage is not None:
                self.ledger.settle(day, usage.total, reported=True)
            else:
                self.ledger.settle(day, estimate_tokens(system, prompt, answer), reported=False)
        return answer


def estimate_tokens(*texts: str) -> int:
    """About how many tokens *texts* are: four characters a token, rounded up."""
    chars = sum(len(text) for text in texts)
    return -(-chars // CHARS_PER_TOKEN)


def budget_report(limits: Limits, ledger: Ledger) -> dict[str, object]:
    """Today's counters against the budget, for ``memlane status`` (``llm_budget``)."""
    usage = ledger.today()
    return {
        **usage.to_json(),
        "daily_calls": limits.calls,
        "daily_tokens": limits.tokens,
        "reached": limits.reached(usage),
        "path": str(ledger.path),
    }


def budget_line(report: dict[str, object]) -> str:
    """``12 of 1000 calls, 30211 of 2000000 tokens (30000 reported, 211 estimated)``."""

    def of(used: object, limit: object) -> str:
        return f"{used} of {limit}" if limit else f"{used} (unlimited)"

    line = (
        f"today {of(report.get('calls', 0), report.get('daily_calls'))} calls, "
        f"{of(report.get('tokens', 0), report.get('daily_tokens'))} tokens "
        f"({report.get('tokens_reported', 0)} reported by the provider, "
        f"{report.get('tokens_estimated', 0)} estimated)"
    )
    if report.get("refused"):
        line += f", {report['refused']} refused"
    return line
