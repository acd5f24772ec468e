"""What the agent tools do, one implementation for every host.

pi's sidecar, the MCP server and the CLI all call ``Tools.call(name,
arguments)`` and get a ``ToolResult``: ``text`` is what the agent reads (the
same rendering everywhere), ``details`` the structured form: the same
facts, and the text's sentences as fields (``headline``, ``next``), shaped
as engine/shared/tool_outputs.py declares. The tools'
specs are declared in engine/shared/tool_catalog.py (what a spec is: engine/shared/tool_spec.py); a call is
checked against its spec first, so a bad call gets the same clear error on
every surface.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from memlane.core.errors import MemlaneError
from memlane.engine.live.switch import SettingsFollower
from memlane.engine.shared.tool_catalog import SPEC_BY_NAME
from memlane.engine.shared.tool_spec import ToolResult, check_arguments

if TYPE_CHECKING:
    from memlane.core.types import SearchResult, Section
    from memlane.engine.live.session import Session
    from memlane.engine.project import Memory


WRITE = "memory_write"


def prepare_call(name: str, arguments: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """*arguments* with the part of the call that needs no project done: a
    ``memory_write``'s scan for secrets (seconds for megabytes of text).

    A host that runs a project's calls one at a time on its worker calls this
    before handing the call over, on its own thread, so a big write does not
    hold the worker (and every search behind it) while it is scanned.
    ``Memory.write`` scans the text again; for a long text just scanned that
    costs a comparison and keeps the first scan's count (store/redaction.py).
    A short text is left to ``Memory.write``: its scan takes milliseconds, and
    a second scan of an already redacted text would count nothing. The fault
    step ``write.redacted`` follows the scan.
    """
    from memlane.core.faults import step
    from memlane.store.redaction import SETTLED_MIN_CHARS, redact_for_storage

    if name != WRITE or arguments is None or not isinstance(arguments.get("text"), str):
        return arguments
    if len(arguments["text"]) < SETTLED_MIN_CHARS:
        step("write.redacted")
        return arguments
    prepared = {**arguments, "text": redact_for_storage(arguments["text"])}
    step("write.redacted")
    return prepared


class Tools:
    """Dispatches tool calls to one project's Memory (and live Session, if any)."""

    def __init__(
        self,
        memory: Memory,
        session: Session | None = None,
        *,
        caller_is_person: bool = False,
        write_anchor: Callable[[], tuple[str, str | None] | None] | None = None,
        host: str | None = None,
    ) -> None:
        """``caller_is_person``: a person at the CLI, not an agent over MCP or the
        sidecar; memory_transcript then opens any transcript path they name
        (engine/recall/transcript_access.py), still only a regular file.
        ``write_anchor``: without a session, the (session id, transcript path)
        a memory_write is anchored to, when the host can tell (the MCP server
        inside Claude Code: hosts/claude_code/running.py). ``host``: without a
        session, the host the caller runs in, when known (memory_status then
        names the LLM that host's sessions distil with)."""
        self.memory = memory
        self.host = host
        self.session = session
        self.caller_is_person = caller_is_person
        self.write_anchor = write_anchor
        # Without a session (the MCP server), the tools themselves follow the
        # live settings (`memlane memory on|off`), as a session does
        # (engine/live/switch.py).
        self._follower = SettingsFollower(memory) if session is None else None
        self._handlers: dict[str, Callable[[dict[str, Any]], ToolResult]] = {
            WRITE: self._write,
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
        # A live setting changed since the last call: the tools follow it.
        if self.session is not None:
            self.session.internals.follow_settings()
        elif self._follower is not None:
            self._follower.poll()
        try:
            checked = check_arguments(spec, arguments)
            with _waits_of(self.memory, name, checked):
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
        supersedes = args.get("supersedes")
        entry = self.memory.write(
            args["text"], anchor, supersedes=(supersedes,) if supersedes else ()
        )
        if self.session is not None:
            self.session.internals.note_write()
        headline = f"Saved to {entry.path} at {entry.time}"
        text = f"{headline}:\n{entry.text.rstrip()}"
        if entry.redactions:
            from memlane.store.redaction import redaction_notice

            text += f"\n{redaction_notice(entry.redactions)}"
        return ToolResult(text, {"headline": headline, **entry.to_json()})

    def _search(self, args: dict[str, Any]) -> ToolResult:
        from memlane.core.render import TOOL_EXPAND_HINT
        from memlane.engine.recall.router import search
        from memlane.engine.shared.request import SearchRequest

        live = self.session.internals if self.session is not None else None
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
            order=args.get("order") or "relevance",
            # In a live session its indexer keeps the index current and the
            # search first indexes what the session wrote since (so a
            # memory_write just made is found); without a session the whole
            # store is synced first.
            sync=self.session is None,
            # An agent in a session gets lexical results at once, said so, rather
            # than wait for a model that is still loading (a first start: a minute).
            wait_for_model=self.session is None,
            # Until the session's start has caught up, what other tools wrote
            # before it (a terminal's `memlane write`, another agent's
            # transcript) is indexed by the search itself, or it says so.
            outside_notes=live is not None and not live.indexer.state.caught_up,
            outside_sessions=live is not None and live.sessions_catching_up,
        )
        recalled = search(self.memory, request)
        if recalled.fan_out is not None:
            hint = "memory_expand(chunk_hash, project=the hit's project)"
            return search_result(recalled.result, None, hint, recalled.fan_out.to_json())
        hint = TOOL_EXPAND_HINT
        if request.route == "sessions":
            hint = "memory_transcript(transcript_path=source, turn) or " + TOOL_EXPAND_HINT
        result = recalled.result
        return search_result(result, self._base(), hint)

    def _similar(self, args: dict[str, Any]) -> ToolResult:
        from memlane.core.errors import NotFoundError
        from memlane.core.render import TOOL_EXPAND_HINT

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
        return search_result(result, self._base(), hint)

    def _expand(self, args: dict[str, Any]) -> ToolResult:
        from memlane.core.render import render_section

        project = args.get("project")
        if project and not self._is_own_project(project):
            from memlane.engine.recall.crossrepo import expand_in_project

            section = expand_in_project(self.memory, args["chunk_hash"], project)
            return section_result(section, render_section(section, project), project)
        section = self.memory.expand(args["chunk_hash"])
        return section_result(section, render_section(section, self._base()), None)

    def _is_own_project(self, project: str) -> bool:
        import os

        from memlane.engine.recall.crossrepo import check_project_label

        check_project_label(project)  # before realpath, which raises on a NUL
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
        path: str = args["transcript_path"]
        if not self.caller_is_person:
            from memlane.engine.recall.transcript_access import check_transcript_allowed

            # An agent sees only this project's sessions and anchored
            # transcripts, and gets the file that was checked (links resolved).
            path = check_transcript_allowed(
                self.memory,
                path,
                session_transcript=self.session.transcript_path if self.session else None,
                project=project if foreign else None,
            )
        settings = self.memory.config.session
        transcript = read_transcript(
            path,
            args.get("turn"),
            context=settings.transcript_context,
            limit=settings.transcript_limit,
            turn_char_cap=settings.turn_char_cap,
        )
        from memlane.engine.recall.transcript_redaction import redacted_transcript

        # The host wrote the file verbatim; what memlane shows of it is redacted.
        transcript = redacted_transcript(transcript)
        return with_headline(transcript.render(), transcript.to_json())

    def _forget(self, args: dict[str, Any]) -> ToolResult:
        return self._forget_checked(args.get("chunk_hash"), args.get("date"), args.get("time"))

    def forget_confirmed(
        self,
        expect: str,
        *,
        chunk_hash: str | None = None,
        date: str | None = None,
        time: str | None = None,
    ) -> ToolResult:
        """memory_forget after a confirmation: *expect* is the fingerprint of
        what it showed (forget_preview.py); a file changed since is refused
        (``ConflictError``) under the store lock, nothing removed."""
        try:
            return self._forget_checked(chunk_hash, date, time, expect=expect)
        except MemlaneError as exc:
            _redact_error(exc)
            raise

    def _forget_checked(
        self,
        chunk_hash: str | None,
        date: str | None,
        time: str | None,
        *,
        expect: str | None = None,
    ) -> ToolResult:
        from memlane.engine.journal.maintenance import forget

        if not chunk_hash and not (date and time):
            raise MemlaneError(
                "memory_forget needs a chunk_hash, or both date and time",
                "find the entry with memory_search; its chunk hash addresses it",
            )
        if chunk_hash and (date or time):
            raise MemlaneError(
                "memory_forget takes a chunk_hash or a date and time, not both",
                "pass the chunk_hash alone, or date and time without it",
            )
        removed = forget(self.memory, chunk_hash=chunk_hash, date=date, time=time, expect=expect)
        if self.session is not None:
            self.session.refresh_snapshot()
        headline = (
            f"Removed from {removed.source} (lines {removed.start_line}-{removed.end_line}). "
            "This is the only remaining copy:"
        )
        text = headline + "\n\n" + removed.markdown.rstrip()
        return ToolResult(text, {"headline": headline, **removed.to_json()})

    def _compact(self, args: dict[str, Any]) -> ToolResult:
        from memlane.engine.journal.maintenance import compact

        llm = self.session.llm if self.session is not None else None
        if llm is None:
            from memlane.llm.factory import make_llm

            llm = make_llm(self.memory.config.llm, purpose="compact", clock=self.memory.clock)
        summary = compact(self.memory, llm, source=args.get("source"))
        return ToolResult(summary, {"summary": summary})

    def _status(self, args: dict[str, Any]) -> ToolResult:
        from memlane.engine.reports import render_status

        status = (
            self.session.status()
            if self.session is not None
            else self.memory.status(host=self.host)
        )
        return ToolResult(render_status(status), status.to_json())

    def _topic(self, args: dict[str, Any]) -> ToolResult:
        from memlane.engine.topics.ops import topic_tool

        # A live session's indexer picks the change up (debounced), and a
        # search before that indexes the changed file first; without a
        # session the index is brought up to date before answering.
        result = topic_tool(self.memory, args, sync=self.session is None)
        if self.session is not None and args["action"] in ("add", "remove"):
            self.session.internals.note_write()
        return with_headline(result.text, result.details)


