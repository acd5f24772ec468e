"""The code of the quick commands (search, write, expand, transcript, scope), free of typer.

Both ways of running them call these functions: typer's (cli/commands.py)
and the lean one (cli/quick.py, for a process with no engine, and inside the
engine). Output goes through cli/context.py's helpers, as typer would print it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, cast

from memlane.cli.context import ProgressBar, echo, here, notice, open_memory_at, print_json

if TYPE_CHECKING:
    from memlane.core.clock import Clock
    from memlane.core.types import SearchKind, SearchMode, SearchResult
    from memlane.engine.project import Memory
    from memlane.engine.sessions.layer import SessionsLayer


def scope_command(directory: Path | None, as_json: bool) -> None:
    """Where this project's memory lives: scope, store, collection, state directory."""
    from memlane.core.scope import resolve_scope

    resolved = resolve_scope(directory)
    if as_json:
        print_json(resolved.to_json())
        return
    data = resolved.to_json()
    data.pop("worktree")
    if resolved.worktree is not None:
        data["worktree"] = resolved.worktree.reason
    width = max(len(k) for k in data)
    for key, value in data.items():
        echo(f"{key:<{width}}  {value if value is not None else '(none)'}")
    if resolved.state_dir_note:
        notice(resolved.state_dir_note)


def write_command(
    directory: Path | None,
    clock: Clock,
    text: str,
    as_json: bool,
    supersedes: Sequence[str] = (),
) -> None:
    """Append a timestamped, anchored memory entry to today's daily file."""
    if text == "-":
        text = sys.stdin.read()
    with open_memory_at(directory, clock) as mem:
        if supersedes:
            mem.sync(quiet_when_idle=True)  # the hashes named are looked up in the index
        entry = mem.write(text, supersedes=supersedes)
    if as_json:
        print_json(entry.to_json())
        return
    echo(f"Wrote an entry at {entry.time} to {entry.path}")
    if entry.redactions:
        from memlane.store.redaction import redaction_notice

        echo(redaction_notice(entry.redactions))
    if supersedes:
        echo(f"It supersedes {', '.join(supersedes)}: searches show it first from now on.")


def search_command(
    directory: Path | None,
    clock: Clock,
    *,
    query: str | None,
    k: int | None = None,
    kind: str | None = None,
    after: str | None = None,
    before: str | None = None,
    session: str | None = None,
    source: str | None = None,
    lexical: bool = False,
    mode: str | None = None,
    batch: str | None = None,
    all_projects: bool = False,
    min_score: float | None = None,
    newest_first: bool = False,
    as_json: bool = False,
) -> None:
    """L1 recall: the top chunks for a query (the options of ``memlane search``).

    The search router (engine/recall/router.py) checks the request, catches
    the indexes up with a bar on stderr and searches; here are only the
    options' combinations and the printing.
    """
    from memlane.core.errors import MemlaneError
    from memlane.core.render import render_search
    from memlane.engine.recall.router import Shown, search, search_each
    from memlane.engine.shared.request import SearchRequest

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
        kind=cast("SearchKind | None", kind),  # checked by the router (SearchRequest.check)
        scope="all" if all_projects else "project",
        after=after,
        before=before,
        session=session,
        source_prefix=str(Path(source).expanduser().resolve()) if source else None,
        mode=cast("SearchMode", "lexical" if lexical else mode or "hybrid"),
        min_score=min_score,
        order="newest" if newest_first else "relevance",
    )
    shown = Shown(bar=ProgressBar, say=notice)
    with open_memory_at(directory, clock) as mem:
        if batch is not None:
            queries = _batch_queries(batch)
            _search_batch(queries, search_each(mem, request, queries, shown))
            return
        recalled = search(mem, request, shown=shown)
        for text in mem.notices:
            notice(text)
    result = recalled.result
    if recalled.fan_out is not None:
        if as_json:
            print_json(recalled.fan_out.to_json())
        else:
            echo(render_search(result, None, "memlane expand HASH --project PROJECT"))
    elif as_json:
        print_json(result.to_json())
    elif request.route in ("sessions", "everything"):
        echo(
            render_search(
                result, here(), "memlane transcript SOURCE --turn ID, or memlane expand HASH"
            )
        )
    else:
        echo(render_search(result, here()))


def catch_up_sessions(mem: Memory) -> SessionsLayer:
    """The project's sessions layer with every new message indexed (progress on stderr)."""
    from memlane.engine.sessions.catch_up import backfill_first
    from memlane.engine.sessions.layer import SessionsLayer

    layer = SessionsLayer(mem)
    with ProgressBar("sessions") as progress:
        said = backfill_first(layer, progress)
    for line in said:
        notice(line)
    return layer


def _batch_queries(batch: str) -> list[str]:
    """The lines of a --batch FILE (- for stdin)."""
    from memlane.core.errors import MemlaneError

    if batch == "-":
        return sys.stdin.read().splitlines()
    try:
        return Path(batch).expanduser().read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise MemlaneError(f"cannot read --batch file {batch}: {exc}") from None


def _search_batch(queries: list[str], results: Iterable[SearchResult]) -> None:
    """One compact JSON object per query, in order; a blank line gets an
    empty answer, so outputs stay aligned with inputs. The index caught up
    once, before the first query."""
    import json

    for query, result in zip(queries, results, strict=True):
        data = {"query": query, **result.to_json()}
        sys.stdout.write(json.dumps(data, ensure_ascii=False) + "\n")
        sys.stdout.flush()


def expand_command(
    directory: Path | None, clock: Clock, chunk_hash: str, project: str | None, as_json: bool
) -> None:
    """L2 recall: the whole section a chunk came from, with its session anchor."""
    arguments: dict[str, str] = {"chunk_hash": chunk_hash}
    if project:
        arguments["project"] = project
    tool_command(directory, clock, "memory_expand", arguments, as_json)


def transcript_command(
    directory: Path | None,
    clock: Clock,
    path: str,
    turn: str | None,
    project: str | None,
    as_json: bool,
) -> None:
    """L3 recall: the original conversation turns around an anchored memory."""
    arguments: dict[str, str] = {"transcript_path": path}
    if turn:
        arguments["turn"] = turn
    if project:
        arguments["project"] = project
    tool_command(directory, clock, "memory_transcript", arguments, as_json)


def tool_command(
    directory: Path | None,
    clock: Clock,
    name: str,
    arguments: Mapping[str, object],
    as_json: bool,
    prepare: Callable[[Memory], object] | None = None,
) -> None:
    """The CLI face of a tool: the same text the agent sees, or its details as JSON.

    ``prepare`` runs first on the opened memory (e.g. a sessions catch-up).
    """
    from memlane.engine.tools.dispatch import Tools

    with open_memory_at(directory, clock) as mem:
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
        echo(result.text)
