"""The .index-state.json writer/reader (memsearch field semantics)."""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memlane.index import state
from memlane.index.state import FailedFile

T0 = datetime(2026, 11, 30, 16, 5, 0, tzinfo=UTC)
T1 = datetime(2026, 11, 30, 16, 6, 30, 123456, tzinfo=UTC)
T2 = datetime(2026, 12, 1, 9, 0, 0, tzinfo=UTC)
IDENT: dict[str, Any] = {
    "operation": "index",
    "paths": ["/p/.memsearch/memory"],
    "collection": "ms_p_1234abcd",
}
URI = "sqlite:///home/u/.memlane/index/ms_p_1234abcd.sqlite"


@dataclass
class Report:
    indexed_chunks: int = 7
    total_files: int = 3
    indexed_files: int = 2
    failed_files: list[FailedFile] = field(default_factory=list)
    status: str = "ok"


def read(path: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads(path.read_text())
    return data


def test_started_then_ok(tmp_path: Path) -> None:
    path = tmp_path / ".memsearch" / state.STATE_FILENAME
    state.record_started(path, uri=URI, now=T0, **IDENT)
    data = read(path)
    assert data == {
        "schema_version": 1,
        "status": "running",
        "operation": "index",
        "updated_at": "2026-11-30T16:05:00Z",
        "paths": ["/p/.memsearch/memory"],
        "collection": "ms_p_1234abcd",
        "milvus_uri": URI,
        "last_started_at": "2026-11-30T16:05:00Z",
    }
    state.record_report(path, Report(), uri=URI, now=T1, **IDENT)
    data = read(path)
    assert data["status"] == "ok"
    assert data["last_started_at"] == "2026-11-30T16:05:00Z"
    assert data["last_completed_at"] == data["last_success_at"] == "2026-11-30T16:06:30Z"
    assert (data["indexed_chunks"], data["total_files"], data["indexed_files"]) == (7, 3, 2)
    assert data["failed_files"] == []
    assert "last_error" not in data and "last_failed_at" not in data


def test_file_format_is_sorted_indented_json(tmp_path: Path) -> None:
    path = tmp_path / state.STATE_FILENAME
    state.record_started(path, uri=URI, now=T0, **IDENT)
    text = path.read_text()
    data = json.loads(text)
    assert text == json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    assert set(data) <= set(state.STATE_FIELDS)


def test_degraded_keeps_last_success(tmp_path: Path) -> None:
    path = tmp_path / state.STATE_FILENAME
    state.record_report(path, Report(), uri=URI, now=T0, **IDENT)
    failures = [FailedFile("/p/.memsearch/memory/bad.md", "UnicodeDecodeError: ...")]
    report = Report(failed_files=failures, status="degraded")
    state.record_report(path, report, uri=URI, now=T1, **IDENT)
    data = read(path)
    assert data["status"] == "degraded"
    assert data["last_success_at"] == "2026-11-30T16:05:00Z"
    assert data["last_failed_at"] == "2026-11-30T16:06:30Z"
    assert data["last_error"] == "1 file(s) failed during indexing."
    assert data["failed_files"] == [
        {"path": "/p/.memsearch/memory/bad.md", "error": "UnicodeDecodeError: ..."}
    ]


def test_record_completed_infers_degraded(tmp_path: Path) -> None:
    path = tmp_path / state.STATE_FILENAME
    state.record_completed(
        path,
        uri=URI,
        indexed_chunks=1,
        total_files=2,
        indexed_files=1,
        failed_files=[FailedFile("/x.md", "boom")],
        now=T0,
        **IDENT,
    )
    assert read(path)["status"] == "degraded"


def test_error_then_success_history(tmp_path: Path) -> None:
    path = tmp_path / state.STATE_FILENAME
    state.record_report(path, Report(), uri=URI, now=T0, **IDENT)
    state.record_started(path, uri=URI, now=T1, **IDENT)
    running = read(path)
    # while running, the previous run's results stay visible
    assert running["status"] == "running" and running["indexed_chunks"] == 7
    state.record_error(path, RuntimeError("disk full"), uri=URI, now=T1, **IDENT)
    data = read(path)
    assert data["status"] == "error"
    assert data["last_error"] == "RuntimeError: disk full"
    assert data["last_failed_at"] == data["last_completed_at"] == "2026-11-30T16:06:30Z"
    assert data["last_success_at"] == "2026-11-30T16:05:00Z"
    assert data["indexed_chunks"] == 7
    state.record_report(path, Report(indexed_chunks=9), uri=URI, now=T2, **IDENT)
    data = read(path)
    assert data["status"] == "ok" and "last_error" not in data
    assert data["last_success_at"] == "2026-12-01T09:00:00Z"
    assert data["last_failed_at"] == "2026-11-30T16:06:30Z"  # history kept


def test_long_errors_are_truncated(tmp_path: Path) -> None:
    path = tmp_path / state.STATE_FILENAME
    state.record_error(path, "x" * 5000, uri=URI, now=T0, **IDENT)
    error = read(path)["last_error"]
    assert isinstance(error, str)
    assert len(error) == state.ERROR_TEXT_LIMIT and error.endswith("... [truncated]")


def test_none_path_is_a_no_op(tmp_path: Path) -> None:
    state.record_started(None, uri=URI, **IDENT)
    state.record_report(None, Report(), uri=URI, **IDENT)
    state.record_error(None, "x", uri=URI, **IDENT)
    assert state.load_state(None) == {}
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("content", ["", "{not json", "[1, 2]", "\x00\x01"])
def test_corrupt_state_reads_as_empty_and_is_overwritten(tmp_path: Path, content: str) -> None:
    path = tmp_path / state.STATE_FILENAME
    path.write_text(content)
    assert state.load(path) == {}
    state.record_started(path, uri=URI, now=T0, **IDENT)
    assert read(path)["status"] == "running"


def test_missing_state_reads_as_empty(tmp_path: Path) -> None:
    assert state.load_state(tmp_path / "nope" / state.STATE_FILENAME) == {}


def test_unknown_fields_are_not_written(tmp_path: Path) -> None:
    path = tmp_path / state.STATE_FILENAME
    path.write_text(json.dumps({"status": "ok", "bogus": 1, "last_success_at": "x"}))
    state.record_started(path, uri=URI, now=T0, **IDENT)
    data = read(path)
    assert "bogus" not in data and data["last_success_at"] == "x"


def test_write_failure_never_raises(tmp_path: Path) -> None:
    # The directory cannot be made: a file stands where it should be.
    blocker = tmp_path / "file"
    blocker.write_text("kept")
    unreachable = blocker / state.STATE_FILENAME
    assert state.save_state(unreachable, {"status": "ok"}) is False
    state.record_started(unreachable, uri=URI, now=T0, **IDENT)
    state.record_report(unreachable, Report(), uri=URI, now=T1, **IDENT)
    state.record_error(unreachable, "disk full", uri=URI, now=T1, **IDENT)
    assert blocker.read_text() == "kept"
    assert state.load_state(unreachable) == {}
    # The temp file is written but cannot replace the target (a directory):
    # the failure is reported and the temp file removed.
    taken = tmp_path / "dir" / state.STATE_FILENAME
    taken.mkdir(parents=True)
    assert state.save_state(taken, {"status": "ok"}) is False
    state.record_started(taken, uri=URI, now=T0, **IDENT)
    assert sorted(os.listdir(taken.parent)) == [state.STATE_FILENAME]
    assert list(taken.iterdir()) == []
    # ...and a writable path still works afterwards.
    good = tmp_path / state.STATE_FILENAME
    assert state.save_state(good, {"status": "ok"}) is True
    assert read(good) == {"status": "ok"}


def test_atomic_writes_leave_no_temp_files_and_no_torn_reads(tmp_path: Path) -> None:
    path = tmp_path / state.STATE_FILENAME
    state.record_started(path, uri=URI, **IDENT)
    stop = threading.Event()
    torn: list[str] = []

    def reader() -> None:
        while not stop.is_set():
            text = path.read_text()
            try:
                json.loads(text)
            except ValueError:
                torn.append(text)

    threads = [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    for i in range(200):
        report = Report(indexed_chunks=i, failed_files=[FailedFile(f"/f{i}", "e" * i)])
        state.record_report(path, report, uri=URI, **IDENT)
    stop.set()
    for t in threads:
        t.join()
    assert torn == []
    assert sorted(os.listdir(tmp_path)) == [state.STATE_FILENAME]
    assert read(path)["indexed_chunks"] == 199


def test_timestamps_are_utc_seconds() -> None:
    assert state.utc_timestamp(T1) == "2026-11-30T16:06:30Z"
    assert state.utc_timestamp().endswith("Z")


def test_resolve_state_path(tmp_path: Path) -> None:
    store = tmp_path / "proj" / ".memsearch" / "memory"
    assert state.resolve_state_path([store]) == (
        (tmp_path / "proj" / ".memsearch").resolve() / state.STATE_FILENAME
    )
    nested = tmp_path / "proj" / ".memsearch" / "a" / "b" / "memory"
    assert state.resolve_state_path([nested]) == state.resolve_state_path([store])
    assert state.resolve_state_path([tmp_path / "elsewhere"]) is None
    explicit = tmp_path / "msdir"
    assert state.resolve_state_path([store], memsearch_dir=explicit) == (
        explicit.resolve() / state.STATE_FILENAME
    )
    assert state.resolve_state_path([store], state_dir=tmp_path / "sd", memsearch_dir=explicit) == (
        (tmp_path / "sd").resolve() / state.STATE_FILENAME
    )
