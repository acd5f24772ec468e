"""``memlane mcp``'s tool calls: forwarded to the warm engine, answered here when it cannot be.

At ``initialize`` a thread reaches the engine (core/link.py: connect, or
start it and wait), introduces this client on a J1 connection (client
``mcp``, the project directory, the pid of the process that started this
server, the ``CLAUDE_CODE_SESSION_ID`` it was started with) and asks it to
``prepare`` the project: the engine opens the memory, warms the model and
catches the sessions layer up while the client is still starting. A
``tools/call`` then becomes the engine's ``tool {name, arguments}``, whose
``{text, details}`` is the result; the engine anchors a ``memory_write`` to
the Claude Code session this server belongs to (hosts/server/rpc.py).

Fail open: when no engine answers within ``START_S`` of ``initialize`` (or it
cannot run at all), the call is answered in this process, the engine
imported only then. A search is then lexical, and says so: the model would
take seconds to load here, while the engine is about to have it. Each such
call is recorded (``link.record_failure``, client ``mcp``), which ``memlane
status`` shows. With ``MEMLANE_ENGINE=off`` every call is answered here, in
full, as before the engine.

Calls run one at a time, in the order they came, on the server's worker
thread (an in-process memory's index connection belongs to its thread).
Read-only calls have a second ``Calls`` of their own, on a second thread
and a second engine connection (hosts/mcp/thin.py), that only asks the
engine (``call_engine``): a search is answered while a big write is still
being scanned. What the engine cannot answer goes back in line.
"""

from __future__ import annotations

import os
import sys
import threading
import time

from memlane.core import engine_client, link
from memlane.core.process import leave_ctrl_c_to_the_main_thread
from memlane.hosts.mcp.tools import READ_ONLY, error_result, success_result, tool_result

# Nothing heavy before the first answers: not even typing or logging (thin.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    import logging
    from typing import Any

    from memlane.core.clock import Clock
    from memlane.engine.live.background import Background
    from memlane.engine.project import Memory
    from memlane.engine.shared.tool_spec import ToolResult
    from memlane.engine.tools.dispatch import Tools

CLIENT = "mcp"
#: How long after ``initialize`` a call waits for the engine to be reachable
#: (started and listening; opening the project is part of the call).
START_S = 10.0
#: How long a later call tries to reach an engine that went away or never came.
RECONNECT_S = 2.0
#: After a failed start, how long before a call starts an engine again.
RESTART_AFTER_S = 60.0
#: How long the engine may take to answer a call (a first search loads the model).
ANSWER_S = 300.0
SEARCH = "memory_search"
_stderr_logging = [False]  # set by thin.run: log to stderr, configured at first use


def log_to_stderr() -> None:
    """Log to stderr (``MEMLANE_LOG_LEVEL``, default WARNING) once something is logged:
    the ``memlane mcp`` process, not a server run inside another program."""
    _stderr_logging[0] = True


def logger() -> logging.Logger:
    """``memlane mcp``'s logger (``logging`` is imported on first use)."""
    import logging

    if _stderr_logging[0]:
        _stderr_logging[0] = False
        level = os.environ.get("MEMLANE_LOG_LEVEL", "WARNING").upper()
        logging.basicConfig(
            stream=sys.stderr,
            level=level if level in logging.getLevelNamesMapping() else "WARNING",
            format="memlane mcp: %(levelname)s %(name)s: %(message)s",
        )
    return logging.getLogger("memlane.mcp")


