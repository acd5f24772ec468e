"""Which git checkout a directory is in, and which checkout's memory it shares.

A linked worktree (``git worktree add``) has a ``.git`` *file*,
``gitdir: <main>/.git/worktrees/<id>``; that directory holds ``commondir``
(the way to the repository's common directory, ``../..``) and ``gitdir``
(the way back to the worktree's ``.git`` file). The main worktree is the
common directory's parent when it is named ``.git``; a repository whose
common directory is not (a submodule's absorbed ``.git/modules/<name>``)
names its checkout with ``core.worktree``; one with neither, or with
``core.bare = true``, is bare: its worktrees share no checkout, so they
share the repository directory itself.

Everything is read from those few small files, as git reads them (git's
setup.c and worktree.c: the ``gitdir: `` prefix, trailing CR/LF stripped,
a relative path taken from the file's directory), so no ``git`` process
runs on the way to a hook's answer. A link that cannot be followed (the
main checkout moved or deleted, a worktree moved without
``git worktree move``, a ``.git`` file nobody's worktree points back to)
is not shared: the checkout keeps its own memory and ``problem`` says why
and how to repair it (ADR 0035).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from memlane.core.regular_file import FileTooLargeError, NotRegularFileError, read_regular_file

GITDIR_PREFIX = "gitdir: "
# A pointer file holds one path: anything longer than this is not one.
POINTER_MAX_BYTES = 4096
# A repository's config is small; past this only its start is read.
CONFIG_MAX_BYTES = 1 << 20
_TRUE = ("true", "yes", "on", "1")
_WS = " \t\n\v\f\r"  # C's isspace(), which git's config parser uses
_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_KEY_RE = re.compile(r"[a-z0-9-]*[a-z0-9][a-z0-9-]*")


def parse_gitdir_file(text: str) -> str | None:
    """The path a ``.git`` file names, or None when it is not a gitdir file."""
    if not text.startswith(GITDIR_PREFIX):
        return None
    return parse_pointer(text[len(GITDIR_PREFIX) :])


def parse_pointer(text: str) -> str | None:
    """A ``commondir`` or ``gitdir`` file's path: trailing CR/LF stripped, as git does."""
    path = text.rstrip("\r\n")
    if not path or "\0" in path or "\n" in path:
        return None
    return path


def parse_core_config(text: str) -> dict[str, str]:
    """``core.*`` values of a git config file (keys lower-cased, last one wins).

    Enough of git's syntax for ``core.bare`` and ``core.worktree``: section
    headers in any case, a key alone meaning true, ``#``/``;`` comments,
    double quotes with their escapes, and a key on the header's own line.
    """
    found: dict[str, str] = {}
    in_core = False
    for raw in text.split("\n"):  # git's lines; ASCII whitespace and case, as git's
        line = raw.strip(_WS)
        if line.startswith("["):
            end = line.find("]")
            if end < 0:
                in_core = False
                continue
            in_core = line[1:end].strip(_WS).translate(_LOWER) == "core"
            line = line[end + 1 :].strip(_WS)
        if not in_core or not line or line[0] in "#;":
            continue
        name, sep, rest = line.partition("=")
        key = name.strip(_WS).translate(_LOWER)
        if _KEY_RE.fullmatch(key) is None:
            continue
        found[key] = _config_value(rest) if sep else "true"
    return found


def _config_value(rest: str) -> str:
    out: list[str] = []
    quoted = False
    chars = iter(rest.strip(_WS))
    for c in chars:
        if c == "\\":
            nxt = next(chars, "")
            out.append({"n": "\n", "t": "\t", "b": "\b"}.get(nxt, nxt))
        elif c == '"':
            quoted = not quoted
        elif c in "#;" and not quoted:
            break
        else:
            out.append(c)
    return "".join(out).strip(_WS) if not quoted else "".join(out)


@dataclass(frozen=True)
class Checkout:
    """Where a directory sits in git: its checkout and the one it shares memory with."""

    root: Path | None  # the nearest directory holding .git; None outside git
    linked: bool = False  # a linked worktree (git worktree add)
    shared_root: Path | None = None  # the main worktree, or a bare repository's directory
    bare: bool = False  # the repository has no main checkout
    problem: str | None = None  # why a linked worktree's memory cannot be shared
    common: Path | None = None  # the repository's git dir, when it could be found


