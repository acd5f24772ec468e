"""One JSON-RPC connection to the engine: a host's session, its tool calls, its commands.

The sidecar protocol (DESIGN §9), one JSON object per line, spoken by every
thin client that is not a hook: pi (through ``memlane sidecar``, which only
relays bytes), ``memlane mcp``, the CLI. The connection's first line named the
client and its directory (core/link.py's ``rpc_header``).

| method | params | result |
|---|---|---|
| session_start | {cwd, session_id, transcript_path, host, reason?} | {snapshot, notices[]} |
| before_agent_start | {prompt} | {system_append, message: {content} or null} |
| agent_settled | {exchange: {user, assistant, aborted, entry_id, session_id, transcript_path, tools?}} | {queued, reason?} |
| session_compact | {} | {snapshot} |
| session_shutdown | {} | {flushed, pending} (see below) |
| prepare | {} | {collection} |
| tool | {name, arguments} | {text, details} |
| cli | {argv, stdin?, workdir?, detach?} | {stdout, stderr, code}; detach: {job, running, already, progress} |
| cli.job | {job} | {job, running, seconds, progress}, and once done {stdout, stderr, code} |
| dream.plan | {save?} | the dream's plan (hosts/server/dream_calls.py) |
| dream.apply | {plan} | {applied, changes, notices} |
| engine.status | {} | what ``memlane engine status`` shows |
| engine.stop | {} | {stopping: true} |
| engine.release_lite | {path} | {released}: let go of a Milvus Lite database another process wants |
| opencode.turn_end | {db} | capture the turn OpenCode stored (hosts/opencode/calls.py) |

and from the engine to the host:

| method | params | result |
|---|---|---|
| llm.complete | {system, prompt, model?, model_role?, max_tokens?} | {text}: the host's own model distils (llm/host.py) |
| llm.cancel | {id} (a notification: no answer) | the host stops that ``llm.complete`` |

The engine sends ``llm.cancel`` when it no longer wants an answer: the
call's deadline passed, or the session ended (``session_shutdown``, or a new
``session_start`` on the connection) while the call was still out. The
waiting call fails at once, so capture writes its fallback entry (the
exchange as a verbatim digest: nothing is lost) instead of holding the
shutdown until the host gives up on its model; the host aborts the model
request it made for that id. A host that ignores the notification loses
nothing but the work it does for no one.

``session_shutdown`` answers once the session no longer needs the host:
its pending captures are written (distilled through ``llm.complete`` within
``SHUTDOWN_CAP_MS``, the rest as digests) and their extractions are done
(``flushed``: all of them written; ``pending``: how many were not). In the
warm engine, indexing what was written goes on after the answer, on the
engine's threads, so the host can exit at once; the in-process sidecar
(no engine) settles the index first, as the process ends next.

A connection holds at most one session at a time (a new ``session_start``
ends the previous one). Its requests are answered in order on a thread of
the connection; work on a project's memory runs on that project's worker
(hosts/server/projects.py), so an index connection never changes threads.
When the client goes away, its session is ended as if it had sent
``session_shutdown``: the captures are written (without the host's model
once the host is gone).
"""

from __future__ import annotations

import logging
import queue
import sys
import threading
import time
import traceback
from collections.abc import Callable
from concurrent.futures import Future
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from memlane.core.errors import MemlaneError
from memlane.hosts.jsonrpc import (
    APPLICATION_ERROR,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    Cancelled,
    Connection,
    RemoteError,
    Request,
    RpcError,
)
from memlane.hosts.server import command_calls
from memlane.hosts.server.command_calls import (
    CommandRunner,
    ParamsError,
    obj_params,
    str_param,
)

if TYPE_CHECKING:
    from memlane.engine.live.session import Session
    from memlane.engine.tools.dispatch import Tools
    from memlane.hosts.server.projects import Project, Projects

log = logging.getLogger("memlane.engine")

#: How long the engine waits for the host to answer llm.complete beyond the
#: LLM deadline itself (the host's own request also needs a moment).
HOST_CALL_SLACK_S = 2.0
HOST_CALL = "llm.complete"
#: The notification that tells the host to stop an ``llm.complete`` {id}.
HOST_CANCEL = "llm.cancel"
#: The host closed the connection without ending its session: how long the
#: pending captures may take to be written.
END_OF_INPUT_FLUSH_CAP_MS = 10_000


class EngineControl(Protocol):
    """What a connection may ask of the engine process itself."""

    def status(self) -> dict[str, Any]: ...

    def stop(self) -> None: ...