class Calls:
    """Answers ``tools/call`` for one ``memlane mcp``: the engine's, else this process's."""

    def __init__(
        self,
        directory: str,
        *,
        clock: Clock | None = None,
        start_s: float = START_S,
    ) -> None:
        self.directory = directory
        self.clock = clock
        self.start_s = start_s
        self.engine_off = link.engine_disabled()
        self._place: link.Place | None = None
        self._client: engine_client.Client | None = None
        self._reached = threading.Event()
        self._reach_error: link.EngineUnavailable | None = None
        self._deadline = 0.0
        self._started = False
        self._last_start = 0.0
        self._local: Local | None = None
        self._last_retry = 0.0  # call_engine's last try after a failure

    @property
    def place(self) -> link.Place:
        if self._place is None:
            self._place = link.Place()
        return self._place

    # -- the engine ---------------------------------------------------------------------

    def start(self) -> None:
        """Reach the engine in the background (at ``initialize``; once)."""
        if self._started or self.engine_off:
            return
        self._started = True
        self._deadline = time.monotonic() + self.start_s
        self._last_start = time.monotonic()
        threading.Thread(target=self._reach_first, name="memlane-mcp-reach", daemon=True).start()

    def _reach_first(self) -> None:
        leave_ctrl_c_to_the_main_thread()
        try:
            self._client = self._open(self._deadline, start=True)
        except link.EngineUnavailable as exc:
            self._reach_error = exc
            logger().info("no engine: %s", exc)
        finally:
            self._reached.set()

    def _open(self, deadline: float, *, start: bool) -> engine_client.Client:
        meta: dict[str, object] = {}
        agent_session = os.environ.get("CLAUDE_CODE_SESSION_ID")
        if agent_session:
            meta["agent_session"] = agent_session
        try:
            client = engine_client.Client.open(
                self.place, CLIENT, self.directory, deadline, start=start, **meta
            )
            client.notify("prepare", {})
        except OSError as exc:
            raise link.EngineUnavailable(f"cannot reach the engine: {exc}") from None
        return client

    def _engine(self) -> engine_client.Client | None:
        """The engine's connection, waiting for the first one within the budget, or
        None (``_reach_error`` says why)."""
        if not self._started:
            self.start()
        self._reached.wait(max(0.0, self._deadline - time.monotonic()))
        if not self._reached.is_set():
            self._reach_error = link.EngineSlow("the engine did not start in time")
            return None
        client = self._client
        if client is not None:
            if client.is_open():
                return client
            # The engine stopped or went idle since (no call for a long while): the
            # next one is started, as a new client would.
            self._drop()
            return self._reopen(start=True)
        # Never reached: one that was slow to start may be listening now; one that
        # could not start is tried again after a while, not on every call.
        return self._reopen(start=time.monotonic() - self._last_start >= RESTART_AFTER_S)

    def _reopen(self, *, start: bool) -> engine_client.Client | None:
        if start:
            self._last_start = time.monotonic()
        budget = self.start_s if start else RECONNECT_S
        try:
            self._client = self._open(time.monotonic() + budget, start=start)
        except link.EngineUnavailable as exc:
            if self._reach_error is None or start:
                self._reach_error = exc
            return None
        self._reach_error = None
        return self._client

    def _drop(self) -> None:
        """Hang up on an engine that went away (reaped, if this server started it)."""
        if self._client is not None:
            self._client.close()
            self._client = None
        link.reap_started()

    # -- a call ---------------------------------------------------------------------------

    def call(
        self, name: str, arguments: dict[str, Any] | None, *, again: bool = True
    ) -> dict[str, Any]:
        """The ``CallToolResult`` of one call; never raises. ``again``: a read-only
        call the engine did not answer because it went away is asked once more."""
        try:
            if self.engine_off:
                return self._here(name, arguments, degraded=None)
            began = time.monotonic()
            client = self._engine()
            if client is None:
                return self._fail_open(name, arguments, began)
            try:
                answer = client.call("tool", {"name": name, "arguments": arguments}, ANSWER_S)
            except engine_client.EngineError as exc:
                return _engine_error(exc)
            except link.EngineSlow as exc:
                self._reach_error = exc
                if name in READ_ONLY:
                    return self._fail_open(name, arguments, began)
                self._record(name, "slow", str(exc), began)
                return error_result(
                    f"memory's engine did not answer {name} within {ANSWER_S:g} s",
                    "`memlane engine status` shows what it is doing, and where its log is",
                )
            except link.EngineUnavailable as exc:  # it went away during the call
                self._drop()
                self._reach_error = exc
                self._last_start = 0.0  # the next call starts another
                if name in READ_ONLY and again:
                    # Asked again (it changes nothing), of the engine started next.
                    return self.call(name, arguments, again=False)
                self._record(name, "failed", str(exc), began)
                return error_result(
                    f"memory's engine stopped during {name}: it may or may not have been done",
                    "check with memory_search before doing it again",
                )
            return _engine_answer(answer)
        except Exception as exc:  # a bug: the server must keep serving
            logger().exception("%s failed", name)
            return error_result(
                f"internal error in {name}: {exc!r}",
                "this is a memlane bug; the server's stderr has the trace",
            )

    def call_engine(self, name: str, arguments: dict[str, Any] | None) -> dict[str, Any] | None:
        """The engine's answer to one call on this object's own connection, or None
        when no engine answers it (off, unreachable, gone, slow): the caller then
        asks ``call`` of the object that may answer in this process. Never raises."""
        if self.engine_off:
            return None
        if self._reached.is_set() and self._client is None:
            # No engine the last time: the other line fails over at once, and this
            # one tries again only once a while (not a wait on every read).
            if time.monotonic() - self._last_retry < RESTART_AFTER_S:
                return None
            self._last_retry = time.monotonic()
        try:
            client = self._engine()
            if client is None:
                return None
            answer = client.call("tool", {"name": name, "arguments": arguments}, ANSWER_S)
        except engine_client.EngineError as exc:
            return _engine_error(exc)
        except link.EngineUnavailable:
            self._drop()
            return None
        except Exception:  # a bug: the other object still answers
            logger().exception("%s failed on the engine", name)
            return None
        return _engine_answer(answer)

    def _fail_open(
        self, name: str, arguments: dict[str, Any] | None, began: float
    ) -> dict[str, Any]:
        why = self._reach_error or link.EngineUnavailable("no engine")
        what = "slow" if isinstance(why, link.EngineSlow) else "failed"
        self._record(name, what, str(why), began)
        return self._here(name, arguments, degraded=why)

    def _record(self, name: str, what: str, detail: str, began: float) -> None:
        logger().warning("%s answered without the engine (%s): %s", name, what, detail)
        link.record_failure(self.place, CLIENT, name, what, detail, time.monotonic() - began)

    # -- in this process ------------------------------------------------------------------

    def _here(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        *,
        degraded: link.EngineUnavailable | None,
    ) -> dict[str, Any]:
        from memlane.core.errors import MemlaneError

        notice: str | None = None
        asked = arguments if isinstance(arguments, dict) else {}
        if degraded is not None and name == SEARCH and asked.get("mode") != "lexical":
            arguments = {**asked, "mode": "lexical"}
            notice = _word_search_notice(degraded)
        try:
            if self._local is None:
                self._local = Local(self.directory, self.clock, background=self.engine_off)
            result = self._local.call(name, arguments)
        except MemlaneError as exc:
            return error_result(exc.message, exc.hint)
        details = dict(result.details)
        text = result.text
        if notice is not None:
            details["notices"] = [*details.get("notices", []), notice]
            text = f"{text}\nnote: {notice}"
        return success_result(text, details)

    def close(self) -> None:
        """Hang up on the engine and close this process's memory (on the worker thread)."""
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._local is not None:
            self._local.close()
            self._local = None


