"""The vector file: a memory-mapped snapshot of an index file's vectors.

A new process used to read every vector BLOB out of SQLite before its first
dense search (0.8 s at 100k chunks, ~8 s and 1.5 GB of float32 at 1M). The
vector file beside the index (``<index>.vectors``) holds the same rows
quantised to int8 (one float32 scale per row) with the filter metadata the
dense leg masks by, laid out so a process maps it and searches at once:
the operating system reads the pages the first scan touches, and every
process on the machine shares them.

It is a cache, never the truth. It names the index file's epoch and the
write generation it was taken at; a reader uses it only when the epoch and
dimension match and no tombstone it would need was pruned, then catches up
with the rows written since, exactly as a process's in-memory matrix does
(``dense_sync.py``). It is replaced whole by one rename (``core/atomic``),
so a reader sees the old file or the new one and a mapping stays valid
after a replace; the next write deletes the temporary file a killed writer
left. Deleting it costs one reload from SQLite; anything that
makes deleted text unrecoverable deletes it (``discard``), after marking
the index file (``purged_at``): a file written meanwhile from an older
snapshot is then deleted by its writer and used by no reader.

Layout: an 8-byte magic, the header's length (8 bytes, little-endian), the
header as JSON (epoch, generation, dimension, rows, the source and session
names the code columns index, each array's offset, dtype and shape), then
the arrays, each 64-byte aligned.
"""

from __future__ import annotations

import contextlib
import json
import logging
import mmap
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from memlane.core.atomic import temp_writer, write_atomic
from memlane.core.process import pid_alive

log = logging.getLogger(__name__)

SUFFIX = ".vectors"
MAGIC = b"MLVEC01\n"
VERSION = 1
_ALIGN = 64
_LENGTH_BYTES = 8
# The columns, in file order, with the dtype each must have.
COLUMNS: dict[str, str] = {
    "codes": "|i1",  # int8 (rows x dimension)
    "scales": "<f4",  # float32 per row: vector ~= codes * scale
    "rowids": "<i8",  # ascending
    "kinds": "|i1",
    "source_codes": "<i4",
    "session_codes": "<i4",
    "dates": "",  # |S<width>: the row's date as ASCII/UTF-8 bytes, b"" = none
}


def path_for(index_path: Path) -> Path:
    """Where the vector file of the index file at *index_path* lives."""
    return index_path.with_name(index_path.name + SUFFIX)


@dataclass(frozen=True)
class Snapshot:
    """One mapped vector file: its identity, its columns (read-only arrays
    over the mapping) and the names the code columns index."""

    epoch: str
    generation: int
    dimension: int
    columns: dict[str, npt.NDArray[Any]]
    sources: list[str]
    sessions: list[str]

    @property
    def rows(self) -> int:
        return int(self.columns["rowids"].shape[0])


