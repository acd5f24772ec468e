"""Result types of engine operations that are not plain recall results."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


class Progress(Protocol):
    """Told how far a long operation got; the CLI draws a bar from it."""

    def __call__(self, done: int, total: int, phase: str) -> None: ...


@dataclass
class FileFailure:
    path: str
    error: str

    def to_json(self) -> dict[str, str]:
        return {"path": self.path, "error": self.error}


@dataclass
class IndexReport:
    operation: str
    total_files: int = 0
    indexed_files: int = 0  # files whose content was (re)read and written to the index
    indexed_chunks: int = 0  # chunks newly inserted
    removed_files: int = 0
    embedded_chunks: int = 0
    unembedded_chunks: int = 0  # stored without a vector (no working embedder)
    total_chunks: int = 0
    seconds: float = 0.0
    failed_files: list[FileFailure] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    # False when the user chose lexical-only search (embedding.provider none):
    # chunks without vectors are then the intended state, not a degradation.
    vectors_expected: bool = True

    @property
    def status(self) -> str:
        if self.failed_files or (self.unembedded_chunks and self.vectors_expected):
            return "degraded"
        return "ok"

    def to_json(self) -> dict[str, Any]:
        return {
            "operation": self.operation,
            "status": self.status,
            "total_files": self.total_files,
            "indexed_files": self.indexed_files,
            "indexed_chunks": self.indexed_chunks,
            "removed_files": self.removed_files,
            "embedded_chunks": self.embedded_chunks,
            "unembedded_chunks": self.unembedded_chunks,
            "total_chunks": self.total_chunks,
            "seconds": round(self.seconds, 3),
            "failed_files": [f.to_json() for f in self.failed_files],
            "notices": list(self.notices),
        }


@dataclass
class Status:
    versions: dict[str, str]
    scope: dict[str, str | None]
    backend: str
    index_uri: str
    model: str
    embedder: str  # "ready", "not loaded" or the reason it is unavailable
    chunks: int
    vectors: int
    files: int
    state_path: str | None
    state: dict[str, Any]
    notices: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "versions": self.versions,
            "scope": self.scope,
            "backend": self.backend,
            "index_uri": self.index_uri,
            "model": self.model,
            "embedder": self.embedder,
            "chunks": self.chunks,
            "vectors": self.vectors,
            "files": self.files,
            "index_state_path": self.state_path,
            "index_state": self.state,
            "notices": list(self.notices),
        }
