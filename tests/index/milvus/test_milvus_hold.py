"""A process that holds its Milvus Lite databases (the warm engine) opens each
once and keeps it between operations; asked by another process, it lets go
as soon as no operation of its own uses the database.

Real Milvus Lite, one registry per test (``LiteServers``: the engine's is the
process's ``LITE``, set to hold by ``LiteServers.hold``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memlane.index.milvus.connection import LINGER_S, LiteServers, lock_is_held


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return (tmp_path / "milvus.db").absolute()


def _use(registry: LiteServers, db: Path) -> None:
    """One operation: a client, a call, the client released."""
    client = registry.acquire(db, ())
    try:
        client.list_collections()
    finally:
        registry.release(db)


def test_a_holding_process_opens_the_database_once_for_every_operation(db: Path) -> None:
    registry = LiteServers()
    registry.hold(60.0)
    try:
        for _ in range(5):
            _use(registry, db)
        assert registry.state() == {"open": [str(db)], "opens": 1, "linger_s": 60.0}
        assert lock_is_held(db)  # kept between operations
    finally:
        registry.release_all()
    assert registry.state()["open"] == []
    assert not lock_is_held(db)


def test_a_hold_never_lingers_less_than_any_process() -> None:
    registry = LiteServers()
    registry.hold(0.0)
    assert registry.holding and registry.linger_s == LINGER_S


def test_asked_to_let_go_an_idle_database_is_released_at_once(db: Path) -> None:
    registry = LiteServers()
    registry.hold(60.0)
    try:
        _use(registry, db)
        assert registry.let_go(db) is True
        assert registry.state()["open"] == [] and not lock_is_held(db)
        _use(registry, db)  # the next operation opens it again
        assert registry.state()["opens"] == 2
    finally:
        registry.release_all()


def test_asked_to_let_go_mid_operation_it_is_released_when_the_operation_ends(db: Path) -> None:
    registry = LiteServers()
    registry.hold(60.0)
    try:
        client = registry.acquire(db, ())
        try:
            assert registry.let_go(db) is False  # in use: not now
            client.list_collections()
            assert lock_is_held(db)
        finally:
            registry.release(db)
        # Released with the operation's end, not after the 60 s hold.
        assert registry.state()["open"] == [] and not lock_is_held(db)
    finally:
        registry.release_all()


def test_a_database_not_open_here_has_nothing_to_let_go(db: Path) -> None:
    registry = LiteServers()
    assert registry.let_go(db) is False
    assert registry.state() == {"open": [], "opens": 0, "linger_s": LINGER_S}
