"""Fixtures for the index tests: a fresh SqliteIndex bound to the test model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from _builders import DIM, MODEL

from memlane.index.sqlite.notes import SqliteIndex


@pytest.fixture
def index_path(tmp_path: Path) -> Path:
    return tmp_path / "index" / "ms_test_0000abcd.sqlite"


@pytest.fixture
def index(index_path: Path) -> Iterator[SqliteIndex]:
    idx = SqliteIndex(index_path)
    idx.ensure_model(MODEL, DIM)
    yield idx
    idx.close()
