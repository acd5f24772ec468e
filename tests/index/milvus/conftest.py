"""Fixtures for the Milvus index tests: real Milvus Lite in temporary
directories, no mocks.

A Lite database costs ~1 s to open the first time, so each test module
shares one (``lite_db``) and every test gets its own collection in it
(``collection``); ``milvus_index`` is a ``MilvusIndex`` on that collection
with its own ledger, bound to the test model. ``_lite.py`` has the helpers
(``open_index``, ``raw_client``).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest
from _builders import DIM, MODEL

pytest.importorskip("pymilvus")
pytest.importorskip("milvus_lite")

from _lite import open_index

from memlane.index.milvus.notes import MilvusIndex

_names = itertools.count()


@pytest.fixture(scope="module")
def lite_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("milvus") / "milvus.db"


@pytest.fixture
def collection() -> str:
    return f"ms_test_{next(_names):08x}"


@pytest.fixture
def ledger_path(tmp_path: Path) -> Path:
    return tmp_path / "index" / "milvus-ledger.sqlite"


@pytest.fixture
def milvus_index(lite_db: Path, collection: str, ledger_path: Path) -> Iterator[MilvusIndex]:
    index = open_index(lite_db, collection, ledger_path)
    index.ensure_model(MODEL, DIM)
    yield index
    index.close()