def find_root(start: Path) -> Path | None:
    """The nearest ancestor holding ``.git`` (a directory, or a worktree's file)."""
    current = start
    while True:
        if (current / ".git").exists():
            return current
        if current.parent == current:
            return None
        current = current.parent


def _read(path: Path, max_bytes: int = POINTER_MAX_BYTES) -> str | None:
    try:
        return read_regular_file(path, max_bytes=max_bytes, what="git file").decode(
            "utf-8", "surrogateescape"
        )
    except (OSError, NotRegularFileError, FileTooLargeError):
        return None


def _real(base: Path, path: str) -> Path:
    return Path(os.path.realpath(os.path.join(base, path)))


def find_checkout(start: Path) -> Checkout:
    """The checkout holding *start* (a real path) and the root it shares memory with."""
    root = find_root(start)
    if root is None:
        return Checkout(None)
    dotgit = root / ".git"
    if dotgit.is_dir():
        return Checkout(root, common=Path(os.path.realpath(dotgit)))  # a main checkout
    if not dotgit.is_file():
        return Checkout(root)  # a .git we do not know: its own memory
    text = _read(dotgit)
    pointed = parse_gitdir_file(text) if text is not None else None
    if pointed is None:
        return Checkout(root, problem=f"{dotgit} is not a gitdir file (`gitdir: <path>`)")
    gitdir = _real(root, pointed)
    commondir_file = gitdir / "commondir"
    if not gitdir.is_dir():
        return Checkout(
            root,
            linked=True,
            problem=(
                f"{dotgit} points to {gitdir}, which does not exist: the main checkout was "
                "moved or deleted (after moving it, run `git worktree repair` in it)"
            ),
        )
    if not os.path.lexists(commondir_file):
        return Checkout(root)  # a submodule or a separate git dir: its own repository
    common_text = _read(commondir_file)
    common_rel = parse_pointer(common_text) if common_text is not None else None
    common = _real(gitdir, common_rel) if common_rel is not None else None
    if common is None or not common.is_dir():
        return Checkout(
            root, linked=True, problem=f"{commondir_file} does not name the repository's git dir"
        )
    back_text = _read(gitdir / "gitdir")
    back = parse_pointer(back_text) if back_text is not None else None
    if back is None or _real(gitdir, back) != Path(os.path.realpath(dotgit)):
        return Checkout(
            root,
            linked=True,
            problem=(
                f"git does not know this worktree at {root} ({gitdir / 'gitdir'} names "
                f"{back or 'nothing'}): it was moved or copied; run `git worktree repair` here"
            ),
        )
    main, bare = main_worktree(common)
    if main is None:
        return Checkout(root, linked=True, shared_root=common, bare=bare, common=common)
    if not main.is_dir():
        return Checkout(
            root,
            linked=True,
            problem=f"the main checkout {main} named by {common / 'config'} does not exist",
        )
    return Checkout(root, linked=True, shared_root=main, common=common)


def repository_checkouts(root: Path) -> list[Path]:
    """Every checkout of the repository *root* is a checkout of: the main one
    (none when bare) and each linked worktree git lists that still exists."""
    checkout = find_checkout(root)
    common = checkout.common
    if common is None or not common.is_dir():
        return []
    found: list[Path] = []
    main = checkout.shared_root if checkout.linked else checkout.root
    if main is not None and main != common:
        found.append(main)
    try:
        names = sorted(os.listdir(common / "worktrees"))
    except OSError:
        return found
    for name in names:
        admin = common / "worktrees" / name
        text = _read(admin / "gitdir")
        pointed = parse_pointer(text) if text is not None else None
        if pointed is None:
            continue
        linked = _real(admin, pointed).parent
        if linked.is_dir() and linked not in found:
            found.append(linked)
    return found


def main_worktree(common: Path) -> tuple[Path | None, bool]:
    """The main checkout of the repository whose common dir is *common*, and
    whether the repository is bare (then there is none)."""
    text = _read(common / "config", CONFIG_MAX_BYTES)
    core = parse_core_config(text) if text is not None else {}
    if core.get("bare", "").translate(_LOWER) in _TRUE:
        return None, True
    if common.name == ".git":
        return common.parent, False
    worktree = core.get("worktree")
    if worktree:
        return _real(common, worktree), False
    return None, True