def _word_search_notice(why: link.EngineUnavailable) -> str:
    if isinstance(why, link.EngineSlow):
        return (
            "memory's engine is still starting, so this search matched words only (lexical); "
            "search again in a moment to match by meaning too"
        )
    return (
        f"memory's engine is unavailable ({why}), so this search matched words only "
        "(lexical); `memlane status` shows the engine and where its log is"
    )


def _engine_answer(answer: object) -> dict[str, Any]:
    if isinstance(answer, dict):
        text, details = answer.get("text"), answer.get("details")
        if isinstance(text, str) and isinstance(details, dict):
            return tool_result(text, details)
    return error_result(
        f"memory's engine answered tool with {type(answer).__name__}, not {{text, details}}",
        "this is a memlane bug; `memlane engine status` shows the engine's log",
    )


def _engine_error(exc: engine_client.EngineError) -> dict[str, Any]:
    """The engine's error answer as a tool error: its message and hint."""
    message = exc.message
    if exc.hint and message.endswith(f" ({exc.hint})"):
        # A MemlaneError's text carries its hint; the result says it apart.
        message = message[: -len(exc.hint) - 3]
    hint = exc.hint
    if hint is None and message.startswith("internal error"):
        hint = "this is a memlane bug; `memlane engine status` shows the engine's log"
    return error_result(message, hint)


class Local:
    """The project's memory and tools in this process (no engine, or none reachable)."""

    def __init__(self, directory: str, clock: Clock | None, *, background: bool) -> None:
        logger()  # the engine logs too: set up before it is imported
        from memlane.core.clock import clock_from_env
        from memlane.engine.project import Memory
        from memlane.engine.tools.dispatch import Tools

        self.directory = directory
        self.memory: Memory = Memory.open(directory, clock=clock or clock_from_env(os.environ))
        self.tools: Tools = Tools(self.memory, write_anchor=self._claude_code_session)
        self._background: Background | None = None
        if background:
            # What runs behind every host (engine/live/background.py). Not while the
            # engine is expected: loading the model here would only compete with it.
            from memlane.engine.live.background import start_background

            self._background = start_background(self.memory)

    def _claude_code_session(self) -> tuple[str, str | None] | None:
        """The Claude Code session running in this project, asked at each memory_write
        (hosts/claude_code/running.py): its entries get that session's anchor."""
        from memlane.hosts.claude_code import running

        return running.current(
            self.memory.scope.collection,
            parent_pid=os.getppid(),
            wanted=os.environ.get(running.SESSION_ENV),
            cwd=self.directory,
        )

    def call(self, name: str, arguments: dict[str, Any] | None) -> ToolResult:
        return self.tools.call(name, arguments)

    def close(self) -> None:
        if self._background is not None:
            self._background.stop(timeout_s=0.5)
        self.memory.close()
