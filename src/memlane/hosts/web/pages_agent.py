"""What the agent sees (engine/live/agent_view.py as a page): the session-start
snapshot as the agent gets it, a sample auto-context for a prompt typed
here, their sizes in characters and tokens, and what the agent was handed
per day (engine/live/injection_ledger.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memlane.hosts.web.render import render

if TYPE_CHECKING:
    from collections.abc import Mapping

    from memlane.hosts.web.viewer import Viewer

#: The longest prompt the page samples (auto-context reads no more of one).
PROMPT_CHARS = 2000
#: Days the cost chart and table show (the latest).
COST_DAYS = 60
COST_CHART_HEIGHT = 120
COST_BAR_WIDTH = 10


@dataclass(frozen=True)
class CostRow:
    """One day of the table: prompts, characters of each part, estimated tokens."""

    day: str
    prompts: int
    snapshot: int
    message: int
    tokens: int


@dataclass(frozen=True)
class CostBar:
    """One day of the cost chart: its bar at *x*, *height* high, its tooltip."""

    day: str
    x: int
    y: int
    height: int
    tip: str


def agent(viewer: Viewer, params: Mapping[str, str]) -> str:
    from memlane.engine.live import agent_view

    memory = viewer.memory
    seen = agent_view.snapshot(memory)
    prompt = params.get("prompt", "")[:PROMPT_CHARS]
    sample = agent_view.sample_auto_context(memory, prompt, seen) if prompt.strip() else None
    settings = memory.config.session
    sized = agent_view.Sized.of(seen.text)
    return render(
        "agent.html",
        title="What the agent sees",
        active="/agent",
        snapshot=sized,
        prompt=prompt,
        sample=agent_view.Sized.of(sample) if sample else None,
        asked=bool(prompt.strip()),
        auto_context_on=settings.auto_context_enabled,
        floor=settings.auto_context_score_floor,
        budget=settings.auto_context_char_budget,
        **costs(viewer, sized.tokens / sized.chars if sized.chars else 0.25),
    )


def costs(viewer: Viewer, tokens_per_char: float) -> dict[str, Any]:
    """The latest days' injection costs: a bar chart and a table, newest first;
    tokens estimated from characters at the snapshot's own ratio."""
    from memlane.engine.live.injection_ledger import per_day

    days = per_day(viewer.memory.scope)[-COST_DAYS:]
    rows = [
        CostRow(
            d.day,
            d.prompts,
            d.snapshot_chars,
            d.message_chars,
            round(d.chars * tokens_per_char),
        )
        for d in days
    ]
    peak = max((r.tokens for r in rows), default=0) or 1
    bars = []
    for n, r in enumerate(rows):
        height = max(2, round(r.tokens / peak * (COST_CHART_HEIGHT - 10))) if r.tokens else 0
        tip = f"{r.day}: {r.prompts} prompts, about {r.tokens:,} tokens"
        x = 4 + n * (COST_BAR_WIDTH + 3)
        bars.append(CostBar(r.day, x, COST_CHART_HEIGHT - height, height, tip))
    return {
        "cost_rows": rows[::-1],
        "cost_bars": bars,
        "cost_width": max(4 + len(rows) * (COST_BAR_WIDTH + 3) + 4, 120),
        "cost_height": COST_CHART_HEIGHT,
        "cost_bar_width": COST_BAR_WIDTH,
        "tokens_per_char": tokens_per_char,
    }
