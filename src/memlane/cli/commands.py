"""The core commands: scope, write, chunks, index, reindex, search, expand, transcript,
forget, compact, status, demo."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from memlane.cli import quick_cmds
from memlane.cli.context import ProgressBar, notice, open_memory, print_json, state
from memlane.cli.free_text import FreeTextCommand

if TYPE_CHECKING:
    from collections.abc import Mapping

    from memlane.engine.shared.results import IndexReport


def scope(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Show where this project's memory lives: scope, store, collection, state directory."""
    quick_cmds.scope_command(state(ctx).directory, as_json)


def write(
    ctx: typer.Context,
    text: Annotated[
        str, typer.Argument(help="What to remember. Use - to read it from standard input.")
    ],
    supersedes: Annotated[
        str | None,
        typer.Option(
            "--supersedes",
            metavar="HASH",
            help="The chunk hash of an earlier memory this one corrects: searches then "
            "show the new one first and mark the old one outdated.",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Append a timestamped, anchored memory entry to today's daily file."""
    current = state(ctx)
    quick_cmds.write_command(
        current.directory, current.clock, text, as_json, (supersedes,) if supersedes else ()
    )


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
        mem.internals.require_store()
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
        str | None,
        typer.Option(
            help="Only entries at or after this ISO 8601 date or time: 2026-12-03 (from "
            "that local day's start), 2026-12-03T14:12 (local time), 2026-12-03T14:12:30Z."
        ),
    ] = None,
    before: Annotated[
        str | None,
        typer.Option(
            help="Only entries before this ISO 8601 date or time (not including it): "
            "2026-12-03 (up to that local day's start), 2026-12-03T14:12, 2026-12-03T14:12:30Z."
        ),
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
    newest_first: Annotated[
        bool,
        typer.Option(
            "--newest-first", help="Order the hits by date, newest first, instead of by score."
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """L1 recall: the top chunks for a query (hybrid BM25 + dense).

    Every hit shows its score, its confidence band (strong, possible or
    weak), its date and age, and OUTDATED when a newer memory replaced it.
    Only hits in the weak band or above are shown (search.min_score); when
    none is, it says that nothing relevant was found.
    """
    current = state(ctx)
    quick_cmds.search_command(
        current.directory,
        current.clock,
        query=query,
        k=k,
        kind=kind,
        after=after,
        before=before,
        session=session,
        source=source,
        lexical=lexical,
        mode=mode,
        batch=batch,
        all_projects=all_projects,
        min_score=min_score,
        newest_first=newest_first,
        as_json=as_json,
    )


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
    current = state(ctx)
    quick_cmds.expand_command(current.directory, current.clock, chunk_hash, project, as_json)


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
    current = state(ctx)
    quick_cmds.transcript_command(current.directory, current.clock, path, turn, project, as_json)


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
) -> None:
    """The CLI face of a tool (cli/quick_cmds.py's ``tool_command``)."""
    current = state(ctx)
    quick_cmds.tool_command(current.directory, current.clock, name, arguments, as_json)


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
