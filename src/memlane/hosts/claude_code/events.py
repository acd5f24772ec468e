"""Claude Code's hook events, translated into the engine's ``Session`` calls.

| hook event | what the engine does | what Claude Code gets |
|---|---|---|
| SessionStart (startup, resume, clear) | open the session, or reuse it | the snapshot as ``additionalContext``, a status line as ``systemMessage`` |
| SessionStart (compact), PreCompact | ``Session.compacted()``: the snapshot rebuilt | SessionStart: the new snapshot |
| UserPromptSubmit | ``Session.before_agent_start(prompt)`` | the hidden message as ``additionalContext`` |
| Stop | the settled exchange read from the transcript → ``Session.agent_settled`` (in the capture log before the answer) | nothing |
| SessionEnd (installs before issue 26) | ``Session.shutdown()``, on the engine's threads (the hook returns at once) | nothing |

memlane installs no SessionEnd hook: a session ends, the same way, when its
Claude Code process is gone (``end_abandoned``, on the engine's tick) or
when that process starts another session (``end_replaced``, at its
SessionStart: ``/clear``, ``/resume``), since one Claude Code process runs
one session at a time (docs/adr/0026-claude-code-sessions-end-without-a-hook.md).

A hook of a session the engine does not know (it was started after the
session began, or restarted) opens it first: ``Session.start`` then also
writes what a killed engine left in the project's capture logs.

A new session's background start (its catch-up index, that recovery, the
warm auto-context worker) begins ``BACKGROUND_GRACE_S`` after the
SessionStart answer, not at once: the agent's first prompt follows within
milliseconds when it runs headless (``claude -p``, ``codex exec``), and its
UserPromptSubmit hook and the agent itself would share the cores with that
work (docs/adr/0047-a-new-sessions-background-waits-for-its-first-prompt.md).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from memlane.hosts.claude_code import running, turns
from memlane.hosts.server.projects import Project, Projects

if TYPE_CHECKING:
    from memlane.engine.live.session import Session
    from memlane.hosts.claude_code.exchange import Turn

log = logging.getLogger("memlane.claude_code")

HOST = "claude-code"
#: The SessionStart status line Claude Code shows the user is cut here.
STATUS_LINE_CHARS = 400
#: How long after its SessionStart answer a new session's background start waits:
#: past the first prompt's hook of a headless run, within the model's first answer
#: (ADR 0047). A session that ends sooner leaves it to the project's next session.
BACKGROUND_GRACE_S = 0.5


class BadHookInput(Exception):
    pass


def _str(data: dict[str, Any], key: str) -> str | None:
    value = data.get(key)
    return value if isinstance(value, str) and value else None


class Events:
    """Answers one hook call: Claude Code's input → its hook output (or None)."""

    #: The host sessions are opened for (hosts/codex/events.py: "codex").
    host = HOST
    #: BACKGROUND_GRACE_S, per instance (a test sets 0, or an hour).
    background_grace_s = BACKGROUND_GRACE_S

    def __init__(self, projects: Projects) -> None:
        self.projects = projects

    def handle(
        self,
        data: dict[str, Any],
        claude_pid: int | None,
        after_answer: list[Callable[[], object]] | None = None,
    ) -> dict[str, Any] | None:
        """The hook's output. With *after_answer*, a new session's background
        start (catch-up index, recovery, warm worker) is appended to it for the
        caller to run once Claude Code has its answer, which starts it
        ``background_grace_s`` later; without, it runs now."""
        event = _str(data, "hook_event_name")
        session_id = _str(data, "session_id")
        if event is None or session_id is None:
            raise BadHookInput("the hook input needs hook_event_name and session_id")
        if event == "Stop" and data.get("stop_hook_active") is True:
            return None  # Claude goes on because a Stop hook asked it to: the turn is not over
        project = self.projects.for_session(session_id, _str(data, "cwd"))
        if project is None:
            raise BadHookInput(f"{event} of an unknown session names no cwd")
        if event == "SessionEnd":
            self._end(project, session_id)
            return None
        name = _HANDLERS.get(event)
        if name is None:
            return None  # an event memlane has nothing to do for
        handler = getattr(self, name)
        if event == "SessionStart" and claude_pid is not None:
            self.end_replaced(claude_pid, session_id)

        opened: list[Session] = []

        def job() -> dict[str, Any] | None:
            session = self._session(project, session_id, data, opened)
            running.note(project.collection, session_id, session.transcript_path, claude_pid)
            result: dict[str, Any] | None = handler(project, session, data)
            return result

        try:
            return project.run(job).result()
        finally:
            for session in opened:
                if after_answer is None:
                    session.internals.start_background()
                else:
                    after_answer.append(partial(self.start_background_later, project, session))

    def start_background_later(self, project: Project, session: Session) -> threading.Timer:
        """Start *session*'s background on its project's worker ``background_grace_s``
        from now (a session shut down by then starts nothing); the timer."""

        def start() -> None:
            try:
                project.run(session.internals.start_background)
            except RuntimeError:  # the engine is closing: its projects take no new work
                log.info("session %s: the engine closed before its start", session.session_id[:8])

        timer = threading.Timer(self.background_grace_s, start)
        timer.name = "memlane-session-start"
        timer.daemon = True
        timer.start()
        return timer

    def _end(self, project: Project, session_id: str) -> None:
        """End the session on the engine's own threads, without waiting: Claude Code
        cancels a SessionEnd hook that takes long at exit, and what the end flushes
        is in the capture log already (the engine outlives the hook)."""
        running.ended(project.collection, session_id)
        self.projects.end(project, session_id, wait=False)
        turns.forget_session(session_id)

    def end_replaced(self, claude_pid: int, session_id: str) -> None:
        """End the other sessions of the Claude Code process that starts *session_id*
        (``/clear``, ``/resume``): it runs one session at a time."""
        for project, other in self.projects.every_session():
            if (
                other != session_id
                and running.recorded_pid(project.collection, other) == claude_pid
            ):
                log.info(
                    "session %s: its agent (pid %d) went on with %s: ending it",
                    other[:8],
                    claude_pid,
                    session_id[:8],
                )
                self._end(project, other)

    def end_abandoned(self) -> None:
        """End the sessions whose Claude Code process is gone without a SessionEnd
        (killed, crashed): their captures are written now, not when the engine exits."""
        from memlane.core.process import pid_alive

        for project, session_id in self.projects.every_session():
            pid = running.recorded_pid(project.collection, session_id)
            if pid is None or pid_alive(pid):
                continue
            # Every host's sessions are here (Codex's too): the log names no agent.
            log.info("session %s: its agent (pid %d) is gone: ending it", session_id[:8], pid)
            self._end(project, session_id)

    def _session(
        self, project: Project, session_id: str, data: dict[str, Any], opened: list[Session]
    ) -> Session:
        """The open session, or a new one (on the project's worker thread),
        added to *opened* with its background start left to the caller."""
        from memlane.engine.live.session import Session

        session = self.projects.session(project, session_id)
        if session is None:
            session = Session.open(
                project.memory,
                host=self.host,
                session_id=session_id,
                transcript_path=_str(data, "transcript_path"),
                background=project.background,
                defer_background=True,
            )
            opened.append(session)
            self.projects.opened(project, session)
            turns.opened(session_id)
        return session

    # -- events (on the project's worker thread) ------------------------------------------

    def session_start(
        self, project: Project, session: Session, data: dict[str, Any]
    ) -> dict[str, Any]:
        text = session.compacted() if data.get("source") == "compact" else session.snapshot.text
        return {
            "systemMessage": self._status_line(project, session),
            "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text},
        }

    def user_prompt(
        self, project: Project, session: Session, data: dict[str, Any]
    ) -> dict[str, Any] | None:
        injection = session.before_agent_start(_str(data, "prompt") or "")
        if not injection.message:
            log.debug("no hidden message: %s", session.auto_context.to_json())
            return None
        return {
            "hookSpecificOutput": {
                "hookEventName": "UserPromptSubmit",
                "additionalContext": injection.message,
            }
        }

    def stop(self, project: Project, session: Session, data: dict[str, Any]) -> None:
        from memlane.hosts.claude_code.exchange import read_turn

        transcript = _str(data, "transcript_path") or session.transcript_path
        if transcript is None:
            return None
        # Claude Code names the final answer in the Stop input (2.1): one its
        # transcript does not hold yet is still part of the exchange.
        turn = read_turn(transcript, session.session_id, _str(data, "last_assistant_message"))
        if turn is not None:
            self.settle(session, turn)
        return None

    @staticmethod
    def settle(session: Session, turn: Turn) -> bool:
        """Queue a Stop's turn for capture, once; True when it was queued now."""
        if turns.already_captured(session, turn.key, turn.ids):
            log.info("Stop again for turn %s: already captured", turn.key)
            return False
        queued = session.agent_settled(turn.exchange)
        if queued.queued:
            # Only now: a Stop that raised, or found no answer yet, is tried again.
            turns.queued(session.session_id, turn.key)
        log.info("turn %s: %s", turn.key, queued.to_json())
        return queued.queued

    def pre_compact(self, project: Project, session: Session, data: dict[str, Any]) -> None:
        session.compacted()
        return None

    def _status_line(self, project: Project, session: Session) -> str:
        try:
            stats = project.memory.index.stats()
            counts = f"{stats.get('chunks', 0)} chunks in {stats.get('files', 0)} files"
        except Exception as exc:  # the status line never stops a session
            counts = f"index unavailable ({exc})"
        line = f"memlane: memory on, {counts}"
        if not session.capture.enabled:
            line += ", capture off"
        if session.notices:
            line += " · " + "; ".join(dict.fromkeys(session.notices))
        line = " ".join(line.split())  # one line, whatever a notice holds
        if len(line) > STATUS_LINE_CHARS:
            line = line[: STATUS_LINE_CHARS - 30].rstrip() + "… (memlane status says more)"
        return line


_HANDLERS = {
    "SessionStart": "session_start",
    "UserPromptSubmit": "user_prompt",
    "Stop": "stop",
    "PreCompact": "pre_compact",
}
