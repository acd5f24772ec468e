"""Serving the viewer: 127.0.0.1 only, a free port by default, Ctrl-C to stop."""

from __future__ import annotations

import socket
from collections.abc import Callable
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
    return f"http://{HOST}:{sock.getsockname()[1]}/?token={token}"


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
    address = viewer_url(sock, viewer.keys.token)
    config = uvicorn.Config(
        build_app(viewer), log_level="warning", lifespan="off", access_log=False
    )
    server = uvicorn.Server(config)
    say(f"memlane ui: {address}")
    say("  (only this URL opens it: it carries the access token; Ctrl-C stops the viewer)")
    if open_browser:
        import webbrowser

        webbrowser.open(address)
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