# -- results: the text, and the same facts as fields --------------------------------------
# A client may show the agent the structured form instead of the text (Claude Code
# does): every sentence the text adds to the facts (a headline, what scores mean,
# what to call next) is a field of it too, worded the same.


def search_result(
    result: SearchResult,
    base: str | None,
    hint: str,
    details: dict[str, Any] | None = None,
) -> ToolResult:
    from memlane.core.render import render_search, search_hints

    facts = details if details is not None else result.to_json()
    hints = search_hints(result, hint)
    # The headline first and what to do next last, as the text reads.
    fields = {"query": result.query, "headline": hints.pop("headline"), **facts, **hints}
    return ToolResult(render_search(result, base, hint), fields)


def section_result(section: Section, text: str, project: str | None) -> ToolResult:
    """L2's section, with the call that reads its conversation when it has one."""
    from memlane.engine.project import NO_TRANSCRIPT

    details = section.to_json()
    anchor = section.anchor
    if anchor is not None and anchor.transcript.strip() not in ("", NO_TRANSCRIPT):
        more = f", project={project!r}" if project else ""
        step = (
            "Read the original conversation: memory_transcript("
            f"transcript_path={anchor.transcript!r}, turn={anchor.turn!r}{more})"
        )
        text = f"{text.rstrip()}\n\n{step}"
        details["next"] = step
    return ToolResult(text, details)


def with_headline(text: str, details: dict[str, Any]) -> ToolResult:
    """*details* with the text's first line as ``headline``."""
    return ToolResult(text, {"headline": text.split("\n", 1)[0], **details})


#: Tools that only read: a lock another process holds is waited for briefly
#: (session.backoff_delays_ms), then the part it keeps is reported
#: (engine/lock_waits.py). memory_topic reads unless it adds or removes.
READ_TOOLS = frozenset({"memory_search", "memory_expand", "memory_similar", "memory_status"})


def _waits_of(memory: Memory, name: str, arguments: dict[str, Any]) -> AbstractContextManager[Any]:
    from contextlib import nullcontext

    from memlane.engine.lock_waits import read_waits

    reads = name in READ_TOOLS or (
        name == "memory_topic" and arguments.get("action") not in ("add", "remove")
    )
    return read_waits(memory) if reads else nullcontext()


def _redact_error(exc: MemlaneError) -> None:
    from memlane.store.redaction import redact

    exc.message = redact(exc.message).text
    if exc.hint:
        exc.hint = redact(exc.hint).text
    exc.args = (exc.message,)
