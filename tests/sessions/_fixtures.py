"""Fixtures for the sessions layer: the transcript builders shared with the
transcript tests (tests/_transcript_builders.py), a deterministic counting
embedder, and a project whose pi and Claude Code directories live under
tmp_path."""

from __future__ import annotations

import hashlib
import json
import re
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from memlane.core.errors import EmbedderError

# tests/ holds the shared builders; a worker run as a script (the kill -9
# backfill test) does not have it on its path the way pytest does.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _transcript_builders import START, ClaudeSession, PiSession, iso

__all__ = [
    "START",
    "ClaudeSession",
    "HashEmbedder",
    "PiSession",
    "Project",
    "chat",
    "iso",
    "lines_of",
]


class HashEmbedder:
    """Bag-of-words hashed into 64 dims, L2-normalised: texts sharing words
    are close. Counts every text it embeds (the resume tests' witness), can
    sleep per call (to kill a backfill mid-way) and can hold every call until
    ``gate`` is set (``entered`` counts the calls that reached it): a test
    then sees what happened before any embedding could run."""

    # How long a held call waits for its gate before failing the embed.
    GATE_TIMEOUT_S = 30.0

    def __init__(
        self,
        dim: int = 64,
        delay_s: float = 0.0,
        log: Path | None = None,
        gate: threading.Event | None = None,
    ) -> None:
        self._dim = dim
        self.delay_s = delay_s
        self.embedded = 0
        self.calls = 0
        self.entered = 0
        self.log = log
        self.gate = gate
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return "hash-64"

    @property
    def dimension(self) -> int:
        return self._dim

    def _vector(self, text: str) -> npt.NDArray[np.float32]:
        out = np.zeros(self._dim, dtype=np.float32)
        for word in re.findall(r"[a-z0-9]+", text.lower()):
            digest = hashlib.sha256(word.encode()).digest()
            out[digest[0] % self._dim] += 1.0
        norm = float(np.linalg.norm(out))
        if norm == 0:
            out[0] = 1.0
            norm = 1.0
        return out / norm

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        with self._lock:
            self.entered += 1
        if self.gate is not None and not self.gate.wait(self.GATE_TIMEOUT_S):
            raise EmbedderError("HashEmbedder: the test never opened the gate")
        if self.delay_s:
            time.sleep(self.delay_s)
        with self._lock:
            self.embedded += len(texts)
            self.calls += 1
            if self.log is not None:
                with self.log.open("a") as fh:
                    fh.write(f"{len(texts)}\n")
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        return np.stack([self._vector(t) for t in texts])

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        return self._vector(text)


@dataclass
class Project:
    """A project directory and the agent directories that hold its sessions."""

    root: Path
    pi_dir: Path  # <agent dir>/sessions/--<cwd>--
    claude_dir: Path  # <claude dir>/projects/<cwd encoded>

    def pi_file(self, name: str = "2026-08-13T14-00-00-000Z_sess.jsonl") -> Path:
        self.pi_dir.mkdir(parents=True, exist_ok=True)
        return self.pi_dir / name

    def claude_file(self, name: str = "5d9c0e7a.jsonl") -> Path:
        self.claude_dir.mkdir(parents=True, exist_ok=True)
        return self.claude_dir / name


def chat(session: PiSession, n: int, topic: str = "redis cache") -> None:
    """``n`` user/assistant pairs about ``topic``."""
    for i in range(n):
        session.user(f"question {i} about the {topic} number {i}")
        session.assistant(f"answer {i}: the {topic} works with setting {i}")


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
