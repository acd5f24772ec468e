from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from memlane.core.errors import ScopeError, StoreCommandError
from memlane.core.scope import collection_name, resolve_scope


@pytest.mark.parametrize(
    ("path", "expected"),
    [("/tmp/demo", "ms_demo_84a8cd7d"), ("/tmp/项目", "ms__8b9f6db8")],
)
def test_golden_collection_names(path: str, expected: str) -> None:
    os.makedirs(path, exist_ok=True)
    assert collection_name(path) == expected


def test_collection_cut_after_trim_keeps_trailing_underscore(tmp_path: Path) -> None:
    # 39 letters then a space: sanitised to 39 letters + "_" + more; the 40-char cut ends in "_".
    name = "a" * 39 + " tail"
    target = tmp_path / name
    target.mkdir()
    got = collection_name(target)
    assert got.startswith("ms_" + "a" * 39 + "_" + "_")
    middle = got[len("ms_") : -len("_12345678")]
    assert middle == "a" * 39 + "_"
    assert len(middle) == 40


def test_collection_trims_one_leading_and_trailing_underscore(tmp_path: Path) -> None:
    target = tmp_path / "__My Project!!"
    target.mkdir()
    got = collection_name(target)
    # "__my_project__" collapses to "_my_project_", then one underscore trimmed each side.
    assert got.startswith("ms_my_project_")
    assert len(got.rsplit("_", 1)[1]) == 8


def test_git_root_is_scope_and_subdirectories_share_it(tmp_path: Path) -> None:
    repo = tmp_path / "proj"
    (repo / ".git").mkdir(parents=True)
    sub = repo / "src" / "pkg"
    sub.mkdir(parents=True)
    top = resolve_scope(repo, env={})
    deep = resolve_scope(sub, env={})
    assert top == resolve_scope(repo, env={})
    assert deep.scope == top.scope == repo.resolve()
    assert deep.repository_dir == repo.resolve()
    assert deep.store == repo.resolve() / ".memsearch" / "memory"
    assert deep.collection == collection_name(repo)
    assert deep.state_dir == repo.resolve() / ".memsearch"


def test_no_git_uses_cwd(tmp_path: Path) -> None:
    got = resolve_scope(tmp_path, env={})
    assert got.scope == got.repository_dir == tmp_path.resolve()


def test_relative_memsearch_dir_resolves_at_repository_dir(tmp_path: Path) -> None:
    repo = tmp_path / "proj"
    (repo / ".git").mkdir(parents=True)
    (repo / "sub").mkdir()
    got = resolve_scope(repo / "sub", env={"MEMSEARCH_DIR": "shared-mem"})
    expected = repo.resolve() / "shared-mem"
    assert got.scope == expected
    assert got.store == expected / "memory"
    assert got.collection == collection_name(expected)
    assert got.state_dir == expected
    assert got.repository_dir == repo.resolve()


def test_missing_directory_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ScopeError, match="directory not found"):
        resolve_scope(tmp_path / "nope", env={})


def _store_cmd(tmp_path: Path, body: str) -> str:
    script = tmp_path / "store-cmd.sh"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


