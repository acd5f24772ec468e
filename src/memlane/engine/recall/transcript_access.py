"""Which transcripts L3 (``memory_transcript``) may show to an agent.

A transcript path arrives as a tool argument, so whoever drives the agent
(or text injected into its context) chooses it. Rendered unchecked, any
JSONL conversation on the disk becomes readable through the MCP server or
the pi sidecar: another project's sessions, say. An agent is therefore
shown a transcript only when it is one of:

1. the transcript of the live session (the sidecar's own session);
2. a transcript of *this* project's pi or Claude Code sessions, found the way
   the sessions layer finds them (``engine.sessions.discover_sources``:
   ``$PI_CODING_AGENT_DIR/sessions/<project>/``, ``$PI_CODING_AGENT_SESSION_DIR``
   filtered by the header's cwd, ``$CLAUDE_CONFIG_DIR/projects/<project>/``);
3. a path named by a session anchor in this project's store, or, with
   ``project`` set to a cross-repo hit's label, in the store of that project,
   which must lie under the configured scan roots (the stores memlane is
   configured to read).

Paths compare after ``realpath`` on both sides, so a symlink or ``..`` does
not smuggle in another file; a session directory lists a link only when it
points inside that directory (``transcripts.locate.jsonl_files``), so a link
planted there cannot make another project's transcript this project's, by
the link's path or by the real one. A path no file can have (a NUL byte) is
a one-line ``NotFoundError``. The check only lists directories and reads
markdown; the transcript itself is opened afterwards, by the reader's own
rules (regular file, capped: core/regular_file.py).

A person at the CLI (``memlane transcript PATH``) is not held to this: naming
a file they can already read shows them nothing new (tools.Tools
``caller_is_person``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from memlane.core.errors import MemlaneError, StoreError
from memlane.transcripts.jsonl import check_transcript_path

if TYPE_CHECKING:
    from memlane.engine.shared.ports import ProjectMemory


class TranscriptNotAllowedError(MemlaneError):
    """The path is not a session transcript this project knows."""


def _canonical(path: str | Path) -> str:
    return os.path.realpath(os.path.expanduser(str(path)))


def check_transcript_allowed(
    mem: ProjectMemory,
    requested: str,
    *,
    session_transcript: str | None = None,
    project: str | None = None,
    env: Mapping[str, str] | None = None,
) -> str:
    """The real path of ``requested`` when an agent may read it; else raise
    ``TranscriptNotAllowedError`` (or ``NotFoundError`` for a path no file
    can have, such as one holding a NUL byte).

    The caller reads the returned path, the one that was checked, not
    ``requested`` again: a link swapped in between cannot redirect the read.
    ``project`` is a cross-repo hit's label that is not this project (the
    caller resolved it already); ``session_transcript`` the live session's own.
    """
    env = os.environ if env is None else env
    check_transcript_path(requested)
    wanted = _canonical(requested)
    if session_transcript and _canonical(session_transcript) == wanted:
        return wanted
    if project is None:
        if _is_project_session(mem, wanted, env) or _anchored_in(
            mem.scope.store, requested, wanted
        ):
            return wanted
        raise TranscriptNotAllowedError(
            f"transcript {requested} is not a known session transcript of this project, so "
            "it is not shown: memory_transcript opens only this project's pi and Claude Code "
            "sessions and the transcripts its memory's anchors name",
            "pass the transcript: path of an anchor from memory_expand (and, for a cross-repo "
            "hit, its project)",
        )
    store = _configured_project_store(mem, project, env)
    if _anchored_in(store, requested, wanted):
        return wanted
    raise TranscriptNotAllowedError(
        f"transcript {requested} is not named by any anchor in the memory of project "
        f"{project}, so it is not shown",
        "pass the transcript: path of an anchor that memory_expand showed for this project",
    )


def _is_project_session(mem: ProjectMemory, wanted: str, env: Mapping[str, str]) -> bool:
    from memlane.core.scope import shared_checkouts
    from memlane.transcripts.locate import discover_sources

    scope = mem.scope
    shared = shared_checkouts(scope, mem.config.get("scope.worktrees"))
    sources = discover_sources([scope.repository_dir, scope.scope, *shared], env)
    return any(_canonical(source.path) == wanted for source in sources)


def _anchored_in(store: Path, requested: str, wanted: str) -> bool:
    """Whether an anchor in a markdown file of ``store`` names ``wanted``
    (``requested`` after realpath)."""
    from memlane.store.anchor import ANCHOR_RE
    from memlane.store.layout import list_markdown_files
    from memlane.store.section import read_markdown

    names = {os.path.basename(wanted), os.path.basename(os.path.expanduser(requested))}
    for path in list_markdown_files(store):
        try:
            text = read_markdown(path)
        except StoreError:
            continue  # an unreadable file names nothing; status reports it
        if not any(name in text for name in names):
            continue
        if _names((m.group("transcript").strip() for m in ANCHOR_RE.finditer(text)), names, wanted):
            return True
    return False


def _names(transcripts: Iterable[str], names: set[str], wanted: str) -> bool:
    # realpath only for the anchors whose file name matches: a store holds
    # thousands of anchors, nearly all of other sessions.
    # An anchor holding a NUL names no file (and realpath would raise on it).
    return any(
        os.path.basename(t) in names and "\0" not in t and _canonical(t) == wanted
        for t in transcripts
        if t
    )


def _configured_project_store(mem: ProjectMemory, project: str, env: Mapping[str, str]) -> Path:
    """The store of ``project`` when it is a project under the scan roots."""
    from memlane.engine.recall.crossrepo import resolve_project
    from memlane.engine.recall.projects import discover_projects, scan_roots

    label = _canonical(project)
    known = discover_projects(scan_roots(mem.config, mem.scope.repository_dir))
    if not any(_canonical(p) == label for p in known):
        raise TranscriptNotAllowedError(
            f"project {project} is not under the configured scan roots, so its "
            "transcripts are not shown",
            "pass the project label of a `scope: all` search hit verbatim",
        )
    _, store, _ = resolve_project(mem, project, env=env)
    return store
