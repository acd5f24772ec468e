"""``.index-state.json``: index health, shared with memsearch.

Same file name, schema version, field names and meanings as memsearch's
``index_state.py``, so ``memory_status`` reads one file whichever tool
indexed last. Writes are atomic (temp file in the same directory, then
``os.replace``) and never raise: failing to record health must not fail the
indexing it describes. A state path of ``None`` means "no state file here"
(memsearch writes none outside a ``.memsearch`` tree or ``$MEMSEARCH_DIR``);
every function is then a no-op.

Field semantics:

- ``status``: ``running`` while an operation is in progress, then ``ok``,
  ``degraded`` (it finished but some files failed) or ``error`` (it aborted).
- ``last_started_at`` / ``last_completed_at``: the latest operation's bounds.
- ``last_success_at``: the latest fully clean completion; survives later
  failures. ``last_failed_at`` / ``last_error``: the latest failure; a clean
  completion clears ``last_error`` (``last_failed_at`` stays as history).
- ``indexed_chunks``, ``total_files``, ``indexed_files``, ``failed_files``:
  from the latest completed report; kept while the next one runs.
- ``milvus_uri``: the backend URI (memsearch's name for the field).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from memlane.core.atomic import write_atomic
from memlane.core.clock import SYSTEM_CLOCK, utc_z

STATE_FILENAME = ".index-state.json"
STATE_SCHEMA_VERSION = 1
MEMSEARCH_TREE = ".memsearch"
ERROR_TEXT_LIMIT = 2000  # memsearch's format_error limit

STATUS_RUNNING = "running"
STATUS_OK = "ok"
STATUS_DEGRADED = "degraded"
STATUS_ERROR = "error"

# Exactly memsearch's fields, in the order a reader would want them.
STATE_FIELDS = (
    "schema_version",
    "status",
    "operation",
    "updated_at",
    "paths",
    "collection",
    "milvus_uri",
    "last_started_at",
    "last_completed_at",
    "last_success_at",
    "last_failed_at",
    "last_error",
    "indexed_chunks",
    "total_files",
    "indexed_files",
    "failed_files",
)


@dataclass(frozen=True)
class FailedFile:
    """One file that could not be indexed, and why."""

    path: str
    error: str

    def to_json(self) -> dict[str, str]:
        return {"path": self.path, "error": self.error}


class FailedFileLike(Protocol):
    """Anything with a path and an error (FailedFile, the engine's FileFailure)."""

    @property
    def path(self) -> str: ...

    @property
    def error(self) -> str: ...


class ReportLike(Protocol):
    """What ``record_report`` reads from an indexing report."""

    @property
    def status(self) -> str: ...

    @property
    def indexed_chunks(self) -> int: ...

    @property
    def total_files(self) -> int: ...

    @property
    def indexed_files(self) -> int: ...

    @property
    def failed_files(self) -> Sequence[FailedFileLike]: ...


def _failures(failed_files: Iterable[FailedFileLike]) -> list[dict[str, str]]:
    return [{"path": str(f.path), "error": str(f.error)} for f in failed_files]


def utc_timestamp(moment: datetime | None = None) -> str:
    """``2026-11-30T16:05:00Z``: UTC, whole seconds (the system clock's when no *moment*)."""
    return utc_z(moment or SYSTEM_CLOCK.now())


def format_error(error: BaseException | str, limit: int = ERROR_TEXT_LIMIT) -> str:
    """``Type: message`` on one line, capped like memsearch's."""
    text = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
    suffix = "... [truncated]"
    return text if len(text) <= limit else text[: limit - len(suffix)] + suffix


def resolve_state_path(
    paths: Iterable[str | Path],
    *,
    state_dir: str | Path | None = None,
    memsearch_dir: str | Path | None = None,
) -> Path | None:
    """Where an index run writes its state (the writer's rule, as memsearch).

    A store command's state-dir answer wins, then ``$MEMSEARCH_DIR`` (passed
    in by the caller, who owns the environment), then the root of the first
    ``.memsearch`` tree an indexed path lies in (symlinks followed, the path
    need not exist yet); otherwise None: no state file.
    """
    explicit = state_dir or memsearch_dir
    if explicit:
        return Path(explicit).expanduser().resolve() / STATE_FILENAME
    for raw in paths:
        parts = Path(raw).expanduser().resolve(strict=False).parts
        if MEMSEARCH_TREE in parts:
            root = Path(*parts[: parts.index(MEMSEARCH_TREE) + 1])
            return root / STATE_FILENAME
    return None


def load_state(state_path: Path | None) -> dict[str, Any]:
    """The recorded state, or {} when absent, unreadable or not a JSON object."""
    if state_path is None:
        return {}
    try:
        data = json.loads(state_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


load = load_state  # the short name the engine uses


def record_started(
    state_path: Path | None,
    *,
    operation: str,
    paths: Sequence[str | Path],
    collection: str,
    uri: str,
    now: datetime | None = None,
) -> None:
    """An index operation began: status ``running``."""
    if state_path is None:
        return
    stamp = utc_timestamp(now)
    state = _carry(load_state(state_path), operation, paths, collection, uri, stamp)
    state["status"] = STATUS_RUNNING
    state["last_started_at"] = stamp
    save_state(state_path, state)


def record_completed(
    state_path: Path | None,
    *,
    operation: str,
    paths: Sequence[str | Path],
    collection: str,
    uri: str,
    indexed_chunks: int,
    total_files: int,
    indexed_files: int,
    failed_files: Sequence[FailedFileLike] = (),
    status: str | None = None,
    now: datetime | None = None,
) -> None:
    """An index operation finished: ``ok``, or ``degraded`` if files failed.

    ``status`` overrides the verdict (the engine also reports ``degraded``
    when chunks were stored without vectors).
    """
    if state_path is None:
        return
    state, stamp = _finishing(state_path, operation, paths, collection, uri, now)
    state.update(
        {
            "last_completed_at": stamp,
            "indexed_chunks": indexed_chunks,
            "total_files": total_files,
            "indexed_files": indexed_files,
            "failed_files": _failures(failed_files),
        }
    )
    verdict = status or (STATUS_DEGRADED if failed_files else STATUS_OK)
    if verdict != STATUS_OK:
        state["status"] = verdict
        state["last_failed_at"] = stamp
        state["last_error"] = (
            f"{len(failed_files)} file(s) failed during indexing."
            if failed_files
            else f"indexing completed with status {verdict}."
        )
    else:
        state["status"] = STATUS_OK
        state["last_success_at"] = stamp
        state.pop("last_error", None)
    save_state(state_path, state)


def _finishing(
    state_path: Path,
    operation: str,
    paths: Sequence[str | Path],
    collection: str,
    uri: str,
    now: datetime | None,
) -> tuple[dict[str, Any], str]:
    """The carried-over state and timestamp an operation's end is written on."""
    stamp = utc_timestamp(now)
    state = _carry(load_state(state_path), operation, paths, collection, uri, stamp)
    state.setdefault("last_started_at", stamp)
    return state, stamp


def record_report(
    state_path: Path | None,
    report: ReportLike,
    *,
    operation: str,
    paths: Sequence[str | Path],
    collection: str,
    uri: str,
    now: datetime | None = None,
) -> None:
    """``record_completed`` from a report object (memsearch's record_index_report)."""
    record_completed(
        state_path,
        operation=operation,
        paths=paths,
        collection=collection,
        uri=uri,
        indexed_chunks=report.indexed_chunks,
        total_files=report.total_files,
        indexed_files=report.indexed_files,
        failed_files=report.failed_files,
        status=report.status,
        now=now,
    )


def record_error(
    state_path: Path | None,
    error: BaseException | str,
    *,
    operation: str,
    paths: Sequence[str | Path],
    collection: str,
    uri: str,
    failed_files: Sequence[FailedFileLike] = (),
    status: str = STATUS_ERROR,
    now: datetime | None = None,
) -> None:
    """An index operation aborted; the previous counts are kept."""
    if state_path is None:
        return
    state, stamp = _finishing(state_path, operation, paths, collection, uri, now)
    state.update(
        {
            "status": status,
            "last_completed_at": stamp,
            "last_failed_at": stamp,
            "last_error": format_error(error),
            "failed_files": _failures(failed_files),
        }
    )
    save_state(state_path, state)


def save_state(state_path: Path, state: Mapping[str, Any]) -> bool:
    """Atomically write ``state`` (only the known fields); False on I/O failure."""
    data = {key: state[key] for key in STATE_FIELDS if key in state}
    text = json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    try:
        state_path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(state_path, text, fault_prefix="state")
        return True
    except OSError:
        return False


def _carry(
    previous: Mapping[str, Any],
    operation: str,
    paths: Sequence[str | Path],
    collection: str,
    uri: str,
    stamp: str,
) -> dict[str, Any]:
    """Previous known fields plus this operation's identity."""
    state = {key: previous[key] for key in STATE_FIELDS if key in previous}
    state.update(
        {
            "schema_version": STATE_SCHEMA_VERSION,
            "operation": operation,
            "updated_at": stamp,
            "paths": [str(path) for path in paths],
            "collection": collection,
            "milvus_uri": uri,
        }
    )
    return state