def _rpc_error(method: str, exc: Exception) -> RpcError:
    """What a handler raised, as the error the client gets."""
    if isinstance(exc, ParamsError):
        return RpcError(INVALID_PARAMS, str(exc))
    if isinstance(exc, RpcError):
        return exc
    if isinstance(exc, MemlaneError):
        return RpcError(APPLICATION_ERROR, str(exc), {"hint": exc.hint})
    traceback.print_exception(exc, file=sys.stderr)
    return RpcError(INTERNAL_ERROR, f"internal error in {method}: {exc!r}")


class RpcSession:
    """Serves one connection until the client closes it."""

    def __init__(
        self,
        connection: Connection,
        projects: Projects,
        directory: Path,
        *,
        client: str = "unknown",
        client_pid: int | None = None,
        agent_session: str | None = None,
        engine: EngineControl | None = None,
        commands: CommandRunner | None = None,
        wait_at_end: bool = False,
    ) -> None:
        """``directory``: the client's working directory (tool calls before any
        session act there). ``client_pid`` and ``agent_session``: the process
        that started the client and the agent session it names, so a
        ``memory_write`` from Claude Code's MCP server is anchored to its session
        (hosts/claude_code/running.py). ``wait_at_end``: at the end of input, wait
        for the session's captures (a process that exits next) or leave them to
        the engine's threads (the engine outlives the connection)."""
        self.conn = connection
        self.projects = projects
        self.directory = directory
        self.client = client
        self.client_pid = client_pid
        self.agent_session = agent_session
        self.engine = engine
        self.commands = commands
        self.wait_at_end = wait_at_end
        self._after_answer: list[Callable[[], object]] = []
        self.project: Project | None = None
        self.session: Session | None = None
        self._tools: Tools | None = None
        self._work: queue.Queue[Request | None] = queue.Queue()
        self._worker = threading.Thread(target=self._work_loop, name=f"memlane-{client}")

    # -- lifecycle ------------------------------------------------------------------

    def run(self) -> None:
        """Serve until the client closes the connection, then end its session."""
        self._worker.start()
        try:
            self.conn.serve(self._work.put)
        finally:
            self._work.put(None)
            self._worker.join()

    def _work_loop(self) -> None:
        while True:
            request = self._work.get()
            if request is None:
                self._at_eof()
                return
            self._answer(request)

    def _at_eof(self) -> None:
        if self.session is None or self.project is None:
            return
        log.info("%s went away: ending session %s", self.client, self.session.session_id[:8])
        flush = self.projects.end(
            self.project,
            self.session.session_id,
            END_OF_INPUT_FLUSH_CAP_MS,
            wait=self.wait_at_end,
        )
        if flush is not None:
            log.info("captures flushed=%s pending=%s", flush.flushed, flush.pending)
        self.session = None

    def _answer(self, request: Request) -> None:
        handler = self._HANDLERS.get(request.method)
        started = time.monotonic()
        try:
            if handler is None:
                raise RpcError(
                    METHOD_NOT_FOUND,
                    f"unknown method {request.method!r}; the methods are "
                    + ", ".join(self._HANDLERS),
                )
            result = handler(self, obj_params(request.params, request.method))
        except Exception as exc:
            self._error(request, _rpc_error(request.method, exc))
        else:
            if isinstance(result, Future):
                # Long work on a thread of its own (a dream): the connection
                # goes on answering; the reply goes out when it is done.
                result.add_done_callback(partial(self._answer_later, request))
            elif request.id is not None:
                self.conn.reply(request.id, result)
        finally:
            self._run_after_answer()
            # The engine's log says what each call cost (docs/architecture.md: debugging it).
            log.info(
                "%s %s: %.0f ms", self.client, request.method, (time.monotonic() - started) * 1000
            )

    def _answer_later(self, request: Request, done: Future[dict[str, Any]]) -> None:
        try:
            result = done.result()
        except Exception as exc:
            self._error(request, _rpc_error(request.method, exc))
        else:
            if request.id is not None:
                self.conn.reply(request.id, result)

    def _run_after_answer(self) -> None:
        """What waited for the answer to be sent (a new session's background start)."""
        steps, self._after_answer = self._after_answer, []
        for step in steps:
            try:
                step()
            except Exception:  # the answer is out: log, never raise
                log.exception("work after an answer failed")

    def _error(self, request: Request, error: RpcError) -> None:
        if request.id is not None:
            self.conn.reply_error(request.id, error)
        else:
            log.warning("%s (notification) failed: %s", request.method, error.message)

    # -- engine objects ---------------------------------------------------------------

    def _current_project(self) -> Project:
        if self.project is None:
            self.project = self.projects.for_dir(str(self.directory))
        return self.project

    def _on_project(self, job: Callable[[], Any]) -> Any:
        return self._current_project().run(job).result()

    def _require_session(self, method: str) -> Session:
        if self.session is None:
            raise RpcError(
                APPLICATION_ERROR, f"{method} before session_start: start a session first"
            )
        return self.session

    def _host_call(self, params: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        try:
            result = self.conn.request(
                HOST_CALL, params, timeout_s + HOST_CALL_SLACK_S, cancel_notice=HOST_CANCEL
            )
        except RemoteError as exc:
            raise RuntimeError(f"the host could not complete: {exc}") from None
        except Cancelled as exc:
            raise RuntimeError(str(exc)) from None
        if not isinstance(result, dict):
            raise RuntimeError(f"the host answered llm.complete with {type(result).__name__}")
        return result

    def _cancel_host_calls(self, why: str) -> None:
        """The session no longer needs the host's model: stop what it still asked."""
        cancelled = self.conn.cancel(HOST_CALL, why)
        if cancelled:
            log.info("%d %s call(s) of %s cancelled: %s", cancelled, HOST_CALL, self.client, why)

    def _write_anchor(self) -> tuple[str, str | None] | None:
        """The Claude Code session a session-less ``memory_write`` belongs to."""
        from memlane.hosts.claude_code import running

        project = self._current_project()
        return running.current(
            project.collection,
            parent_pid=self.client_pid,
            wanted=self.agent_session,
            cwd=str(self.directory),
        )

    # -- methods ------------------------------------------------------------------------

    def session_start(self, params: dict[str, Any]) -> dict[str, Any]:
        from memlane.engine.live.session import Session

        method = "session_start"
        session_id = str_param(params, "session_id", method, required=True)
        assert session_id is not None
        transcript_path = str_param(params, "transcript_path", method)
        host = str_param(params, "host", method) or self.client
        cwd = str_param(params, "cwd", method)
        if self.session is not None and self.project is not None:
            self.projects.end(self.project, self.session.session_id, release_host=True)
            self.session = None
            self._cancel_host_calls("a new session started on this connection")
        if cwd:
            self.directory = Path(cwd)
        # A project that cannot be opened (an untrusted setting, a failing store
        # command) fails this call; nothing keeps writing into the previous one.
        self.project = None
        self._tools = None
        project = self._current_project()
        if self.projects.session(project, session_id) is not None:
            # The same session again (the host restarted its client): a new
            # start, with this connection as its host.
            self.projects.end(project, session_id)

        host_call: Callable[[dict[str, Any], float], dict[str, Any]] | None = self._host_call
        if host == "opencode":  # its own transcript copy; no llm.complete (hosts/opencode/)
            from memlane.hosts.opencode.calls import transcript_path as copy_path

            transcript_path = copy_path(self.directory, session_id, transcript_path)
            host_call = None

        def open_session() -> Session:
            return Session.open(
                project.memory,
                host=host,
                session_id=session_id,
                transcript_path=transcript_path,
                host_call=host_call,
                background=project.background,
                defer_background=True,
            )

        session: Session = project.run(open_session).result()
        self._after_answer.append(partial(project.run, session.internals.start_background))
        self.projects.opened(project, session)
        self.session = session
        return {"snapshot": session.snapshot.text, "notices": list(session.notices)}

    def before_agent_start(self, params: dict[str, Any]) -> dict[str, Any]:
        prompt = str_param(params, "prompt", "before_agent_start") or ""
        session = self._require_session("before_agent_start")
        injection = self._on_project(lambda: session.before_agent_start(prompt))
        result: dict[str, Any] = injection.to_json()
        return result

    def agent_settled(self, params: dict[str, Any]) -> dict[str, Any]:
        from memlane.core.types import Exchange

        method = "agent_settled"
        raw = params.get("exchange")
        if not isinstance(raw, dict):
            raise ParamsError(f"{method}: params.exchange must be an object")
        aborted = raw.get("aborted", False)
        if not isinstance(aborted, bool):
            raise ParamsError(f"{method}: exchange.aborted must be a boolean")
        # The names of every tool the run called (optional): lets capture
        # tell an answer that only restated recalled memory from one that
        # also did work.
        tools = raw.get("tools")
        if tools is not None and not (
            isinstance(tools, list) and all(isinstance(t, str) for t in tools)
        ):
            raise ParamsError(f"{method}: exchange.tools must be a list of tool names")
        exchange = Exchange(
            user=str_param(raw, "user", method) or "",
            assistant=str_param(raw, "assistant", method) or "",
            aborted=aborted,
            entry_id=str_param(raw, "entry_id", method),
            session_id=str_param(raw, "session_id", method),
            transcript_path=str_param(raw, "transcript_path", method),
            tools=None if tools is None else tuple(tools),
        )
        session = self._require_session(method)
        queued = self._on_project(lambda: session.agent_settled(exchange))
        result: dict[str, Any] = queued.to_json()
        return result

    def session_compact(self, params: dict[str, Any]) -> dict[str, Any]:
        session = self._require_session("session_compact")
        return {"snapshot": self._on_project(session.compacted)}

    def session_shutdown(self, params: dict[str, Any]) -> dict[str, Any]:
        session, project = self.session, self.project
        self.session = None
        self._tools = None
        if session is None or project is None:
            return {"flushed": True, "pending": 0}
        # In the engine, the answer comes once the host is no longer needed
        # (captures written, extractions done); the index settles after it.
        flush = self.projects.end(project, session.session_id, release_host=not self.wait_at_end)
        self._cancel_host_calls("the session ended")
        if flush is None:
            return {"flushed": False, "pending": session.internals.pending_captures}
        result: dict[str, Any] = flush.to_json()
        return result

    def prepare(self, params: dict[str, Any]) -> dict[str, Any]:
        """Open the connection's project ahead of its first tool call, which starts its
        background work (``memlane mcp`` sends this at ``initialize``, as a notification)."""
        project = self._current_project()
        return {"collection": project.collection}

    def tool(self, params: dict[str, Any]) -> dict[str, Any]:
        from memlane.engine.tools.dispatch import Tools, prepare_call
        from memlane.llm.defaults import CLAUDE_CODE_HOST

        name = str_param(params, "name", "tool", required=True)
        arguments = params.get("arguments")
        if arguments is not None and not isinstance(arguments, dict):
            raise ParamsError("tool: arguments must be an object")
        assert name is not None
        project = self._current_project()
        # On this connection's thread: the project's worker serves every other
        # connection's calls meanwhile (a 3 MB write scans for seconds).
        arguments = prepare_call(name, arguments)

        def call() -> dict[str, Any]:
            if self._tools is None:
                self._tools = Tools(
                    project.memory,
                    self.session,
                    write_anchor=self._write_anchor if self.session is None else None,
                    # Claude Code names its session in its MCP servers' environment.
                    host=CLAUDE_CODE_HOST if self.agent_session else None,
                )
            result: dict[str, Any] = self._tools.call(name, arguments).to_json()
            return result

        answer: dict[str, Any] = self._on_project(call)
        return answer

    def cli(self, params: dict[str, Any]) -> dict[str, Any]:
        return command_calls.run(self.commands, str(self.directory), params)

    def cli_job(self, params: dict[str, Any]) -> dict[str, Any]:
        return command_calls.job(self.commands, params)

    def dream_plan(self, params: dict[str, Any]) -> Future[dict[str, Any]]:
        from memlane.hosts.server import dream_calls

        session = self._require_session("dream.plan")
        return dream_calls.plan(self._current_project(), session, params)

    def dream_apply(self, params: dict[str, Any]) -> Future[dict[str, Any]]:
        from memlane.hosts.server import dream_calls

        session = self._require_session("dream.apply")
        return dream_calls.apply(self._current_project(), session, params)

    def engine_status(self, params: dict[str, Any]) -> dict[str, Any]:
        if self.engine is None:
            raise RpcError(METHOD_NOT_FOUND, "not an engine: nothing to report")
        return self.engine.status()

    def engine_stop(self, params: dict[str, Any]) -> dict[str, Any]:
        if self.engine is None:
            raise RpcError(METHOD_NOT_FOUND, "not an engine: nothing to stop")
        self.engine.stop()
        return {"stopping": True}

    def engine_release_lite(self, params: dict[str, Any]) -> dict[str, Any]:
        """Another memlane process found a Milvus Lite database this engine holds."""
        from memlane.engine.index_backend import let_go_of_milvus_lite

        path = str_param(params, "path", "engine.release_lite", required=True)
        assert path is not None
        return {"released": let_go_of_milvus_lite(path)}

    def opencode_turn_end(self, params: dict[str, Any]) -> dict[str, Any]:
        from memlane.hosts.opencode.calls import TURN_END, turn_end

        session = self._require_session(TURN_END)
        result: dict[str, Any] = self._on_project(lambda: turn_end(session, params))
        return result

    _HANDLERS: ClassVar[dict[str, Callable[[RpcSession, dict[str, Any]], Any]]] = {
        "session_start": session_start,
        "before_agent_start": before_agent_start,
        "agent_settled": agent_settled,
        "session_compact": session_compact,
        "session_shutdown": session_shutdown,
        "prepare": prepare,
        "tool": tool,
        "cli": cli,
        "cli.job": cli_job,
        "dream.plan": dream_plan,
        "dream.apply": dream_apply,
        "engine.status": engine_status,
        "engine.stop": engine_stop,
        "engine.release_lite": engine_release_lite,
        "opencode.turn_end": opencode_turn_end,
    }
