"""Standard input given back as it was, when the relay read from it and then
could not reach an engine: ``memlane sidecar`` serves the protocol in this
process instead (hosts/pi/sidecar.py), from the same bytes."""

from __future__ import annotations

import io
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer


class _Replay(io.RawIOBase):
    """What was read first, then the rest of file descriptor 0."""

    def __init__(self, first: bytes) -> None:
        self.pending = first

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: WriteableBuffer) -> int:
        view = memoryview(buffer).cast("B")
        data, self.pending = self.pending[: len(view)], self.pending[len(view) :]
        if not data:
            data = os.read(0, len(view))
        view[: len(data)] = data
        return len(data)


def replay_stdin(first: bytes) -> None:
    """Make ``sys.stdin`` read *first*, then the rest of standard input."""
    sys.stdin = io.TextIOWrapper(io.BufferedReader(_Replay(first)), encoding="utf-8")
