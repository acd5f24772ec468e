"""``memlane ui``: the local web viewer (hosts/web/)."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from memlane.cli.context import open_memory


def ui(
    ctx: typer.Context,
    port: Annotated[
        int,
        typer.Option("--port", min=0, max=65535, help="Port on 127.0.0.1 (default 0: a free one)."),
    ] = 0,
    open_browser: Annotated[
        bool, typer.Option("--open", help="Open the viewer in the default browser.")
    ] = False,
) -> None:
    """Browse this project's memory in a local web viewer: the newest memories (live),
    search, days, topics, sessions, what the agent sees, health; correct or forget an entry.

    Served on 127.0.0.1 behind a random token in the printed URL. The project
    is the current directory's; `memlane -C DIR ui` opens DIR's. More:
    docs/web-viewer.md.
    """
    from memlane.hosts.web.server import serve
    from memlane.hosts.web.viewer import Viewer

    def say(line: str) -> None:
        typer.echo(line)
        sys.stdout.flush()  # the URL is read by whoever started us, maybe through a pipe

    viewer = Viewer(open_memory(ctx))
    try:
        serve(viewer, port, open_browser=open_browser, say=say)
    except KeyboardInterrupt:
        pass  # uvicorn stopped on Ctrl-C and passed the signal on: a normal end
    finally:
        viewer.close()
    say("memlane ui: stopped")


def register(app: typer.Typer) -> None:
    app.command("ui")(ui)
