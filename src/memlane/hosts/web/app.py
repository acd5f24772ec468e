"""The viewer's Starlette application: the routes, errors as pages, POST checks.

Each handler hands its engine work to the viewer's one worker thread: pages
are built one at a time (what one person's browser needs, and one thread
for the engine's connections), while the event loop stays free, so a slow
index (a remote Milvus timing out, a Lite database another process holds)
never stalls the static files or the other tabs.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import weakref
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import parse_qsl

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from memlane.core.errors import MemlaneError, NotFoundError
from memlane.hosts.web import pages_admin, pages_agent, pages_home, pages_notes, pages_recall
from memlane.hosts.web.live import StoreWatcher, event_stream
from memlane.hosts.web.render import render
from memlane.hosts.web.security import ASGIApp, Guard, same_origin

if TYPE_CHECKING:
    from memlane.hosts.web.viewer import Viewer

STATIC = Path(__file__).with_name("static")
#: A form body larger than this is refused (the viewer's forms are a few fields).
MAX_FORM_BYTES = 16_384

Handler = Callable[[Request], Awaitable[Response]]
T = TypeVar("T")


#: The highest page number a request may ask for (a longer number is page 1,
#: not a 500 from converting a 5000-digit integer).
MAX_PAGE = 1_000_000


def _page_no(request: Request) -> int:
    raw = request.query_params.get("page", "1")
    if not raw.isdigit() or len(raw) > len(str(MAX_PAGE)):
        return 1
    return min(max(1, int(raw)), MAX_PAGE)


def _html(body: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(body, status_code=status)


def _guarded(fn: Callable[[Request], Awaitable[Response]]) -> Handler:
    """Expected failures (a bad date, an unknown hash) become a page saying so."""

    async def handler(request: Request) -> Response:
        try:
            return await fn(request)
        except MemlaneError as exc:
            status = 404 if isinstance(exc, NotFoundError) else 400
            fragment = request.url.path.removeprefix(request.scope.get("root_path", "")).startswith(
                "/fragment/"
            )
            shown = {"message": exc.message, "hint": exc.hint}
            if fragment:
                return _html(render("error_box.html", **shown), status)
            return _html(render("error.html", title="Not possible", **shown), status)

    return handler


def _refused(message: str, hint: str | None) -> str:
    return render("error.html", title="Refused", message=message, hint=hint)


async def _form(request: Request) -> dict[str, str] | None:
    """The urlencoded body of a POST, or None when it is too big."""
    body = await request.body()
    if len(body) > MAX_FORM_BYTES:
        return None
    return dict(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))


def params(request: Request) -> dict[str, str]:
    return dict(request.query_params)


def _index_files(viewer: Viewer) -> tuple[Path, ...]:
    """The notes and sessions index files (and their write-ahead logs) the live
    pages follow: indexing as it advances changes them."""
    from memlane.engine.sessions.registry import sessions_path

    found: list[Path] = []
    for base in (viewer.memory.internals.index_path, sessions_path(viewer.memory)):
        found += [base, base.with_name(base.name + "-wal")]
    return tuple(found)


def build_app(viewer: Viewer, stopping: Callable[[], bool] = lambda: False) -> ASGIApp:
    """The application for *viewer*, behind its token (security.Guard).

    Guard wraps the whole Starlette app, its error middleware included, so a
    500 carries the security headers too. *stopping* says when the server is
    stopping: the live streams (``/events``) then end, so it need not wait.
    """
    worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memlane-ui")
    watcher = StoreWatcher(viewer.memory.scope.store, also=_index_files(viewer))

    async def work(fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on the worker thread (see the module docstring)."""
        loop = asyncio.get_running_loop()
        # In this request's context: the pages' links read its token prefix there.
        context = contextvars.copy_context()
        return await loop.run_in_executor(worker, functools.partial(context.run, fn, *args))

    async def home(request: Request) -> Response:
        return _html(await work(pages_home.home, viewer, _page_no(request)))

    async def home_fragment(request: Request) -> Response:
        return _html(await work(pages_home.home_fragment, viewer, _page_no(request)))

    async def timeline_json(request: Request) -> Response:
        from starlette.responses import JSONResponse

        days = await work(viewer.timeline.days)
        return JSONResponse([d.to_json() for d in days])

    async def day(request: Request) -> Response:
        return _html(
            await work(pages_notes.day, viewer, request.path_params["day"], _page_no(request))
        )

    async def topics(request: Request) -> Response:
        return _html(await work(pages_notes.topics, viewer))

    async def topic(request: Request) -> Response:
        return _html(await work(pages_notes.topic, viewer, request.path_params["slug"]))

    async def search(request: Request) -> Response:
        return _html(await work(pages_recall.search, viewer, params(request)))

    async def search_fragment(request: Request) -> Response:
        return _html(await work(pages_recall.search, viewer, params(request), True))

    async def events(request: Request) -> Response:
        return StreamingResponse(
            event_stream(watcher, stopping),
            media_type="text/event-stream",
            headers={"x-accel-buffering": "no"},
        )

    async def expand(request: Request) -> Response:
        chunk = request.query_params.get("hash", "")
        return _html(await work(pages_recall.expand_fragment, viewer, chunk))

    async def expand_page(request: Request) -> Response:
        chunk = request.query_params.get("hash", "")
        return _html(await work(pages_recall.expand_page, viewer, chunk))

    async def transcript_fragment(request: Request) -> Response:
        q = request.query_params
        return _html(
            await work(pages_recall.transcript_fragment, viewer, q.get("path", ""), q.get("turn"))
        )

    async def transcript(request: Request) -> Response:
        q = request.query_params
        return _html(
            await work(pages_recall.transcript_page, viewer, q.get("path", ""), q.get("turn"))
        )

    async def sessions(request: Request) -> Response:
        return _html(await work(pages_recall.sessions, viewer, _page_no(request)))

    async def session(request: Request) -> Response:
        transcript_path = request.query_params.get("transcript", "")
        return _html(await work(pages_recall.session, viewer, transcript_path, _page_no(request)))

    async def agent(request: Request) -> Response:
        return _html(await work(pages_agent.agent, viewer, params(request)))

    async def health(request: Request) -> Response:
        return _html(await work(pages_admin.health, viewer))

    async def forget_confirm(request: Request) -> Response:
        return _html(await work(pages_admin.forget_confirm, viewer, params(request)))

    async def forget_apply(request: Request) -> Response:
        return await _post(request, pages_admin.forget_apply)

    async def correct_form(request: Request) -> Response:
        return _html(await work(pages_admin.correct_form, viewer, params(request)))

    async def correct_apply(request: Request) -> Response:
        return await _post(request, pages_admin.correct_apply)

    async def _post(
        request: Request, apply: Callable[[Viewer, dict[str, str]], tuple[int, str]]
    ) -> Response:
        """A form's POST: small, from this origin, with the page's CSRF token."""
        form = await _form(request)
        if form is None:
            return _html(_refused("the form is too large", None), 413)
        if not same_origin(request.scope) or not viewer.keys.csrf_ok(form.get("csrf")):
            refused = _refused(
                "refused: this form did not come from this viewer's own page (CSRF check)",
                "open the entry in the viewer and confirm there",
            )
            return _html(refused, 403)
        status, body = await work(apply, viewer, form)
        return _html(body, status)

    routes = [
        Route("/", _guarded(home)),
        Route("/fragment/home", _guarded(home_fragment)),
        Route("/timeline.json", _guarded(timeline_json)),
        Route("/day/{day}", _guarded(day)),
        Route("/topics", _guarded(topics)),
        Route("/topics/{slug}", _guarded(topic)),
        Route("/search", _guarded(search)),
        Route("/fragment/search", _guarded(search_fragment)),
        Route("/events", events),
        Route("/expand", _guarded(expand_page)),
        Route("/fragment/expand", _guarded(expand)),
        Route("/fragment/transcript", _guarded(transcript_fragment)),
        Route("/transcript", _guarded(transcript)),
        Route("/sessions", _guarded(sessions)),
        Route("/session", _guarded(session)),
        Route("/agent", _guarded(agent)),
        Route("/health", _guarded(health)),
        Route("/forget", _guarded(forget_confirm), methods=["GET"]),
        Route("/forget", _guarded(forget_apply), methods=["POST"]),
        Route("/correct", _guarded(correct_form), methods=["GET"]),
        Route("/correct", _guarded(correct_apply), methods=["POST"]),
        Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
    ]
    app = Guard(Starlette(routes=routes), keys=viewer.keys)
    # The worker thread goes with the application (it is idle between pages).
    weakref.finalize(app, worker.shutdown, wait=False)
    weakref.finalize(app, watcher.close)
    return app
