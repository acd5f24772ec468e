"""The fixtures every test shares.

Every test gets its own ``MEMLANE_HOME`` and an environment without the
user's memlane settings (autouse). On request:

* ``clock``: a ``FixedClock`` at ``helpers.NOW``; pass it on (``open_memory``,
  ``Memory.open(..., clock=clock)``, ``cli``) so no test depends on today.
* ``project``: a fresh project directory (a git root) below ``tmp_path``.
* ``memory``: that project's ``Memory`` on ``clock``, lexical only, with a
  50 ms index debounce (closed after the test).
* ``cli``: ``memlane`` run in this process on ``clock``, in ``project``.
* ``fake_openai`` / ``fake_anthropic``: fake LLM servers on 127.0.0.1
  (``fake_llm.py``); ``server.llm()`` is memlane's provider pointed at them.
* ``fake_embeddings``: a fake embedding server (``fake_embedding.py``).
* ``small_tmpfs``: mounts small tmpfs filesystems (``small_tmpfs("2m")``), to
  fill up or make read-only; unmounted after the test, skipped (saying why)
  where mounting is not allowed.

docs/testing.md describes the lanes, the markers and the rules the suite
checks on itself.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from fake_embedding import FakeEmbeddings
from fake_llm import FakeAnthropic, FakeOpenAI
from helpers import (
    NOW,
    Cli,
    FixedClock,
    engine_pids,
    isolate_environment,
    make_project,
    open_memory,
    stop_engines,
)
from memlane.engine.project import Memory


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--soak",
        action="store_true",
        help="tests/fault's long run: every reach of every kill point, 10k captures (make soak)",
    )


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock(NOW)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path)


@pytest.fixture
def memory(project: Path, clock: FixedClock) -> Iterator[Memory]:
    mem = open_memory(project, clock=clock, MEMLANE_CAPTURE_INDEX_DEBOUNCE_MS="50")
    yield mem
    mem.close()


@pytest.fixture
def cli(project: Path, clock: FixedClock) -> Cli:
    return Cli(clock, cwd=project)


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def fake_anthropic() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        yield server


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache for the whole run: the int8 model is derived once, not per test."""
    return tmp_path_factory.mktemp("memlane-cache")


@pytest.fixture(scope="module", autouse=True)
def no_engine_outlives_its_module(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Engines a module-scoped fixture's clients started (the end-to-end worlds):
    every engine of a home in this run's temporary directory, and no other."""
    ours = tmp_path_factory.getbasetemp()
    before = set(engine_pids(under=ours))
    yield
    started = set(engine_pids(under=ours)) - before
    if started:
        stop_engines(only=started, under=ours)


@pytest.fixture(autouse=True)
def isolated_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, shared_cache: Path
) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("memlane-home")
    isolate_environment(monkeypatch, home, shared_cache)
    from memlane.core.scope import clear_store_command_cache

    clear_store_command_cache()
    ours = tmp_path_factory.getbasetemp()
    before = set(engine_pids(under=ours))
    yield home
    clear_store_command_cache()
    # An engine a test's client started (in any home of this run) must not outlive it.
    started = set(engine_pids(under=ours)) - before
    if started:
        stop_engines(only=started, under=ours)


@pytest.fixture
def fake_embeddings() -> Iterator[FakeEmbeddings]:
    """A fake OpenAI-compatible embedding server on 127.0.0.1 (``fake_embedding.py``)."""
    with FakeEmbeddings() as server:
        yield server


class Tmpfs:
    """One mounted tmpfs: its mount point, and ways to fill it up or freeze it."""

    FILLER = ".filler"

    def __init__(self, path: Path, size: str) -> None:
        self.path = path
        self.size = size

    def fill(self, *, leave: int = 0) -> None:
        """Write a filler file until the filesystem is full (or only *leave* bytes are free).

        tmpfs hands out whole pages, so a file's last partial page still
        takes bytes: that is where a short write comes from.
        """
        filler = self.path / self.FILLER
        stats = os.statvfs(self.path)
        room = stats.f_bavail * stats.f_frsize - leave
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            block = b"\0" * 65536
            while room > 0:
                try:
                    room -= os.write(fd, block[: min(len(block), room)])
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
                    break
        finally:
            os.close(fd)

    def free(self) -> None:
        """Remove the filler: the space ``fill`` took is available again."""
        (self.path / self.FILLER).unlink(missing_ok=True)

    def remount(self, *, read_only: bool) -> None:
        option = "remount,ro" if read_only else "remount,rw"
        subprocess.run(["mount", "-o", option, str(self.path)], check=True, capture_output=True)


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Callable[[str], Tmpfs]]:
    """``small_tmpfs("2m")`` mounts a fresh tmpfs of that size below ``tmp_path``.

    A real filesystem, so memlane meets real ENOSPC and short writes, and a
    real read-only mount (which root cannot write through, unlike chmod).
    Every mount is unmounted after the test; the test is skipped, saying
    why, where mounting is not allowed (not root, no CAP_SYS_ADMIN).
    """
    mounted: list[Tmpfs] = []

    def mount(size: str = "2m") -> Tmpfs:
        if shutil.which("mount") is None:
            pytest.skip("a small tmpfs is needed, and there is no mount command here")
        point = tmp_path / f"tmpfs-{len(mounted)}"
        point.mkdir()
        result = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0777", "tmpfs", str(point)],
            capture_output=True,
            text=True,
        )
        if result.returncode != 0:
            reason = result.stderr.strip() or f"exit status {result.returncode}"
            pytest.skip(f"cannot mount a {size} tmpfs here (needs root): {reason}")
        fs = Tmpfs(point, size)
        mounted.append(fs)
        return fs

    yield mount
    for fs in reversed(mounted):
        # Lazy: a descriptor the test leaked must not keep the mount alive.
        subprocess.run(["umount", "-l", str(fs.path)], capture_output=True, check=False)