def test_store_command_three_modes_and_memoization(tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    store = tmp_path / "stores" / "alpha" / "memory"
    state_dir = tmp_path / "state"
    cmd = _store_cmd(
        tmp_path,
        f"""echo "$1 $(pwd)" >> {log}
case "$1" in
  memory-dir) echo {store} ;;
  collection) echo ms_custom_deadbeef ;;
  state-dir) echo {state_dir} ;;
esac
""",
    )
    work = tmp_path / "work"
    work.mkdir()
    first = resolve_scope(work, env={"MEMLANE_STORE_CMD": cmd, "MEMSEARCH_DIR": "/elsewhere"})
    second = resolve_scope(work, env={"MEMLANE_STORE_CMD": cmd})
    assert first.store == store
    assert first.collection == "ms_custom_deadbeef"
    assert first.state_dir == state_dir
    assert first.scope == store.parent
    assert second.store == store
    calls = log.read_text().splitlines()
    assert sorted(c.split()[0] for c in calls) == ["collection", "memory-dir", "state-dir"]
    assert all(c.split()[1] == str(work.resolve()) for c in calls)


def test_pi_memsearch_alias_is_accepted(tmp_path: Path) -> None:
    cmd = _store_cmd(
        tmp_path,
        f'case "$1" in memory-dir) echo {tmp_path}/m/memory;; collection) echo c1;; esac\n',
    )
    got = resolve_scope(tmp_path, env={"PI_MEMSEARCH_STORE_CMD": cmd})
    assert got.collection == "c1"


def test_state_dir_decline_keeps_memsearch_rules(tmp_path: Path) -> None:
    inside = tmp_path / "root" / ".memsearch" / "memory"
    cmd = _store_cmd(
        tmp_path,
        f'case "$1" in memory-dir) echo {inside};; collection) echo c;; state-dir) ;; esac\n',
    )
    got = resolve_scope(tmp_path, env={"MEMLANE_STORE_CMD": cmd})
    assert got.state_dir == tmp_path / "root" / ".memsearch"
    assert got.state_dir_note is None


def test_state_dir_decline_outside_tree_means_no_state_file(tmp_path: Path) -> None:
    outside = tmp_path / "stores" / "p" / "memory"
    cmd = _store_cmd(
        tmp_path,
        f'case "$1" in memory-dir) echo {outside};; collection) echo c;; state-dir) ;; esac\n',
    )
    got = resolve_scope(tmp_path, env={"MEMLANE_STORE_CMD": cmd})
    assert got.state_dir is None
    assert got.state_dir_note is not None
    assert "state-dir" in got.state_dir_note
    with_dir = resolve_scope(
        tmp_path, env={"MEMLANE_STORE_CMD": cmd, "MEMSEARCH_DIR": str(tmp_path / "ms")}
    )
    assert with_dir.state_dir == tmp_path / "ms"


@pytest.mark.parametrize(
    ("body", "mode", "message"),
    [
        ("exit 3\n", "memory-dir", "exited with status 3"),
        ('case "$1" in memory-dir) ;; esac\n', "memory-dir", "printed nothing"),
        ('case "$1" in memory-dir) echo relative/path;; esac\n', "memory-dir", "relative path"),
        (
            'case "$1" in memory-dir) echo /abs/memory;; collection) ;; esac\n',
            "collection",
            "printed nothing",
        ),
        (
            'case "$1" in memory-dir) echo /abs/memory;; collection) echo c;; state-dir) exit 1;; esac\n',
            "state-dir",
            "exited with status 1",
        ),
    ],
)
def test_store_command_failures_raise_naming_command_and_mode(
    tmp_path: Path, body: str, mode: str, message: str
) -> None:
    cmd = _store_cmd(tmp_path, body)
    with pytest.raises(StoreCommandError) as info:
        resolve_scope(tmp_path, env={"MEMLANE_STORE_CMD": cmd})
    assert f"`{cmd} {mode}`" in info.value.message
    assert message in info.value.message


def test_store_command_not_found(tmp_path: Path) -> None:
    with pytest.raises(StoreCommandError, match="was not found"):
        resolve_scope(tmp_path, env={"MEMLANE_STORE_CMD": str(tmp_path / "missing-cmd")})


def _answering(tmp_path: Path, mode: str, answer: str) -> str:
    """A store command giving sane answers, except ``answer`` for ``mode``."""
    answers = {
        "memory-dir": str(tmp_path / "store" / "memory"),
        "collection": "ms_custom_deadbeef",
        "state-dir": str(tmp_path / "state"),
        mode: answer,
    }
    for name, text in answers.items():
        (tmp_path / f"answer-{name}").write_text(text)
    return _store_cmd(tmp_path, f'cat "{tmp_path}/answer-$1"\n')


@pytest.mark.parametrize(
    ("mode", "answer", "message"),
    [
        ("collection", "../../../../tmp/x/evilcoll", "which is not a collection name"),
        ("collection", "a/b", "which is not a collection name"),
        ("collection", "ms_a\x1b[2Jb", "which is not a collection name"),
        ("collection", "9lives", "which is not a collection name"),
        ("collection", "c" * 3000, "a collection name of 3,000 characters"),
        ("memory-dir", "/tmp/a\nb/memory", "control character (\\n at position 7)"),
        ("memory-dir", "/tmp/\x1b]0;pwned\x07/memory", "control character (\\x1b at position 6)"),
        ("state-dir", "/tmp/state\x7f", "control character (\\x7f at position 11)"),
        ("memory-dir", "/" + "a" * 5_000_148, "is 5,000,149 bytes long"),
        ("state-dir", "/tmp/" + "s" * 300, "component of 300 bytes"),
    ],
)
def test_unusable_store_command_answers_are_one_bounded_escaped_line(
    tmp_path: Path, mode: str, answer: str, message: str
) -> None:
    cmd = _answering(tmp_path, mode, answer)
    with pytest.raises(StoreCommandError) as info:
        resolve_scope(tmp_path, env={"MEMLANE_STORE_CMD": cmd})
    shown = info.value.message
    assert f"`{cmd} {mode}`" in shown
    assert message in shown
    # One line, whatever the answer held, and a bounded quote of it.
    assert shown.isprintable()
    assert len(shown) < 500 + len(cmd) + len(str(tmp_path))
    assert info.value.hint is not None and info.value.hint.isprintable()


def test_a_long_collection_name_is_refused_with_the_limit_not_a_disk_error(
    tmp_path: Path,
) -> None:
    cmd = _answering(tmp_path, "collection", "c" * 3000)
    with pytest.raises(StoreCommandError) as info:
        resolve_scope(tmp_path, env={"MEMLANE_STORE_CMD": cmd})
    assert "at most 128" in info.value.message
    assert "writable" not in info.value.message
    assert "… (3,000 characters)" in info.value.message


def test_store_command_answers_that_are_not_utf8_are_refused(tmp_path: Path) -> None:
    cmd = _store_cmd(
        tmp_path,
        'case "$1" in memory-dir) printf "/tmp/\\377/memory";; collection) printf "ms_\\377";; esac\n',
    )
    with pytest.raises(StoreCommandError, match="not a collection name"):
        resolve_scope(tmp_path, env={"MEMLANE_STORE_CMD": cmd})


def test_a_huge_error_message_of_the_store_command_is_quoted_bounded(tmp_path: Path) -> None:
    cmd = _store_cmd(tmp_path, "head -c 1000000 /dev/zero | tr '\\0' x >&2\nexit 2\n")
    with pytest.raises(StoreCommandError) as info:
        resolve_scope(tmp_path, env={"MEMLANE_STORE_CMD": cmd})
    assert "exited with status 2" in info.value.message
    assert "(1,000,000 characters)" in info.value.message
    assert len(info.value.message) < 500 + len(cmd) + len(str(tmp_path))


@pytest.mark.parametrize(
    "name", [collection_name("/tmp/demo"), collection_name("/x/" + "long-Name." * 40), "_c", "C9"]
)
def test_generated_and_plain_collection_names_pass(tmp_path: Path, name: str) -> None:
    cmd = _answering(tmp_path, "collection", name)
    assert resolve_scope(tmp_path, env={"MEMLANE_STORE_CMD": cmd}).collection == name
