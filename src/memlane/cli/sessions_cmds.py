"""``memlane sessions …``: the sessions layer (pi-lcm-memory's /memory commands).

backfill, stats, status, search, reindex; each with ``--json``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, cast

import typer

from memlane.cli.context import ProgressBar, notice, open_memory, print_json
from memlane.cli.free_text import FreeTextCommand
from memlane.cli.quick_cmds import catch_up_sessions

if TYPE_CHECKING:
    from memlane.core.types import SearchMode
    from memlane.engine.sessions.hits import SessionSearch
    from memlane.engine.sessions.ingest import BackfillReport

sessions_app = typer.Typer(
    name="sessions",
    help=(
        "Every past message of this project's agent sessions (pi, Claude Code), "
        "indexed for hybrid search: backfill, stats, status, search, reindex."
    ),
    no_args_is_help=True,
)

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]


def register(app: typer.Typer) -> None:
    app.add_typer(sessions_app, name="sessions")


def _echo_report(report: BackfillReport) -> None:
    typer.echo(
        f"{report.operation}: {report.files_read} of {report.sources} transcript(s) read, "
        f"{report.documents_added} document(s) added, {report.embedded} embedded "
        f"in {report.seconds:.1f} s"
    )
    if report.files_rewritten:
        typer.echo(f"  {report.files_rewritten} rewritten file(s) read again whole")
    if report.garbage_lines or report.unknown_entries:
        typer.echo(
            f"  skipped {report.garbage_lines} unreadable line(s) and "
            f"{report.unknown_entries} unknown entr{'y' if report.unknown_entries == 1 else 'ies'}"
        )
    for text in report.notices:
        notice(text)


@sessions_app.command("backfill")
def backfill(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Index every message not indexed yet (resumable; safe to interrupt)."""
    from memlane.engine.sessions.layer import SessionsLayer

    with open_memory(ctx) as mem, ProgressBar("sessions") as progress:
        report = SessionsLayer(mem).backfill(progress)
    if as_json:
        print_json(report.to_json())
    else:
        _echo_report(report)


@sessions_app.command("reindex")
def reindex(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Wipe the session index and rebuild it from the transcripts (re-embeds everything)."""
    from memlane.engine.sessions.layer import SessionsLayer

    with open_memory(ctx) as mem, ProgressBar("sessions") as progress:
        report = SessionsLayer(mem).reindex(progress)
    if as_json:
        print_json(report.to_json())
    else:
        _echo_report(report)


def _kv(data: dict[str, Any]) -> None:
    width = max(len(k) for k in data)
    for key, value in data.items():
        typer.echo(f"{key:<{width}}  {value if value is not None else '(none)'}")


@sessions_app.command("stats")
def stats(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Documents, embedded, sessions, sources, model, dimensions, DB size."""
    from memlane.engine.sessions.layer import SessionsLayer

    with open_memory(ctx) as mem:
        data = SessionsLayer(mem, embedder=None).stats()
    if as_json:
        print_json(data)
        return
    shown = dict(data)
    shown["by_role"] = ", ".join(f"{k} {v}" for k, v in sorted(data["by_role"].items())) or "-"
    shown["size"] = f"{data['size_bytes'] / 1e6:.2f} MB"
    del shown["size_bytes"]
    _kv(shown)


@sessions_app.command("status")
def status(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """The sweeper: cycles, busy flag, last error, current interval."""
    from memlane.engine.sessions.layer import SessionsLayer

    with open_memory(ctx) as mem:
        data = SessionsLayer(mem, embedder=None).status()
    if as_json:
        print_json(data)
    else:
        _kv(data)


def _render(result: SessionSearch) -> None:
    if not result.hits:
        typer.echo(f"No session messages match {result.query!r} (mode {result.mode}).")
    for i, hit in enumerate(result.hits, start=1):
        typer.echo(
            f"{i}. [{hit.score:.3f}] {hit.role} {hit.timestamp or '?'}  "
            f"session {hit.session_id}  turn {hit.entry_id}  ({hit.key})"
        )
        typer.echo(f"   {hit.transcript}")
        text = " ".join(hit.text.split())
        typer.echo(f"   {text[:300]}{'…' if len(text) > 300 else ''}")
    for text in result.notices:
        notice(text)


@sessions_app.command("search", cls=FreeTextCommand)
def search(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="What to look for, in your own words.")],
    k: Annotated[
        int | None,
        typer.Option(
            "-k",
            "--top-k",
            help="How many hits (default: the sessions.recall_default_top_k setting, 10).",
            min=1,
            max=100,
        ),
    ] = None,
    mode: Annotated[str, typer.Option(help="hybrid, lexical or semantic.")] = "hybrid",
    session: Annotated[str | None, typer.Option(help="Only this session id.")] = None,
    after: Annotated[
        str | None,
        typer.Option(
            help="At or after this ISO 8601 date or time: 2026-12-03 (from that local "
            "day's start), 2026-12-03T14:12 (local time), 2026-12-03T14:12:30Z."
        ),
    ] = None,
    before: Annotated[
        str | None,
        typer.Option(help="Before this ISO 8601 date or time (same forms as --after)."),
    ] = None,
    role: Annotated[
        str | None, typer.Option(help="Only user, assistant, summary or tool documents.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Search past session messages (what pi-lcm-memory's lcm_recall does).

    New messages are indexed first, like `memlane search` does for notes.
    """
    from memlane.engine.lock_waits import read_waits

    # A lock another process holds is waited for briefly (engine/lock_waits.py).
    with open_memory(ctx) as mem, read_waits(mem):
        layer = catch_up_sessions(mem)
        result = layer.search(
            query,
            k,
            mode=cast("SearchMode", mode),  # checked by SessionsLayer.search
            session=session,
            after=after,
            before=before,
            role=role,
        )
    if as_json:
        print_json(result.to_json())
    else:
        _render(result)


@sessions_app.command("similar")
def similar(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(help="A document key or message id from a hit.")],
    k: Annotated[int, typer.Option("-k", "--top-k", min=1, max=100)] = 10,
    as_json: JsonOpt = False,
) -> None:
    """Messages closest to a stored one (itself excluded)."""
    from memlane.engine.lock_waits import read_waits
    from memlane.engine.sessions.layer import SessionsLayer

    with open_memory(ctx) as mem, read_waits(mem):
        result = SessionsLayer(mem).similar(key, k)
    if as_json:
        print_json(result.to_json())
    else:
        _render(result)
