"""The core commands: scope, write, chunks, index, reindex, search, expand, transcript,
forget, compact, status, demo."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from memlane.cli.context import ProgressBar, notice, open_memory, print_json, state
from memlane.cli.free_text import FreeTextCommand

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from memlane.core.types import SearchResult
    from memlane.engine.project import Memory
    from memlane.engine.reports import IndexReport, Progress


def scope(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Show where this project's memory lives: scope, store, collection, state directory."""
    from memlane.core.scope import resolve_scope

    resolved = resolve_scope(state(ctx).directory)
    if as_json:
        print_json(resolved.to_json())
        return
    data = resolved.to_json()
    width = max(len(k) for k in data)
    for key, value in data.items():
        typer.echo(f"{key:<{width}}  {value if value is not None else '(none)'}")
    if resolved.state_dir_note:
        notice(resolved.state_dir_note)


def write(
    ctx: typer.Context,
    text: Annotated[
        str, typer.Argument(help="What to remember. Use - to read it from standard input.")
    ],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Append a timestamped, anchored memory entry to today's daily file."""
    import sys

    if text == "-":
        text = sys.stdin.read()
    with open_memory(ctx) as mem:
        entry = mem.write(text)
    if as_json:
        print_json(entry.to_json())
    else:
        typer.echo(f"Wrote an entry at {entry.time} to {entry.path}")


def chunks(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="A markdown file.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Show how a markdown file is split into chunks, with their hashes."""
    with open_memory(ctx) as mem:
        base = state(ctx).directory
        target = file if file.is_absolute() or base is None else base / file
        found = mem.chunks_of(target)
        for text in mem.notices:
            notice(text)
    if as_json:
        print_json([c.to_json() for c in found])
        return
    if not found:
        typer.echo(f"{file} has no chunks (no section with enough text).")
    for c in found:
        heading = ("#" * c.heading_level + " " + c.heading) if c.heading_level else "(preamble)"
        typer.echo(
            f"{c.chunk_hash}  lines {c.start_line}-{c.end_line}  {len(c.content)} chars  {heading}"
        )


def index(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Index what changed in the memory store since the last run."""
    _run_index(ctx, as_json, rebuild=False)


def reindex(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Rebuild the index from the markdown store alone."""
    _run_index(ctx, as_json, rebuild=True)


def _run_index(ctx: typer.Context, as_json: bool, *, rebuild: bool) -> None:
    with open_memory(ctx) as mem, ProgressBar("reindexing" if rebuild else "indexing") as bar:
        mem.require_store()
        report = mem.reindex(bar) if rebuild else mem.sync(bar)
    _show_report(report, as_json)


def _show_report(report: IndexReport, as_json: bool) -> None:
    if as_json:
        print_json(report.to_json())
        return
    for text in report.notices:
        notice(text)
    for failure in report.failed_files:
        notice(f"skipped {failure.path}: {failure.error}")
    typer.echo(
        f"{report.operation}: {report.indexed_files} of {report.total_files} files read, "
        f"{report.indexed_chunks} new chunks, {report.removed_files} files pruned, "
        f"{report.total_chunks} chunks in the index ({report.seconds:.2f} s, {report.status})"
    )


def _catch_up_notes(mem: Memory, bar: Progress) -> list[str]:
    """Index what changed before a search; an index that cannot be used now
    is left for the search to report (it says the index is unavailable)."""
    from memlane.engine.lock_waits import newest_not_indexed
    from memlane.index.protocol import (
        DimensionMismatchError,
        IndexBusyError,
        IndexUnavailableError,
    )

    try:
        return mem.sync(bar, quiet_when_idle=True).notices
    except (IndexUnavailableError, DimensionMismatchError):
        return []
    except IndexBusyError as exc:
        # Another process holds the index past the search's wait budget
        # (engine/lock_waits.py): the index as it stands answers. When it
        # cannot even be opened the search says so itself.
        return [newest_not_indexed(exc)]


def search(
    ctx: typer.Context,
    query: Annotated[
        str | None, typer.Argument(help="What to look for, in your own words.")
    ] = None,
    k: Annotated[
        int | None,
        typer.Option(
            "-k",
            "--top-k",
            help="How many hits (default: the search.top_k setting, 5).",
            min=1,
            max=100,
        ),
    ] = None,
    kind: Annotated[
        str | None,
        typer.Option(
            help="Only this kind: journal (notes), topic (curated topics), session (past "
            "messages of this project's agent sessions) or all (everything)."
        ),
    ] = None,
    after: Annotated[
        str | None, typer.Option(help="Only entries at or after this date (YYYY-MM-DD).")
    ] = None,
    before: Annotated[
        str | None, typer.Option(help="Only entries before this date (YYYY-MM-DD).")
    ] = None,
    session: Annotated[str | None, typer.Option(help="Only entries of this session id.")] = None,
    source: Annotated[
        str | None, typer.Option(help="Only files whose path starts with this.")
    ] = None,
    lexical: Annotated[
        bool, typer.Option("--lexical", help="BM25 only; skips the embedding model.")
    ] = False,
    mode: Annotated[
        str | None,
        typer.Option(
            "--mode",
            help="hybrid (default: BM25 + dense, fused by index.fusion), lexical (BM25 "
            "only) or semantic (dense only).",
        ),
    ] = None,
    batch: Annotated[
        str | None,
        typer.Option(
            "--batch",
            metavar="FILE",
            help="Run one query per line of FILE (- for stdin); prints one JSON object per "
            "line (with --json). The index is synced once.",
        ),
    ] = None,
    all_projects: Annotated[
        bool,
        typer.Option(
            "--all",
            help="Search every project under the scan roots (MEMLANE_SCAN_ROOTS), read-only.",
        ),
    ] = False,
    min_score: Annotated[
        float | None,
        typer.Option(
            "--min-score",
            min=0.0,
            max=1.0,
            help="Only hits scoring at least this (relevance in [0, 1]; default "
            "search.min_score). 0 shows every match.",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """L1 recall: the top chunks for a query (hybrid BM25 + dense).

    Only hits that score at least search.min_score are shown; when none
    does, it says that nothing relevant was found.
    """
    from dataclasses import replace

    from memlane.core.errors import MemlaneError
    from memlane.core.render import render_search
    from memlane.engine.recall.request import SearchRequest, check_request
    from memlane.engine.recall.router import search as route_search

    if lexical and mode not in (None, "lexical"):
        raise MemlaneError(f"--lexical contradicts --mode {mode}", "give one of them")
    if (query is None) == (batch is None):
        raise MemlaneError(
            "give either a QUERY or --batch FILE", "memlane search 'what to look for'"
        )
    if batch is not None and not as_json:
        raise MemlaneError("--batch prints JSON lines", "add --json")
    if kind in ("session", "all") and (batch is not None or source is not None or all_projects):
        raise MemlaneError(f"--kind {kind} takes one QUERY and no --batch, --source or --all")
    if all_projects and (batch is not None or source is not None):
        raise MemlaneError("--all takes one QUERY and no --batch or --source")
    request = SearchRequest(
        query or "",
        k,
        kind=kind,
        scope="all" if all_projects else "project",
        after=after,
        before=before,
        session=session,
        source_prefix=str(Path(source).expanduser().resolve()) if source else None,
        mode="lexical" if lexical else mode or "hybrid",
        min_score=min_score,
        # The notes are synced once below, with a progress bar, before any query.
        sync=False,
    )
    check_request(request)  # a bad argument is said before anything is indexed
    hint = None
    from memlane.engine.lock_waits import NEWEST_NOT_INDEXED, read_waits
    from memlane.engine.recall.notes import UNAVAILABLE

    # One wait budget for the catch-ups and the search: a lock another
    # process holds costs at most sum(session.backoff_delays_ms) in all.
    with open_memory(ctx) as mem, read_waits(mem):
        if request.route in ("sessions", "everything"):
            from contextlib import suppress

            from memlane.cli.sessions_cmds import catch_up
            from memlane.index.protocol import IndexBusyError

            # The sessions index cannot be opened now: the search says so.
            with suppress(IndexBusyError):
                catch_up(mem)
            hint = "memlane transcript SOURCE --turn ID, or memlane expand HASH"
        caught_up: list[str] = []
        if request.route in ("notes", "everything"):
            if request.route == "notes":
                mem.require_store()
            # The catch-up before the search shows a bar when it has much to do
            # (a new store, or every note embedded again after an upgrade).
            with ProgressBar("indexing") as bar:
                caught_up = _catch_up_notes(mem, bar)
        if batch is not None:
            for line in caught_up:
                notice(line)
            _search_batch(
                _batch_queries(batch),
                lambda text: route_search(mem, replace(request, query=text)).result,
            )
            return
        recalled = route_search(mem, request)
        for text in mem.notices:
            notice(text)
    result = recalled.result
    if any(n.startswith(UNAVAILABLE) for n in result.notices):
        # The index could not be read at all: that notice says it all.
        caught_up = [n for n in caught_up if not n.startswith(NEWEST_NOT_INDEXED)]
    elif any(n.startswith(NEWEST_NOT_INDEXED) for n in caught_up):
        # In the engine the search's own catch-up met the lock again: said once.
        result.notices[:] = [n for n in result.notices if not n.startswith(NEWEST_NOT_INDEXED)]
    result.notices[:0] = caught_up
    if recalled.fan_out is not None:
        if as_json:
            print_json(recalled.fan_out.to_json())
        else:
            typer.echo(render_search(result, None, "memlane expand HASH --project PROJECT"))
        return
    if as_json:
        print_json(result.to_json())
    elif hint is not None:
        typer.echo(render_search(result, os.getcwd(), hint))
    else:
        typer.echo(render_search(result, os.getcwd()))


def _batch_queries(batch: str) -> list[str]:
    """The lines of a --batch FILE (- for stdin)."""
    import sys

    from memlane.core.errors import MemlaneError

    if batch == "-":
        return sys.stdin.read().splitlines()
    try:
        return Path(batch).expanduser().read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise MemlaneError(f"cannot read --batch file {batch}: {exc}") from None


def _search_batch(queries: list[str], one: Callable[[str], SearchResult]) -> None:
    """One compact JSON object per query, in order; a blank line gets an
    empty answer, so outputs stay aligned with inputs. The index caught up
    once, before the first query."""
    import json
    import sys

    for query in queries:
        data = {"query": query, **one(query).to_json()}
        sys.stdout.write(json.dumps(data, ensure_ascii=False) + "\n")
        sys.stdout.flush()


def expand(
    ctx: typer.Context,
    chunk_hash: Annotated[str, typer.Argument(metavar="HASH", help="A chunk hash from search.")],
    project: Annotated[
        str | None,
        typer.Option(help="The origin project of a `search --all` hit (its label, verbatim)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """L2 recall: the whole section a chunk came from, with its session anchor."""
    arguments: dict[str, str] = {"chunk_hash": chunk_hash}
    if project:
        arguments["project"] = project
    _run_tool(ctx, "memory_expand", arguments, as_json)


def transcript(
    ctx: typer.Context,
    path: Annotated[str, typer.Argument(help="The transcript path of a memory's anchor.")],
    turn: Annotated[
        str | None, typer.Option(help="The anchor's turn id (or a unique prefix).")
    ] = None,
    project: Annotated[
        str | None, typer.Option(help="The origin project of a `search --all` hit.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """L3 recall: the original conversation turns around an anchored memory."""
    arguments: dict[str, str] = {"transcript_path": path}
    if turn:
        arguments["turn"] = turn
    if project:
        arguments["project"] = project
    _run_tool(ctx, "memory_transcript", arguments, as_json)


def forget(
    ctx: typer.Context,
    chunk_hash: Annotated[
        str | None,
        typer.Argument(
            metavar="[HASH]",
            help="A chunk hash inside the entry, from search (its first 8 characters are "
            "enough when unique).",
        ),
    ] = None,
    date: Annotated[str | None, typer.Option(help="The entry's date, YYYY-MM-DD.")] = None,
    time: Annotated[
        str | None,
        typer.Option(
            help="The entry's time, HH:MM; HH:MM#2 is the second entry written in that minute."
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Delete one memory entry (or compact block) for good; prints what was removed."""
    arguments = {
        key: value
        for key, value in (("chunk_hash", chunk_hash), ("date", date), ("time", time))
        if value
    }
    _run_tool(ctx, "memory_forget", arguments, as_json)


def compact(
    ctx: typer.Context,
    source: Annotated[
        str | None, typer.Option(help="Only this memory file.", metavar="FILE")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Condense the memory store with the configured LLM (the llm.* settings) into today's file."""
    _run_tool(ctx, "memory_compact", {"source": source} if source else {}, as_json)


def _run_tool(
    ctx: typer.Context,
    name: str,
    arguments: Mapping[str, object],
    as_json: bool,
    prepare: Callable[[Memory], object] | None = None,
) -> None:
    """The CLI face of a tool: the same text the agent sees, or its details as JSON.

    ``prepare`` runs first on the opened memory (e.g. a sessions catch-up).
    """
    from memlane.engine.tools.dispatch import Tools

    with open_memory(ctx) as mem:
        if prepare is not None:
            prepare(mem)
        # A person at the CLI: L3 opens any transcript they name (a file they
        # can read anyway); agents over MCP or the sidecar are held to the
        # project's own sessions and anchors (engine/recall/transcript_access.py).
        result = Tools(mem, caller_is_person=True).call(name, arguments)
        for text in mem.notices:
            notice(text)
    if as_json:
        print_json(result.details)
    else:
        typer.echo(result.text)


def status(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    no_probe: Annotated[
        bool, typer.Option("--no-probe", help="Do not load the embedder to check that it works.")
    ] = False,
    fix: Annotated[
        bool,
        typer.Option("--fix", help="Move damaged lines into <file>.damaged (asks first)."),
    ] = False,
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="With --fix: move them without asking.")
    ] = False,
) -> None:
    """Doctor: what is missing and how to fix it, config, scope, index state, capture and auto-context."""
    from memlane.cli.repair_cmds import run_status

    run_status(ctx, as_json=as_json, no_probe=no_probe, fix=fix, yes=yes)


def demo(
    ctx: typer.Context,
    keep: Annotated[
        bool, typer.Option("--keep", help="Keep the throwaway project and print its path.")
    ] = False,
) -> None:
    """Build a throwaway project with a few weeks of memory, index it, search and expand."""
    from memlane.cli.demo import run_demo

    run_demo(keep=keep)


def register(app: typer.Typer) -> None:
    for fn in (
        scope,
        write,
        chunks,
        index,
        reindex,
        search,
        expand,
        transcript,
        forget,
        compact,
        status,
        demo,
    ):
        # Commands that take the user's own words read "-----BEGIN ..." as text.
        cls = FreeTextCommand if fn in (write, search) else None
        app.command(fn.__name__, cls=cls)(fn)
