"""core/regular_file: a named file is opened only when it is a regular file,
without blocking, up to a cap, and read no further than its size at open."""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memlane.core.errors import StoreError
from memlane.core.regular_file import (
    FileTooLargeError,
    NotRegularFileError,
    describe_size,
    is_regular_file,
    open_regular_file,
    read_regular_file,
)

CAP = 1 << 20
DEADLINE_S = 10.0


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe.jsonl"
    os.mkfifo(path)
    return path


@pytest.fixture
def unix_socket(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "sock.jsonl"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    try:
        yield path
    finally:
        server.close()


def _refusal_of(fifo: Path, opener: Callable[..., object]) -> BaseException | None:
    """What ``opener`` raised on the FIFO, in a thread with a deadline: a plain
    open() would wait for a writer forever, so the test fails instead of hanging
    (a writer then releases the stuck thread)."""
    raised: list[BaseException] = []

    def attempt() -> None:
        try:
            opener(fifo, max_bytes=CAP, what="transcript")
        except BaseException as exc:
            raised.append(exc)

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(DEADLINE_S)
    if worker.is_alive():
        with contextlib.suppress(OSError):
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail(f"opening a FIFO blocked for {DEADLINE_S:g} s")
    return raised[0] if raised else None


def test_a_fifo_without_a_writer_is_refused_at_once(fifo: Path) -> None:
    for opener in (open_regular_file, read_regular_file):
        refusal = _refusal_of(fifo, opener)
        assert isinstance(refusal, NotRegularFileError)
        assert refusal.message.startswith(f"transcript {fifo} is a FIFO (named pipe)")
        assert refusal.hint and "\n" not in refusal.message
        assert isinstance(refusal, StoreError)


@pytest.mark.parametrize("device", ["/dev/urandom", "/dev/zero", "/dev/null"])
def test_a_device_is_refused_before_any_read(device: str) -> None:
    if not os.path.exists(device):
        pytest.skip(f"{device} does not exist here")
    with pytest.raises(NotRegularFileError, match="character device"):
        read_regular_file(Path(device), max_bytes=CAP, what="memory file")


def test_a_socket_is_refused(unix_socket: Path) -> None:
    with pytest.raises(NotRegularFileError, match="a socket"):
        open_regular_file(unix_socket, max_bytes=CAP)


def test_a_symlink_to_a_device_is_judged_by_its_target(tmp_path: Path) -> None:
    link = tmp_path / "2026-01-01.md"
    link.symlink_to("/dev/zero")
    with pytest.raises(NotRegularFileError, match="character device"):
        read_regular_file(link, max_bytes=CAP)


def test_os_errors_pass_through_for_the_caller_to_word(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_regular_file(tmp_path / "missing", max_bytes=CAP)
    with pytest.raises(IsADirectoryError):
        open_regular_file(tmp_path, max_bytes=CAP)


def test_a_file_over_the_cap_is_refused_with_both_sizes(tmp_path: Path) -> None:
    big = tmp_path / "big.md"
    with big.open("wb") as handle:
        handle.truncate(3 * CAP)  # sparse: no need to write 3 MiB
    with pytest.raises(FileTooLargeError) as info:
        read_regular_file(big, max_bytes=CAP, what="memory file")
    assert "3.0 MiB" in info.value.message and "1.0 MiB" in info.value.message
    exact = tmp_path / "exact.md"
    exact.write_bytes(b"x" * CAP)
    assert len(read_regular_file(exact, max_bytes=CAP)) == CAP


def test_the_handle_ends_at_the_size_seen_at_open(tmp_path: Path) -> None:
    path = tmp_path / "growing.jsonl"
    path.write_bytes(b'{"a": 1}\n{"b": 2}\n')
    with open_regular_file(path, max_bytes=CAP) as handle:
        with path.open("ab") as writer:
            writer.write(b'{"c": 3}\n' * 1000)  # the session appends meanwhile
        assert list(handle) == [b'{"a": 1}\n', b'{"b": 2}\n']
        handle.seek(9)
        assert handle.readline() == b'{"b": 2}\n'
        assert handle.read() == b""
        assert os.fstat(handle.fileno()).st_size > 9000  # fileno is the real file


def test_the_descriptor_is_blocking_again_once_opened(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"{}\n")
    with open_regular_file(path, max_bytes=CAP) as handle:
        assert not fcntl.fcntl(handle.fileno(), fcntl.F_GETFL) & os.O_NONBLOCK
        assert handle.read() == b"{}\n"


def test_is_regular_file_never_opens(fifo: Path, tmp_path: Path) -> None:
    plain = tmp_path / "plain.md"
    plain.write_text("x")
    assert is_regular_file(plain)
    assert not is_regular_file(fifo) and not is_regular_file(tmp_path)
    assert not is_regular_file(tmp_path / "missing")


def test_sizes_read_as_a_person_reads_them() -> None:
    assert describe_size(512) == "512 bytes"
    assert describe_size(1536) == "1.5 KiB"
    assert describe_size(128 << 20) == "128 MiB"
    assert describe_size(1 << 30) == "1.0 GiB"
