"""Which checkout's memory a git worktree shares (core/worktree.py, ADR 0035).

The parsers of git's pointer files and config are property-tested; the
resolution runs on real repositories made by the real ``git``.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from git_worktrees import add_worktree, git, git_env, repository
from helpers import make_project
from memlane.core.scope import collection_name, resolve_scope
from memlane.core.worktree import (
    find_checkout,
    parse_core_config,
    parse_gitdir_file,
    parse_pointer,
    repository_checkouts,
)

PATHS = st.text(min_size=1).filter(lambda p: not ({"\r", "\n", "\0"} & set(p)))
ENDINGS = st.sampled_from(["", "\n", "\r\n", "\n\n", "\r"])


@settings(max_examples=200)
@given(st.text())
def test_the_parsers_take_any_text(text: str) -> None:
    for parsed in (parse_gitdir_file(text), parse_pointer(text)):
        assert parsed is None or (parsed and "\n" not in parsed and "\0" not in parsed)
    assert isinstance(parse_core_config(text), dict)


@given(PATHS, ENDINGS)
def test_a_gitdir_file_names_its_path_as_git_reads_it(path: str, ending: str) -> None:
    assert parse_gitdir_file(f"gitdir: {path}{ending}") == path
    assert parse_pointer(f"{path}{ending}") == path
    if not path.startswith(" "):
        assert parse_gitdir_file(f"gitdir:{path}") is None  # git wants the space
    assert parse_gitdir_file(f" gitdir: {path}") is None


@given(ENDINGS)
def test_an_empty_pointer_names_nothing(ending: str) -> None:
    assert parse_gitdir_file("gitdir: " + ending) is None
    assert parse_pointer(ending) is None


SECTIONS = st.sampled_from(["core", "Core", "CORE", " core ", "user", 'core "x"', "remote"])
KEYS = st.sampled_from(["bare", "Bare", "worktree", "WorkTree", "filemode"])
VALUES = st.text(alphabet="abcXYZ019/._-", min_size=1, max_size=12)


@given(st.lists(st.tuples(SECTIONS, KEYS, st.none() | VALUES, st.booleans()), max_size=12))
def test_core_values_are_the_last_set_in_a_core_section(
    lines: list[tuple[str, str, str | None, bool]],
) -> None:
    text, expected = [], {}
    for section, key, value, quoted in lines:
        text.append(f"[{section}]")
        if value is None:
            text.append(f"\t{key}")
        else:
            shown = f'"{value}"' if quoted else value
            text.append(f"\t{key} = {shown} ; a comment")
        if section.strip().lower() == "core":
            expected[key.lower()] = "true" if value is None else value
    assert parse_core_config("\n".join(text)) == expected


def test_a_key_may_follow_the_header_and_escapes_are_read() -> None:
    text = '[core] bare = false\n[core]\n\tworktree = "../../a \\"b\\"" # c\n'
    assert parse_core_config(text) == {"bare": "false", "worktree": '../../a "b"'}


def test_linked_worktrees_share_the_main_worktrees_scope(tmp_path: Path) -> None:
    main = repository(tmp_path)
    feat = add_worktree(main, tmp_path / "feat", "feat")
    (feat / "src" / "deep").mkdir(parents=True)
    for where in (feat, feat / "src" / "deep"):
        got = resolve_scope(where, env={})
        assert got.scope == main
        assert got.store == main / ".memsearch" / "memory"
        assert got.collection == collection_name(main)
        assert got.state_dir == main / ".memsearch"
        assert got.repository_dir == feat  # children run, and project config resolves, here
        assert got.worktree is not None and got.worktree.shared_with == main
        assert got.worktree.reason == (
            f"shared with the main worktree at {main} (scope.worktrees = shared, default)"
        )
    own = resolve_scope(main, env={})
    assert (own.scope, own.worktree) == (main, None)


def test_separate_keeps_memsearchs_per_checkout_rule(tmp_path: Path) -> None:
    main = repository(tmp_path)
    feat = add_worktree(main, tmp_path / "feat", "feat")
    got = resolve_scope(feat, env={"MEMLANE_SCOPE_WORKTREES": "separate"})
    assert got.scope == feat and got.collection == collection_name(feat)
    assert got.worktree is not None and got.worktree.shared_with is None
    assert (
        got.worktree.reason
        == "this worktree keeps its own memory (scope.worktrees = separate, env)"
    )


def test_the_store_command_and_memsearch_dir_outrank_the_worktree_rule(tmp_path: Path) -> None:
    main = repository(tmp_path)
    feat = add_worktree(main, tmp_path / "feat", "feat")
    got = resolve_scope(feat, env={"MEMSEARCH_DIR": str(tmp_path / "shared")})
    assert got.scope == tmp_path.resolve() / "shared"
    assert got.worktree is not None and "MEMSEARCH_DIR places the store" in got.worktree.reason


def test_a_bare_repositorys_worktrees_share_the_repository(tmp_path: Path) -> None:
    origin = repository(tmp_path, "origin")
    bare = tmp_path / "app.git"
    git(tmp_path, "clone", "-q", "--bare", str(origin), str(bare))
    one = add_worktree(bare, tmp_path / "one", "one")
    two = add_worktree(bare, tmp_path / "two", "two")
    first, second = resolve_scope(one, env={}), resolve_scope(two, env={})
    assert first.scope == second.scope == bare.resolve()
    assert first.collection == second.collection
    assert first.worktree is not None and "the bare repository" in first.worktree.reason


def test_a_submodule_and_a_plain_checkout_keep_their_own_memory(tmp_path: Path) -> None:
    lib = repository(tmp_path, "lib")
    app = repository(tmp_path, "app")
    git(app, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "lib")
    checkout = find_checkout(app / "lib")
    assert (checkout.root, checkout.linked) == (app / "lib", False)
    assert resolve_scope(app / "lib", env={}).scope == app / "lib"
    assert find_checkout(make_project(tmp_path, "plain")).linked is False  # an empty .git dir
    nowhere = tmp_path / "nogit"
    nowhere.mkdir()
    assert resolve_scope(nowhere, env={}).scope == nowhere.resolve()


def test_a_moved_or_deleted_main_worktree_falls_back_clearly(tmp_path: Path) -> None:
    main = repository(tmp_path)
    feat = add_worktree(main, tmp_path / "feat", "feat")
    moved = main.rename(tmp_path / "app-moved")
    got = resolve_scope(feat, env={})
    assert got.scope == feat
    assert got.worktree is not None and got.worktree.problem is not None
    assert "the main checkout was moved or deleted" in got.worktree.problem
    assert "git worktree repair" in got.worktree.problem
    git(moved, "worktree", "repair", str(feat))  # what the message says to do
    assert resolve_scope(feat, env={}).scope == moved
    shutil.rmtree(moved)
    assert resolve_scope(feat, env={}).scope == feat


def test_a_moved_worktree_or_a_forged_git_file_is_not_shared(tmp_path: Path) -> None:
    main = repository(tmp_path)
    feat = add_worktree(main, tmp_path / "feat", "feat")
    moved = feat.rename(tmp_path / "feat-moved")
    got = resolve_scope(moved, env={})
    assert got.scope == moved
    assert got.worktree is not None and "run `git worktree repair` here" in str(
        got.worktree.problem
    )
    git(moved, "worktree", "repair")
    assert resolve_scope(moved, env={}).scope == main
    # A directory whose .git file names another worktree's git dir: git's own
    # pointer back does not name it, so it cannot join that repository's memory.
    forged = tmp_path / "download"
    forged.mkdir()
    (forged / ".git").write_text(f"gitdir: {main}/.git/worktrees/feat\n")
    assert resolve_scope(forged, env={}).scope == forged.resolve()


def test_every_checkout_of_a_repository_is_listed_from_any_of_them(tmp_path: Path) -> None:
    main = repository(tmp_path)
    a = add_worktree(main, tmp_path / "app-a", "a")
    b = add_worktree(main, tmp_path / "app-b", "b")
    for where in (main, a, b / "."):
        assert repository_checkouts(where.resolve()) == [main, a, b]
    git(main, "worktree", "remove", str(b))
    assert repository_checkouts(a) == [main, a]
    bare = tmp_path / "app.git"
    git(tmp_path, "clone", "-q", "--bare", str(main), str(bare))
    one = add_worktree(bare, tmp_path / "one", "one")
    assert repository_checkouts(one) == [one]  # a bare repository has no main checkout
    assert repository_checkouts(make_project(tmp_path, "plain")) == [main.parent / "plain"]


def test_the_files_are_read_as_git_itself_reads_them(tmp_path: Path) -> None:
    """Common dir and main worktree agree with ``git rev-parse`` and ``git worktree list``."""
    main = repository(tmp_path)
    feat = add_worktree(main, tmp_path / "feat", "feat")
    (feat / "deep").mkdir()
    bare = tmp_path / "app.git"
    git(tmp_path, "clone", "-q", "--bare", str(main), str(bare))
    one = add_worktree(bare, tmp_path / "one", "one")
    for where in (main, feat, feat / "deep", one):
        checkout = find_checkout(where)
        common = git(where, "rev-parse", "--path-format=absolute", "--git-common-dir")
        assert checkout.common == Path(common).resolve(), where
        listed = git(where, "worktree", "list", "--porcelain").split("\n\n")[0].splitlines()
        first = Path(listed[0].removeprefix("worktree ")).resolve()
        if checkout.linked:
            assert checkout.shared_root == first, where
            assert checkout.bare == ("bare" in listed), where
        else:
            assert checkout.root == first == Path(git(where, "rev-parse", "--show-toplevel"))


BOOLS = st.sampled_from(["true", "false", "yes", "no", "on", "off", "1", "0", "TRUE", '"yes"'])
PATHS_IN_CONFIG = st.sampled_from(["../..", "../../a b", '"../x y"', "/abs/wt", "rel\\\\dir"])


@settings(max_examples=30, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["core", "Core", "user", 'core "x"']),
            st.sampled_from(["bare", "worktree", "filemode"]),
            st.booleans(),
            st.booleans(),
        ),
        min_size=1,
        max_size=6,
    ),
    st.data(),
)
def test_core_bare_and_worktree_are_what_git_config_says(
    lines: list[tuple[str, str, bool, bool]], data: st.DataObject
) -> None:
    text = []
    for section, key, same_line, comment in lines:
        value = data.draw(PATHS_IN_CONFIG if key == "worktree" else BOOLS)
        body = f"{key} = {value}" + (" ; note" if comment else "")
        text.extend([f"[{section}] {body}"] if same_line else [f"[{section}]", f"\t{body}"])
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "config"
        path.write_text("\n".join(text) + "\n")
        ours = parse_core_config(path.read_text())
        for key, kind in (("bare", "bool"), ("worktree", None)):
            args = ["config", "-f", str(path), *(["--type", kind] if kind else []), "--get"]
            done = subprocess.run(
                ["git", *args, f"core.{key}"],
                capture_output=True,
                text=True,
                check=False,
                env=git_env(),
            )
            if done.returncode == 1:
                assert key not in ours
                continue
            assert done.returncode == 0, done.stderr
            theirs = done.stdout.removesuffix("\n")
            if kind == "bool":
                assert (ours[key].lower() in ("true", "yes", "on", "1")) == (theirs == "true")
            else:
                assert ours[key] == theirs
