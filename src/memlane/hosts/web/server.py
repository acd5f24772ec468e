"""Serving the viewer: 127.0.0.1 only, a free port by default, Ctrl-C to stop."""

from __future__ import annotations

import html
import shutil
import signal
import socket
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from memlane.core.errors import MemlaneError

if TYPE_CHECKING:
    from memlane.hosts.web.viewer import Viewer

HOST = "127.0.0.1"


def bind(port: int) -> socket.socket:
    """A listening socket on 127.0.0.1:*port* (0: a free port the system picks)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((HOST, port))
    except OSError as exc:
        sock.close()
        raise MemlaneError(
            f"cannot listen on {HOST}:{port}: {exc.strerror or exc}",
            "choose another --port, or leave it out for a free one",
        ) from None
    sock.listen(64)
    return sock


def viewer_url(sock: socket.socket, token: str) -> str:
    return f"http://{HOST}:{sock.getsockname()[1]}/{token}/"


def serve(
    viewer: Viewer,
    port: int = 0,
    *,
    open_browser: bool = False,
    say: Callable[[str], None] = print,
) -> None:
    """Serve *viewer* until Ctrl-C (uvicorn's own signal handling stops it cleanly)."""
    import uvicorn

    from memlane.hosts.web.app import build_app

    sock = bind(port)
    servers: list[uvicorn.Server] = []
    # The pages' live streams end when the server stops, so it need not wait for them.
    app = build_app(viewer, stopping=lambda: any(s.should_exit for s in servers))
    config = uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False)
    server = uvicorn.Server(config)
    servers.append(server)
    # Until uvicorn installs its own handlers, a Ctrl-C (or SIGTERM) asks the
    # server to stop instead of raising KeyboardInterrupt wherever the main
    # thread happens to be: raised inside an import's weakref callback it is
    # swallowed, and the server would then run on.
    previous = {
        signum: signal.signal(signum, lambda *_: setattr(server, "should_exit", True))
        for signum in (signal.SIGINT, signal.SIGTERM)
    }
    viewer.start()  # once: the engine catches the sessions index up and keeps it current
    address = viewer_url(sock, viewer.keys.token)
    say(f"memlane ui: {address}")
    say("  (only this URL opens it: it carries the access token; Ctrl-C stops the viewer)")
    opener = _redirect_file(address) if open_browser else None
    if opener is not None:
        import webbrowser

        webbrowser.open(opener.as_uri())
    try:
        if not server.should_exit:
            server.run(sockets=[sock])
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        sock.close()
        if opener is not None:
            shutil.rmtree(opener.parent, ignore_errors=True)


def _redirect_file(address: str) -> Path:
    """A private HTML file that sends the browser on to *address*.

    The browser is started with this file's path, not the URL: the token
    then never appears on a command line (``ps`` shows those to every user).
    The directory is the caller's alone (0700) and goes when the viewer stops.
    """
    import tempfile

    directory = Path(tempfile.mkdtemp(prefix="memlane-ui-"))
    page = directory / "open.html"
    quoted = html.escape(address, quote=True)
    page.write_text(
        f'<!doctype html><meta charset=utf-8><meta http-equiv="refresh" content="0;url={quoted}">'
        f'<title>memlane ui</title><a href="{quoted}">open the memlane viewer</a>\n',
        encoding="utf-8",
    )
    page.chmod(0o600)
    return page
