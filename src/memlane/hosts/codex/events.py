"""Codex's hook events, translated into the engine's ``Session`` calls.

Codex (0.171) runs command hooks with Claude Code's input and output shapes
(``hook_event_name``, ``session_id``, ``transcript_path``, ``cwd``;
``hookSpecificOutput.additionalContext``), so the Claude Code translation
(hosts/claude_code/events.py) serves it; what differs is here:

| hook event | what the engine does | what Codex gets |
|---|---|---|
| SessionStart (startup, resume, clear) | open the session (host ``codex``), or reuse it | the snapshot as ``additionalContext`` (a developer message), a status line |
| UserPromptSubmit | ``Session.before_agent_start(prompt)``; the prompt kept by ``turn_id`` | the hidden message as ``additionalContext`` |
| Stop | the turn ``turn_id`` read from Codex's rollout (hosts/codex/exchange.py) → ``Session.agent_settled`` | nothing |
| PreCompact | ``Session.compacted()`` | nothing |

Sessions end as Claude Code's do (docs/adr/0026): when the Codex process
that ran their hooks is gone, or starts another session.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any

from memlane.hosts.claude_code.events import Events
from memlane.hosts.server.projects import Project

if TYPE_CHECKING:
    from memlane.engine.live.session import Session

log = logging.getLogger("memlane.codex")

HOST = "codex"
#: Prompts kept per session until their turn's Stop (a session's last few).
KEPT_PROMPTS = 8
#: Sessions whose prompts are kept (the oldest dropped first).
KEPT_SESSIONS = 64


def _str(data: dict[str, Any], key: str) -> str | None:
    value = data.get(key)
    return value if isinstance(value, str) and value else None


class CodexEvents(Events):
    host = HOST

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._lock = threading.Lock()
        self._prompts: dict[str, dict[str, str]] = {}  # session → turn id → prompt

    def user_prompt(
        self, project: Project, session: Session, data: dict[str, Any]
    ) -> dict[str, Any] | None:
        turn, prompt = _str(data, "turn_id"), _str(data, "prompt")
        if turn and prompt:
            with self._lock:
                if session.session_id not in self._prompts and len(self._prompts) >= KEPT_SESSIONS:
                    self._prompts.pop(next(iter(self._prompts)))  # the oldest session's
                kept = self._prompts.setdefault(session.session_id, {})
                kept[turn] = prompt
                while len(kept) > KEPT_PROMPTS:
                    kept.pop(next(iter(kept)))
        return super().user_prompt(project, session, data)

    def stop(self, project: Project, session: Session, data: dict[str, Any]) -> None:
        from memlane.hosts.codex.exchange import read_turn

        transcript = _str(data, "transcript_path") or session.transcript_path
        if transcript is None:
            return None
        turn_id = _str(data, "turn_id")
        with self._lock:
            prompt = self._prompts.get(session.session_id, {}).get(turn_id or "")
        known = (turn_id, prompt) if turn_id and prompt else None
        turn = read_turn(
            transcript, session.session_id, turn_id, _str(data, "last_assistant_message"), known
        )
        if turn is not None and self.settle(session, turn):
            with self._lock:
                self._prompts.get(session.session_id, {}).pop(turn_id or "", None)
        return None
