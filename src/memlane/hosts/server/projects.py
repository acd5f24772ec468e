"""The warm engine's projects and sessions: one ``Memory`` per project, one ``Session`` per
agent session (the engine's rules in engine/live/session.py; this only keeps them).

An index connection belongs to the thread that opened it, so each project
has one worker thread, and every call on its memory or its sessions runs
there, in order. Projects never wait for each other. A session's shutdown
touches no index connection of the project's memory (its indexer and
workers have their own), so it runs on a thread of its own and never holds
up the project's other sessions.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from memlane.core.clock import SYSTEM_CLOCK, Clock

if TYPE_CHECKING:
    from memlane.core.scope import Scope
    from memlane.engine.live.session import Session
    from memlane.engine.live.state import Flush
    from memlane.engine.project import Memory
    from memlane.engine.shared.parts import SharedParts

log = logging.getLogger("memlane.engine")

T = TypeVar("T")
#: How long a closing project waits for the sessions layer's pending indexing.
BACKGROUND_FLUSH_S = 5.0


class Project:
    """One project's memory, its worker thread, its background work and its open
    sessions; and a second thread, with a handle of its own, for the CLI commands
    run here."""

    def __init__(self, memory: Memory, config_stamp: object = None) -> None:
        from memlane.engine.live.background import Background

        self.memory = memory
        self.sessions: dict[str, Session] = {}
        #: The settings files as they were when ``memory.config`` was read.
        self.config_stamp = config_stamp
        name = memory.scope.collection[:24]
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"memlane-{name}")
        # A CLI command (a search with its catch-up) never holds up a session's
        # prompt; its handle stays open between commands, its index caches warm.
        self._cli = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"memlane-cli-{name}")
        self._cli_memory: Memory | None = None
        # The model's warm-up and the sessions layer's backfill and sweep, once per
        # project for every session, tool call and command the engine serves: they
        # run on while sessions come and go (engine/live/background.py).
        self.background = Background(memory.fork()).start()

    @property
    def collection(self) -> str:
        return self.memory.scope.collection

    def run(self, job: Callable[[], T]) -> Future[T]:
        return self._worker.submit(job)

    def run_command(self, job: Callable[[Memory], T], scope: Scope | None = None) -> Future[T]:
        """Run *job* on the CLI thread with a lent handle on its memory (``Memory.internals.lend``),
        seen from the directory of *scope* (``with_scope``)."""

        def lent() -> T:
            if self._cli_memory is None:
                self._cli_memory = self.memory.fork()
            return job(with_scope(self._cli_memory.internals.lend(), scope))

        return self._cli.submit(lent)

    def close(self) -> None:
        self.background.stop(timeout_s=0.5)
        layer = self.background.sessions_layer
        if layer is not None:
            layer.flush(BACKGROUND_FLUSH_S)
            layer.close()

        def close_cli() -> None:
            if self._cli_memory is not None:
                self._cli_memory.close()
                self._cli_memory = None

        self._cli.submit(close_cli).result()
        self._cli.shutdown(wait=True)
        self._worker.submit(self.memory.close).result()
        self._worker.shutdown(wait=True)


def with_scope(memory: Memory, scope: Scope | None) -> Memory:
    """*memory* (a fork or a lent handle) as seen from the directory *scope* was
    resolved in: another worktree or subdirectory of a project shares its memory,
    but a command run there reports its own checkout and why (ADR 0035)."""
    if scope is not None and scope.collection == memory.scope.collection:
        memory.scope = scope
    return memory


class Projects:
    """Every project the engine serves, and which project each session is in."""

    def __init__(self, *, clock: Clock = SYSTEM_CLOCK) -> None:
        self.clock = clock
        self._lock = threading.Lock()
        self._projects: dict[str, Project] = {}
        self._by_dir: dict[str, str] = {}  # resolved cwd → collection
        self._scopes: dict[str, Scope] = {}  # resolved cwd → its own scope
        self._by_session: dict[str, Project] = {}
        self._parts: dict[object, SharedParts] = {}  # embedding settings → shared embedder
        self._ending: set[threading.Thread] = set()
        # Ended sessions whose index work may still run (busy() until it is done).
        self._finishing: list[Session] = []

    # -- lookup ------------------------------------------------------------------------

    def for_session(self, session_id: str, cwd: str | None) -> Project | None:
        """The project of *session_id*: where it was opened, else the one of *cwd*
        (None when the session is unknown and no directory is named)."""
        with self._lock:
            known = self._by_session.get(session_id)
        if known is not None:
            return known
        return self.for_dir(cwd) if cwd else None

    def for_dir(self, cwd: str) -> Project:
        """The project of *cwd*, opened on first use.

        A project with no open session is opened again when its settings
        changed since (the engine outlives sessions: a new session must start
        with the configuration as it is now, as it would under pi). This runs
        only for a session the engine does not know yet, never per prompt.
        """
        from memlane.core.config.layers import load_config
        from memlane.core.scope import resolve_scope
        from memlane.engine.project import Memory

        directory = str(Path(cwd).resolve())
        with self._lock:
            known = self._projects.get(self._by_dir.get(directory, ""))
        scope = known.memory.scope if known is not None else resolve_scope(directory)
        stamp = _config_stamp(scope.repository_dir)
        if known is not None and stamp is not None and stamp == known.config_stamp:
            return known  # no settings file changed: the settings are the ones it has
        if known is not None:
            scope = resolve_scope(directory)  # scope.worktrees may have moved it (ADR 0035)
        with self._lock:
            self._scopes[directory] = scope
        config = load_config(scope.repository_dir)
        stale: Project | None = None
        with self._lock:
            project = self._projects.get(scope.collection)
            idle = project is not None and not project.sessions and not self._ending
            if project is not None and idle and project.memory.config != config:
                log.info("settings of %s changed: opening it again", scope.collection)
                stale, project = self._projects.pop(scope.collection), None
            if project is None:
                parts = self._shared_parts(config.embedding)
                memory = Memory(scope, config, clock=self.clock, _parts=parts)
                project = self._projects[scope.collection] = Project(memory)
            if project.memory.config == config:
                project.config_stamp = stamp
            self._by_dir[directory] = scope.collection
        if stale is not None:
            stale.close()
        return project

    def scope_of(self, cwd: str) -> Scope | None:
        """The scope *cwd* resolved to when ``for_dir`` last opened it (None: never)."""
        with self._lock:
            return self._scopes.get(str(Path(cwd).resolve()))

    def _shared_parts(self, embedding: object) -> SharedParts:
        """Projects with the same embedding settings share one loaded model."""
        from memlane.engine.shared.parts import SharedParts

        model = self._parts.get(embedding)
        if model is None:
            model = self._parts[embedding] = SharedParts()
        return model.sharing_embedder()

    # -- sessions -----------------------------------------------------------------------

    def session(self, project: Project, session_id: str) -> Session | None:
        return project.sessions.get(session_id)

    def opened(self, project: Project, session: Session) -> None:
        project.sessions[session.session_id] = session
        with self._lock:
            self._by_session[session.session_id] = project

    def end(
        self,
        project: Project,
        session_id: str,
        cap_ms: int | None = None,
        *,
        wait: bool = True,
        release_host: bool = False,
    ) -> Flush | None:
        """End a session; its flush, when it finished in time.

        Taken off the project in the project's order (a Stop that came first
        still reaches the session), then shut down on a thread of its own.
        ``release_host``: wait only until the session no longer needs its host
        (captures written, extractions done); the index settles after that on
        the same thread, and what it has not indexed by the cap is finished by
        the engine (``busy`` counts it) rather than dropped.
        """
        result: list[Flush] = []
        released = threading.Event()

        def on_released(flush: Flush) -> None:
            result.append(flush)
            released.set()

        def begin() -> tuple[threading.Thread, Session] | None:
            session = project.sessions.pop(session_id, None)
            with self._lock:
                self._by_session.pop(session_id, None)
            if session is None:
                return None
            thread = threading.Thread(
                target=self._shut,
                args=(session, cap_ms, result, released, on_released if release_host else None),
                name="memlane-end",
            )
            with self._lock:
                self._ending.add(thread)
                # The ended sessions kept until their index work is done (never more).
                self._finishing = [s for s in self._finishing if s.internals.working]
                self._finishing.append(session)
            thread.start()
            return thread, session

        try:
            begun = project.run(begin).result()
        except RuntimeError:
            # The project is closed: the engine is exiting and ended its sessions
            # itself (a client it hung up on asks again as it goes).
            return None
        if begun is None or not wait:
            return None
        _, session = begun
        cap_s = (session.settings.shutdown_cap_ms if cap_ms is None else cap_ms) / 1000
        released.wait(cap_s + 1.0)
        return result[0] if result else None

    def _shut(
        self,
        session: Session,
        cap_ms: int | None,
        result: list[Flush],
        released: threading.Event,
        on_released: Callable[[Flush], None] | None,
    ) -> None:
        try:
            flush = session.shutdown(cap_ms=cap_ms, host_released=on_released, drain_index=True)
            result.append(flush)
        except Exception:
            log.exception("ending session %s failed", session.session_id)
        finally:
            released.set()
            with self._lock:
                self._ending.discard(threading.current_thread())

    # -- the engine's state ---------------------------------------------------------------

    def busy(self) -> bool:
        """Something is still to be done: a session ending, captures pending, an
        index run under way or due (an ended session's included), the model
        loading, or a session's background start (warm-up, sessions catch-up)
        still running. The engine does not exit on idle before it is done: a
        first session's catch-up index completes even though the session ended."""
        with self._lock:
            if self._ending:
                return True
            self._finishing = [s for s in self._finishing if s.internals.working]
            if self._finishing:
                return True
            projects = list(self._projects.values())
        return any(
            project.memory.internals.parts.working
            or any(
                s.internals.pending_captures or s.internals.working
                for s in list(project.sessions.values())
            )
            for project in projects
        )

    def describe(self) -> list[dict[str, object]]:
        """Each open project and its sessions (``memlane engine status``)."""
        with self._lock:
            projects = list(self._projects.values())
        return [
            {
                "collection": project.collection,
                "scope": str(project.memory.scope.scope),
                "sessions": [
                    {"id": session_id, "host": session.host}
                    for session_id, session in list(project.sessions.items())
                ],
            }
            for project in projects
        ]

    def every_session(self) -> list[tuple[Project, str]]:
        """(project, session id) of every open session."""
        with self._lock:
            return [(project, session_id) for session_id, project in self._by_session.items()]

    def open_sessions(self) -> int:
        with self._lock:
            return len(self._by_session)

    def close(self, cap_ms: int | None = None) -> None:
        """End every open session (captures written) and close every memory."""
        with self._lock:
            projects = list(self._projects.values())
        started = time.monotonic()
        for project in projects:
            for session_id in list(project.sessions):
                log.info("ending session %s", session_id)
                self.end(project, session_id, cap_ms, wait=False)
        with self._lock:
            ending = list(self._ending)
        for thread in ending:
            thread.join(max(0.0, 30.0 - (time.monotonic() - started)))
        for project in projects:
            try:
                project.close()
            except Exception:
                log.exception("closing %s failed", project.collection)


def _config_stamp(repository_dir: Path) -> tuple[object, ...] | None:
    """What the settings files are now (device, inode, size, times of each, or
    its absence), so a known project's settings are read again only when one
    changed; None when a file cannot be looked at (then they are read)."""
    from memlane.core.config.layers import config_sources

    stamp: list[object] = []
    for path in config_sources(repository_dir):
        try:
            st = os.stat(path)
        except FileNotFoundError:
            stamp.append(None)
            continue
        except OSError:
            return None
        stamp.append((st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    return tuple(stamp)