def open_snapshot(path: Path, *, epoch: str, dimension: int) -> Snapshot | None:
    """The vector file at *path* mapped, or None when it is missing, of
    another epoch or dimension, or not whole (a reader then reloads from
    SQLite, which rewrites it)."""
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size < len(MAGIC) + _LENGTH_BYTES:
                return None
            mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None
    try:
        return _parse(mapped, size, epoch=epoch, dimension=dimension)
    except (ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
        log.info("ignoring the vector file %s: %s", path, exc)
        return None


def _parse(mapped: mmap.mmap, size: int, *, epoch: str, dimension: int) -> Snapshot | None:
    if mapped[: len(MAGIC)] != MAGIC:
        raise ValueError("not a vector file")
    start = len(MAGIC) + _LENGTH_BYTES
    length = int.from_bytes(mapped[len(MAGIC) : start], "little")
    header = json.loads(mapped[start : start + length])
    if header.get("version") != VERSION:
        raise ValueError(f"version {header.get('version')!r}")
    if header["epoch"] != epoch or header["dimension"] != dimension:
        return None
    rows = int(header["rows"])
    columns: dict[str, npt.NDArray[Any]] = {}
    for name, (offset, dtype, shape) in header["arrays"].items():
        wanted = COLUMNS[name]
        array_dtype = np.dtype(dtype)
        if (wanted and dtype != wanted) or (not wanted and array_dtype.kind != "S"):
            raise ValueError(f"column {name} has dtype {dtype}")
        count = int(np.prod(shape)) if shape else 0
        if shape[0] != rows or offset + count * array_dtype.itemsize > size:
            raise ValueError(f"column {name} runs past the file's end")
        flat = np.frombuffer(mapped, dtype=array_dtype, count=count, offset=offset)
        columns[name] = flat.reshape(shape)
    if set(columns) != set(COLUMNS) or columns["codes"].shape[1:] != (dimension,):
        raise ValueError("columns missing")
    if rows > 1 and not bool(np.all(columns["rowids"][1:] > columns["rowids"][:-1])):
        raise ValueError("row ids out of order")
    sources = list(header["sources"])
    codes = columns["source_codes"]
    # A search indexes the source names by these codes.
    if rows and not (int(codes.min()) >= 0 and int(codes.max()) < len(sources)):
        raise ValueError("source codes out of range")
    return Snapshot(
        epoch=epoch,
        generation=int(header["generation"]),
        dimension=dimension,
        columns=columns,
        sources=sources,
        sessions=list(header["sessions"]),
    )


def write_snapshot(
    path: Path,
    *,
    epoch: str,
    generation: int,
    dimension: int,
    columns: dict[str, npt.NDArray[Any]],
    sources: list[str],
    sessions: list[str],
) -> None:
    """Replace the vector file at *path* (``OSError`` when it cannot be
    written: the caller keeps its rows in memory)."""
    arrays: dict[str, list[Any]] = {}
    parts: list[memoryview] = []
    layout: list[tuple[str, npt.NDArray[Any]]] = []
    for name in COLUMNS:
        array = np.ascontiguousarray(columns[name])
        layout.append((name, array))
    probe = {"arrays": {name: [0, a.dtype.str, list(a.shape)] for name, a in layout}}
    header: dict[str, Any] = {
        "version": VERSION,
        "epoch": epoch,
        "generation": generation,
        "dimension": dimension,
        "rows": int(layout[0][1].shape[0]),
        "sources": sources,
        "sessions": sessions,
    }
    # Offsets depend on the header's length, which depends on the offsets'
    # digits: size the header with room for the widest offsets, then pad.
    reserve = len(json.dumps({**header, **probe}).encode()) + 24 * len(layout) + _ALIGN
    offset = _aligned(len(MAGIC) + _LENGTH_BYTES + reserve)
    for name, array in layout:
        arrays[name] = [offset, array.dtype.str, list(array.shape)]
        offset = _aligned(offset + array.nbytes)
    encoded = json.dumps({**header, "arrays": arrays}).encode()
    head = MAGIC + len(encoded).to_bytes(_LENGTH_BYTES, "little") + encoded
    position = len(head)
    parts.append(memoryview(head))
    for name, array in layout:
        target = arrays[name][0]
        parts.append(memoryview(bytes(target - position)))
        parts.append(array.reshape(-1).view(np.uint8).data)
        position = target + array.nbytes
    _sweep_dead_writers(path)
    write_atomic(path, parts, new_file_mode=0o600)


def _sweep_dead_writers(path: Path) -> None:
    """Delete the temporary files a killed writer of *path* left (each is
    as large as the vector file; its writer's process id is in its name)."""
    with contextlib.suppress(OSError), os.scandir(path.parent) as entries:
        for entry in entries:
            writer = temp_writer(entry.name)
            if writer is not None and writer[0] == path.name and not pid_alive(writer[1]):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)


def _aligned(offset: int) -> int:
    return -(-offset // _ALIGN) * _ALIGN


def discard(index_path: Path) -> None:
    """Delete the vector file of the index at *index_path* (a purge of
    deleted text, a wipe): the next search reloads from SQLite."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path_for(index_path))
