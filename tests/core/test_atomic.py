from __future__ import annotations

import errno
import multiprocessing
import os
import stat
import tomllib
from pathlib import Path

import pytest

from memlane.core import atomic
from memlane.core.atomic import write_atomic
from memlane.core.config import set_value


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _temps(directory: Path) -> list[str]:
    return [p.name for p in directory.iterdir() if p.name.endswith(".tmp")]


def test_replaces_the_file_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "state.json"
    target.write_text("old\n")
    write_atomic(target, "new ✓\n")
    assert target.read_text(encoding="utf-8") == "new ✓\n"
    write_atomic(target, b"\x00bytes")
    assert target.read_bytes() == b"\x00bytes"
    assert _temps(tmp_path) == []


def test_a_write_that_need_not_survive_a_crash_is_as_atomic_and_keeps_the_mode(
    tmp_path: Path,
) -> None:
    target = tmp_path / "running.json"
    write_atomic(target, "one\n", new_file_mode=0o600, durable=False)
    assert (target.read_text(encoding="utf-8"), _mode(target)) == ("one\n", 0o600)
    write_atomic(target, "two\n", durable=False)
    assert (target.read_text(encoding="utf-8"), _mode(target)) == ("two\n", 0o600)
    assert _temps(tmp_path) == []


def test_temp_names_are_unique_and_of_the_shape_the_sweep_knows(tmp_path: Path) -> None:
    target = tmp_path / "MEMORY.md"
    names = {atomic.temp_path_for(target).name for _ in range(50)}
    assert len(names) == 50
    assert {atomic.temp_writer(name) for name in names} == {("MEMORY.md", os.getpid())}
    assert all(name.startswith(f".MEMORY.md.{os.getpid()}.") for name in names)


def test_a_temp_name_gives_back_its_target_and_writer() -> None:
    assert atomic.temp_writer(".MEMORY.md.12.0123abcd.tmp") == ("MEMORY.md", 12)
    assert atomic.temp_writer(".a.b.vectors.7.deadbeef.tmp") == ("a.b.vectors", 7)
    for other in (
        "MEMORY.md",
        ".MEMORY.md.12.tmp",
        ".MEMORY.md.x.0123abcd.tmp",
        ".m.1.0123ABCD.tmp",
    ):
        assert atomic.temp_writer(other) is None


def test_keeps_the_existing_files_permissions(tmp_path: Path) -> None:
    target = tmp_path / "config.toml"
    target.write_text("a = 1\n")
    target.chmod(0o600)
    write_atomic(target, "a = 2\n", new_file_mode=0o644)  # only for a new file
    assert _mode(target) == 0o600
    target.chmod(0o640)
    write_atomic(target, "a = 3\n")
    assert _mode(target) == 0o640


def test_new_file_mode_and_the_umask_default(tmp_path: Path) -> None:
    private = tmp_path / "plan.json"
    write_atomic(private, "{}", new_file_mode=0o600)
    assert _mode(private) == 0o600
    old_umask = os.umask(0o022)
    try:
        plain = tmp_path / "plain.json"
        write_atomic(plain, "{}")
    finally:
        os.umask(old_umask)
    assert _mode(plain) == 0o644


def test_an_explicit_mode_wins_over_the_existing_one(tmp_path: Path) -> None:
    target = tmp_path / "daily.md"
    target.write_text("x\n")
    target.chmod(0o644)
    write_atomic(target, "y\n", mode=0o600)
    assert _mode(target) == 0o600


def test_a_failing_write_leaves_the_old_file_and_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "config.toml"
    target.write_text("kept = true\n")

    def disk_full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic.os, "fsync", disk_full)
    with pytest.raises(OSError) as caught:
        write_atomic(target, "lost = true\n")
    assert caught.value.errno == errno.ENOSPC  # raised through: the caller words it
    assert target.read_text() == "kept = true\n"
    assert _temps(tmp_path) == []


def test_a_failing_rename_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "taken"
    target.mkdir()
    (target / "inside").write_text("")  # a non-empty directory cannot be replaced
    with pytest.raises(OSError):
        write_atomic(target, "x")
    assert _temps(tmp_path) == []


def test_a_missing_directory_is_an_oserror(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        write_atomic(tmp_path / "nowhere" / "file.json", "{}")


def _set_key_repeatedly(path: str, value: str, times: int) -> None:
    for _ in range(times):
        set_value(Path(path), "embedding.batch_size", value)


@pytest.mark.subprocess
def test_two_processes_setting_one_config_key_never_lose_the_file(tmp_path: Path) -> None:
    """Each `config set` writes its own temp file, so racing writers never write
    into one another's; the file is always whole and no temp file is left."""
    path = tmp_path / "config.toml"
    set_value(path, "embedding.batch_size", "1")
    context = multiprocessing.get_context("fork")
    writers = [
        context.Process(target=_set_key_repeatedly, args=(str(path), value, 200))
        for value in ("16", "32")
    ]
    for writer in writers:
        writer.start()
    seen: set[int] = set()
    while any(writer.is_alive() for writer in writers):
        # A reader at any moment finds the whole file, old or new, never none.
        seen.add(tomllib.loads(path.read_text(encoding="utf-8"))["embedding"]["batch_size"])
    for writer in writers:
        writer.join(timeout=60)
        assert writer.exitcode == 0
    final = tomllib.loads(path.read_text(encoding="utf-8"))["embedding"]["batch_size"]
    assert final in (16, 32)
    assert seen <= {1, 16, 32}
    assert _temps(tmp_path) == []
