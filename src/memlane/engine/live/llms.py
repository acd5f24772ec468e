"""Which LLMs a session uses, chosen from the configuration (llm.*, topics.*.model).

Capture distils with ``llm.provider`` (with ``auto`` and a host that offers
``llm.complete``, the host's own model; with ``auto`` inside Claude Code, the
user's ``claude -p --model haiku``: llm/factory.py); topic surfacing and extraction may
name a cheaper model of the same provider. A configuration that cannot work
becomes a notice and the task goes without (capture then writes verbatim
digests): a session never fails to start because of its LLM.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from memlane.core.errors import ConfigError

if TYPE_CHECKING:
    from memlane.engine.project import Memory
    from memlane.llm.base import LLM
    from memlane.llm.host import HostCall


def capture_llm(
    memory: Memory, host_call: HostCall | None, notices: list[str], host: str | None = None
) -> LLM | None:
    """The LLM that distils exchanges; None (and a notice why) when it cannot be made.

    ``host`` is the session's host name: inside Claude Code, ``auto`` runs the
    user's ``claude -p``; without ``claude`` on PATH a notice says how to
    configure a model instead."""
    from memlane.llm.defaults import CLAUDE_CODE_HOST, CLAUDE_NOT_FOUND_HINT
    from memlane.llm.factory import make_llm

    try:
        llm = make_llm(memory.config.llm, host_call=host_call, host=host, clock=memory.clock)
    except ConfigError as exc:
        notices.append(f"capture LLM unusable ({exc}); entries are verbatim digests")
        return None
    if llm is None and host == CLAUDE_CODE_HOST and memory.config.llm.provider == "auto":
        notices.append(f"no LLM for distillation: {CLAUDE_NOT_FOUND_HINT}")
    return llm


def task_llm(
    memory: Memory,
    task: str,
    host_call: HostCall | None,
    notices: list[str],
    host: str | None = None,
) -> LLM | None:
    """A topic task's own model (pi-memory's autoSurfacing.model, extractMemories.model),
    on the capture provider; None when none is set or it cannot be made (a notice says)."""
    from memlane.llm.factory import make_llm

    model = memory.config.topics.model_for(task)
    if not model:
        return None
    try:
        llm = make_llm(
            replace(memory.config.llm, capture_model=model),
            host_call=host_call,
            host=host,
            clock=memory.clock,
        )
    except ConfigError as exc:
        notices.append(f"{task} model {model!r} unusable ({exc})")
        return None
    if task == "auto_surfacing" and llm is not None and _is_claude_child(llm):
        # A `claude -p` per prompt cannot answer within AUTO_CONTEXT_CAP_MS and
        # would spend a daily call on every prompt: surfacing goes without it.
        notices.append(
            f"{task} model {model!r} would start a claude -p on every prompt; surfacing "
            "ranks without a model (set llm.provider for a fast one)"
        )
        return None
    return llm


def _is_claude_child(llm: LLM) -> bool:
    from memlane.llm.claude_code import ClaudeCodeLLM

    return isinstance(getattr(llm, "inner", llm), ClaudeCodeLLM)
