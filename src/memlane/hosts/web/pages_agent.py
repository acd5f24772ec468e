"""What the agent sees (engine/agent_view.py as a page): the session-start
snapshot as the agent gets it, a sample auto-context for a prompt typed
here, and their sizes in characters and tokens."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memlane.hosts.web.render import render

if TYPE_CHECKING:
    from collections.abc import Mapping

    from memlane.hosts.web.viewer import Viewer

#: The longest prompt the page samples (auto-context reads no more of one).
PROMPT_CHARS = 2000


def agent(viewer: Viewer, params: Mapping[str, str]) -> str:
    from memlane.engine import agent_view

    memory = viewer.memory
    seen = agent_view.snapshot(memory)
    prompt = params.get("prompt", "")[:PROMPT_CHARS]
    sample = agent_view.sample_auto_context(memory, prompt, seen) if prompt.strip() else None
    settings = memory.config.session
    return render(
        "agent.html",
        title="What the agent sees",
        active="/agent",
        snapshot=agent_view.Sized.of(seen.text),
        prompt=prompt,
        sample=agent_view.Sized.of(sample) if sample else None,
        asked=bool(prompt.strip()),
        auto_context_on=settings.auto_context_enabled,
        floor=settings.auto_context_score_floor,
        budget=settings.auto_context_char_budget,
    )
