"""What the agent tools do, one implementation for every host.

pi's sidecar, the MCP server and the CLI all call ``Tools.call(name,
arguments)`` and get a ``ToolResult``: ``text`` is what the agent reads (the
same rendering everywhere), ``details`` the structured form. The tools'
specs are in tools/spec.py, which ones exist in tools/catalog.py; a call is
checked against its spec first, so a bad call gets the same clear error on
every surface.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from memlane.core.errors import MemlaneError
from memlane.engine.tools.catalog import SPEC_BY_NAME
from memlane.engine.tools.spec import ToolResult, check_arguments

if TYPE_CHECKING:
    from memlane.engine.live.session import Session
    from memlane.engine.project import Memory


class Tools:
    """Dispatches tool calls to one project's Memory (and live Session, if any)."""

    def __init__(
        self,
        memory: Memory,
        session: Session | None = None,
        *,
        caller_is_person: bool = False,
        write_anchor: Callable[[], tuple[str, str | None] | None] | None = None,
    ) -> None:
        """``caller_is_person``: a person at the CLI, not an agent over MCP or the
        sidecar; memory_transcript then opens any transcript path they name
        (engine/recall/transcript_access.py), still only a regular file.
        ``write_anchor``: without a session, the (session id, transcript path)
        a memory_write is anchored to, when the host can tell (the MCP server
        inside Claude Code: hosts/claude_code/running.py)."""
        self.memory = memory
        self.session = session
        self.caller_is_person = caller_is_person
        self.write_anchor = write_anchor
        self._handlers: dict[str, Callable[[dict[str, Any]], ToolResult]] = {
            "memory_write": self._write,
            "memory_search": self._search,
            "memory_expand": self._expand,
            "memory_transcript": self._transcript,
            "memory_forget": self._forget,
            "memory_compact": self._compact,
            "memory_status": self._status,
            "memory_topic": self._topic,
            "memory_similar": self._similar,
        }

    @property
    def names(self) -> list[str]:
        return list(self._handlers)

    def call(self, name: str, arguments: Mapping[str, Any] | None = None) -> ToolResult:
        spec = SPEC_BY_NAME.get(name)
        handler = self._handlers.get(name)
        if spec is None or handler is None:
            raise MemlaneError(
                f"unknown tool {name!r}", f"the tools are: {', '.join(self._handlers)}"
            )
        try:
            checked = check_arguments(spec, arguments)
            result = handler(checked)
        except MemlaneError as exc:
            # An error may quote an argument (a title, a path, a value): what
            # goes back to the agent or the MCP client carries no secret.
            _redact_error(exc)
            raise
        if self.session is not None:
            # What memlane handed the agent is recalled, not news: capture
            # must not write it back as a new memory (engine/journal/echo.py).
            self.session.note_tool(name, checked, result.text)
        return result

    def _base(self) -> str:
        return str(self.memory.scope.repository_dir)

    # -- handlers -------------------------------------------------------------------------

    def _write(self, args: dict[str, Any]) -> ToolResult:
        from memlane.core.types import Anchor
        from memlane.store.daily import new_entry_id

        anchor = None
        if self.session is not None:
            anchor = Anchor(
                session=self.session.session_id,
                turn=new_entry_id(),
                transcript=self.session.transcript_path or "none",
            )
        elif self.write_anchor is not None:
            running = self.write_anchor()
            if running is not None:
                anchor = Anchor(
                    session=running[0], turn=new_entry_id(), transcript=running[1] or "none"
                )
        entry = self.memory.write(args["text"], anchor)
        if self.session is not None:
            self.session.note_write()
        text = f"Saved to {entry.path} at {entry.time}:\n{entry.text.rstrip()}"
        return ToolResult(text, entry.to_json())

    def _search(self, args: dict[str, Any]) -> ToolResult:
        from memlane.core.render import TOOL_EXPAND_HINT, render_search
        from memlane.engine.recall.request import SearchRequest
        from memlane.engine.recall.router import search

        request = SearchRequest(
            args["query"],
            args.get("k"),
            kind=args.get("kind"),
            scope=args.get("scope") or "project",
            after=args.get("after"),
            before=args.get("before"),
            session=args.get("session"),
            mode=args.get("mode", "hybrid"),
            min_score=args.get("min_score"),
            # In a live session its indexer keeps the index current and the
            # search first indexes what the session wrote since (so a
            # memory_write just made is found); without a session the whole
            # store is synced first.
            sync=self.session is None,
        )
        recalled = search(self.memory, request)
        if recalled.fan_out is not None:
            hint = "memory_expand(chunk_hash, project=the hit's project)"
            return ToolResult(
                render_search(recalled.result, None, hint), recalled.fan_out.to_json()
            )
        hint = TOOL_EXPAND_HINT
        if request.route == "sessions":
            hint = "memory_transcript(transcript_path=source, turn) or " + TOOL_EXPAND_HINT
        result = recalled.result
        return ToolResult(render_search(result, self._base(), hint), result.to_json())

    def _similar(self, args: dict[str, Any]) -> ToolResult:
        from memlane.core.errors import NotFoundError
        from memlane.core.render import TOOL_EXPAND_HINT, render_search

        k = args.get("k", 10)
        hint = TOOL_EXPAND_HINT
        try:
            result = self.memory.similar(args["chunk_hash"], k)
        except NotFoundError:
            hint = "memory_transcript(transcript_path=source, turn)"
            from memlane.engine.sessions.layer import similar_sessions

            try:
                result = similar_sessions(self.memory, args["chunk_hash"], k)
            except NotFoundError:
                raise NotFoundError(
                    f"nothing stored under {args['chunk_hash']!r}",
                    "pass a chunk hash from memory_search, or a session message id or key "
                    'from a kind "session" search',
                ) from None
        return ToolResult(render_search(result, self._base(), hint), result.to_json())

    def _expand(self, args: dict[str, Any]) -> ToolResult:
        from memlane.core.render import render_section

        project = args.get("project")
        if project and not self._is_own_project(project):
            from memlane.engine.recall.crossrepo import expand_in_project

            section = expand_in_project(self.memory, args["chunk_hash"], project)
            return ToolResult(render_section(section, project), section.to_json())
        section = self.memory.expand(args["chunk_hash"])
        return ToolResult(render_section(section, self._base()), section.to_json())

    def _is_own_project(self, project: str) -> bool:
        import os

        own = {os.path.realpath(self.memory.scope.scope)}
        own.add(os.path.realpath(self.memory.scope.repository_dir))
        return os.path.realpath(project) in own

    def _transcript(self, args: dict[str, Any]) -> ToolResult:
        from memlane.engine.project import NO_TRANSCRIPT
        from memlane.transcripts import read_transcript

        if args["transcript_path"].strip() in ("", NO_TRANSCRIPT):
            raise MemlaneError(
                "this memory has no transcript: it was written outside an agent session",
                "memory_expand shows everything that was kept of it",
            )
        project: str | None = args.get("project") or None
        foreign = project is not None and not self._is_own_project(project)
        if project is not None and foreign:
            from memlane.engine.recall.crossrepo import resolve_project

            # The transcript path is absolute; the label is checked through the
            # same seam as expansion so a bad label fails the same way.
            resolve_project(self.memory, project)
        if not self.caller_is_person:
            from memlane.engine.recall.transcript_access import check_transcript_allowed

            # An agent sees only this project's sessions and anchored transcripts.
            check_transcript_allowed(
                self.memory,
                args["transcript_path"],
                session_transcript=self.session.transcript_path if self.session else None,
                project=project if foreign else None,
            )
        settings = self.memory.config.session
        transcript = read_transcript(
            args["transcript_path"],
            args.get("turn"),
            context=settings.transcript_context,
            limit=settings.transcript_limit,
            turn_char_cap=settings.turn_char_cap,
        )
        from memlane.engine.recall.transcript_redaction import redacted_transcript

        # The host wrote the file verbatim; what memlane shows of it is redacted.
        transcript = redacted_transcript(transcript)
        return ToolResult(transcript.render(), transcript.to_json())

    def _forget(self, args: dict[str, Any]) -> ToolResult:
        from memlane.engine.journal.maintenance import forget

        chunk_hash, date, time = args.get("chunk_hash"), args.get("date"), args.get("time")
        if not chunk_hash and not (date and time):
            raise MemlaneError(
                "memory_forget needs a chunk_hash, or both date and time",
                "find the entry with memory_search; its chunk hash addresses it",
            )
        if chunk_hash and (date or time):
            raise MemlaneError("memory_forget takes a chunk_hash or a date and time, not both")
        removed = forget(self.memory, chunk_hash=chunk_hash, date=date, time=time)
        if self.session is not None:
            self.session.refresh_snapshot()
        text = (
            f"Removed from {removed.source} (lines {removed.start_line}-{removed.end_line}). "
            "This is the only remaining copy:\n\n" + removed.markdown.rstrip()
        )
        return ToolResult(text, removed.to_json())

    def _compact(self, args: dict[str, Any]) -> ToolResult:
        from memlane.engine.journal.maintenance import compact

        llm = self.session.llm if self.session is not None else None
        if llm is None:
            from memlane.llm.factory import make_llm

            llm = make_llm(self.memory.config.llm, purpose="compact")
        summary = compact(self.memory, llm, source=args.get("source"))
        return ToolResult(summary, {"summary": summary})

    def _status(self, args: dict[str, Any]) -> ToolResult:
        from memlane.engine.reports import render_status

        status = self.session.status() if self.session is not None else self.memory.status()
        return ToolResult(render_status(status), status.to_json())

    def _topic(self, args: dict[str, Any]) -> ToolResult:
        from memlane.engine.topics.ops import topic_tool

        # A live session's indexer picks the change up (debounced), and a
        # search before that indexes the changed file first; without a
        # session the index is brought up to date before answering.
        result = topic_tool(self.memory, args, sync=self.session is None)
        if self.session is not None and args["action"] in ("add", "remove"):
            self.session.note_write()
        return result


def _redact_error(exc: MemlaneError) -> None:
    from memlane.store.redaction import redact

    exc.message = redact(exc.message).text
    if exc.hint:
        exc.hint = redact(exc.hint).text
    exc.args = (exc.message,)
