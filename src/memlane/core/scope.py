"""Project scope, store, collection and index-state directory.

Mirrors memsearch's resolution exactly (pi-memsearch's runtime notes, "Memory entries" and "Indexing and
serialization") so memlane names the same store and collection as every
other agent in the mesh:

- project scope: the store command, else ``$MEMSEARCH_DIR``, else the git
  root, else the working directory;
- repository directory: the git root of the working directory, else it;
- collection: ``ms_<sanitized basename>_<sha256(realpath)[:8]>``.

One departure (ADR 0035): in a linked git worktree the git root rung is the
main worktree's (``scope.worktrees = shared``, the default), so every
worktree of a repository shares one store and collection; ``separate``
keeps memsearch's per-checkout rule. The repository directory stays the
worktree's own (children run there, its ``.memlane.toml`` applies).
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memlane.core.errors import ScopeError, StoreCommandError
from memlane.core.untrusted import excerpt, path_problem
from memlane.core.worktree import Checkout, find_checkout, find_root, repository_checkouts

STORE_CMD_ENV = "MEMLANE_STORE_CMD"
STORE_CMD_ENV_ALIAS = "PI_MEMSEARCH_STORE_CMD"
MEMSEARCH_DIR_ENV = "MEMSEARCH_DIR"
STORE_CMD_TIMEOUT_S = 30.0
COLLECTION_BASENAME_MAX = 40
INDEX_STATE_FILENAME = ".index-state.json"
MEMSEARCH_TREE = ".memsearch"
WORKTREES_KEY = "scope.worktrees"

# Milvus' collection-name rule (a letter or _, then letters, digits and _,
# at most 255), which memsearch's names (ms_<basename, at most 40>_<8 hex>)
# always meet. memlane also makes file names of it, the longest being
# ``<name>-<8 hex>.milvus-ledger.sqlite.corrupt-<stamp>-journal`` (the name
# plus 70), so it takes names of at most 128 characters.
MILVUS_NAME_MAX = 255
COLLECTION_NAME_MAX = 128
COLLECTION_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")  # the length is checked apart
COLLECTION_NAME_HINT = (
    "it must print letters, digits and underscores, starting with a letter or _ "
    "(memsearch's names look like ms_myproject_1a2b3c4d)"
)
PATH_HINT = "it must print one absolute path, on one line"

_NON_ALNUM_RE = re.compile(r"[^a-z0-9]")
_UNDERSCORES_RE = re.compile(r"_+")

# Answers are memoized per (command, mode, directory) for the life of the
# process, so every caller in one process shares one subprocess per directory.
_store_cmd_cache: dict[tuple[str, str, str], str | None] = {}


@dataclass(frozen=True)
class Scope:
    """Everything that locates one project's memory."""

    cwd: Path
    repository_dir: Path
    scope: Path
    store: Path
    collection: str
    state_dir: Path | None
    store_command: str | None = None
    state_dir_note: str | None = None  # why no state file is written, when state_dir is None
    # "store is a link to X (configured by ...)" when the user's setting went
    # through a symbolic link; the store path itself is then the real one.
    store_link_note: str | None = None
    worktree: WorktreeRule | None = None  # set in a linked git worktree

    @property
    def state_path(self) -> Path | None:
        return self.state_dir / INDEX_STATE_FILENAME if self.state_dir else None

    def to_json(self) -> dict[str, Any]:
        return {
            "scope": str(self.scope),
            "repository_dir": str(self.repository_dir),
            "store": str(self.store),
            "collection": self.collection,
            "state_dir": str(self.state_dir) if self.state_dir else None,
            "worktree": self.worktree.to_json() if self.worktree else None,
        }


@dataclass(frozen=True)
class WorktreeRule:
    """How a linked worktree's memory was placed, and why (``scope --json``, status)."""

    checkout: Path  # the linked worktree's top directory
    setting: str  # scope.worktrees: shared | separate
    origin: str  # the layer the setting came from (default, global, project, env)
    shared_with: Path | None  # the main worktree (or bare repository) whose memory it uses
    reason: str
    problem: str | None = None  # why sharing was asked for but could not be done

    def to_json(self) -> dict[str, str | None]:
        return {
            "checkout": str(self.checkout),
            "setting": self.setting,
            "origin": self.origin,
            "shared_with": str(self.shared_with) if self.shared_with else None,
            "reason": self.reason,
            "problem": self.problem,
        }


def collection_name(project_dir: str | Path) -> str:
    """memsearch's collection derivation over the real path of ``project_dir``."""
    real = os.path.realpath(os.fspath(project_dir))
    base = os.path.basename(real).lower()
    base = _NON_ALNUM_RE.sub("_", base)
    base = _UNDERSCORES_RE.sub("_", base)
    base = base.removeprefix("_").removesuffix("_")
    # The cut comes after the trim on purpose: a cut ending in "_" keeps it.
    base = base[:COLLECTION_BASENAME_MAX]
    digest = hashlib.sha256(real.encode("utf-8")).hexdigest()[:8]
    return f"ms_{base}_{digest}"


def git_root(start: Path) -> Path | None:
    """The nearest ancestor holding ``.git`` (a directory, or a worktree's file)."""
    return find_root(start)


def repository_dir_of(cwd: Path) -> Path:
    real = Path(os.path.realpath(cwd))
    return git_root(real) or real


def store_command(env: Mapping[str, str]) -> str | None:
    cmd = env.get(STORE_CMD_ENV) or env.get(STORE_CMD_ENV_ALIAS)
    return cmd.strip() if cmd and cmd.strip() else None


def run_store_command(command: str, mode: str, directory: Path) -> str | None:
    """Ask the store command one question; memoized per (command, mode, dir).

    Returns the absolute path or name it printed. Only ``state-dir`` may
    decline (exit 0, empty output) and then None is returned. Any other
    failure raises: a silent fallback would write memory to the wrong store.
    """
    key = (command, mode, str(directory))
    if key in _store_cmd_cache:
        return _store_cmd_cache[key]
    where = f"store command `{command} {mode}` (run in {directory})"
    try:
        argv = [*shlex.split(command), mode]
    except ValueError as exc:
        raise StoreCommandError(
            f"{where} cannot be parsed: {exc}", f"fix {STORE_CMD_ENV}"
        ) from None
    try:
        # Bytes: an answer that is not UTF-8 is decoded as the OS decodes
        # file names, so it fails the checks below instead of the decode.
        proc = subprocess.run(
            argv,
            cwd=directory,
            capture_output=True,
            timeout=STORE_CMD_TIMEOUT_S,
            check=False,
        )
    except FileNotFoundError:
        raise StoreCommandError(
            f"{where} failed: {argv[0]} was not found", f"check {STORE_CMD_ENV}"
        ) from None
    except subprocess.TimeoutExpired:
        raise StoreCommandError(
            f"{where} did not answer within {STORE_CMD_TIMEOUT_S:.0f} s",
            f"check {STORE_CMD_ENV}",
        ) from None
    except OSError as exc:
        raise StoreCommandError(f"{where} failed: {exc}", f"check {STORE_CMD_ENV}") from None
    answer = os.fsdecode(proc.stdout).strip()
    if proc.returncode != 0:
        stderr = proc.stderr.decode("utf-8", errors="replace").strip()
        detail = excerpt(stderr.splitlines()[-1]) if stderr else "no message"
        raise StoreCommandError(
            f"{where} exited with status {proc.returncode}: {detail}",
            "fix the command or unset " + STORE_CMD_ENV,
        )
    if not answer:
        if mode == "state-dir":
            _store_cmd_cache[key] = None
            return None
        raise StoreCommandError(
            f"{where} printed nothing", f"it must print the {mode.replace('-', ' ')}"
        )
    _check_answer(where, mode, answer)
    _store_cmd_cache[key] = answer
    return answer


def is_collection_name(name: object) -> bool:
    """Whether ``name`` is a collection name memlane accepts from outside."""
    return (
        isinstance(name, str)
        and COLLECTION_NAME_RE.match(name) is not None
        and len(name) <= COLLECTION_NAME_MAX
    )


def _check_answer(where: str, mode: str, answer: str) -> None:
    """Refuse an answer memlane cannot use safely, quoting a bounded excerpt.

    The collection becomes a file name (``<index dir>/<name>.sqlite``), so
    ``../../tmp/x`` or ``a/b`` would put an index outside memlane's
    directory; a path with a newline or an escape sequence would be used,
    and printed, with the bytes hidden.
    """
    shown = excerpt(answer)
    if mode == "collection":
        if COLLECTION_NAME_RE.match(answer) is None:
            raise StoreCommandError(
                f"{where} printed {shown}, which is not a collection name",
                COLLECTION_NAME_HINT,
            )
        if len(answer) > COLLECTION_NAME_MAX:
            raise StoreCommandError(
                f"{where} printed a collection name of {len(answer):,} characters, {shown}; "
                f"memlane names its index files after the collection, so it takes at most "
                f"{COLLECTION_NAME_MAX} (Milvus allows {MILVUS_NAME_MAX})",
                "make the command print a shorter name",
            )
        return
    problem = path_problem(answer)
    if problem is not None:
        raise StoreCommandError(f"{where} printed a path that {problem}: {shown}", PATH_HINT)
    if not os.path.isabs(answer):
        raise StoreCommandError(f"{where} printed a relative path: {shown}", PATH_HINT)


def clear_store_command_cache() -> None:
    _store_cmd_cache.clear()


def memsearch_tree_root(store: Path) -> Path | None:
    """The ``.memsearch`` directory the store sits in, if any.

    memsearch truncates at the first ``.memsearch`` component of the resolved
    path, following symlinks even through directories that do not exist yet.
    """
    parts = store.resolve(strict=False).parts
    for idx, part in enumerate(parts):
        if part == MEMSEARCH_TREE:
            return Path(*parts[: idx + 1])
    return None


def resolve_scope(
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    *,
    worktrees: tuple[str, str] | None = None,
) -> Scope:
    """Resolve where this project's memory lives, starting from ``cwd``.

    ``worktrees``: ``scope.worktrees`` and its layer when the caller has the
    configuration; else it is loaded, only in a linked worktree (the one place
    it matters), so a plain checkout reads no setting here.
    """
    env = os.environ if env is None else env
    start = Path(cwd if cwd is not None else os.getcwd()).expanduser()
    if not start.is_dir():
        raise ScopeError(f"directory not found: {start}", "pass an existing directory with -C DIR")
    start = Path(os.path.realpath(start))
    checkout = find_checkout(start)
    repo = checkout.root or start
    memsearch_dir_raw = env.get(MEMSEARCH_DIR_ENV, "").strip()
    memsearch_dir = (
        Path(os.path.realpath(repo / Path(memsearch_dir_raw).expanduser()))
        if memsearch_dir_raw
        else None
    )
    command = store_command(env)
    rule = _worktree_rule(checkout, command, memsearch_dir, repo, env, worktrees)
    link_note = None
    if memsearch_dir is not None:
        given = Path(os.path.abspath(repo / Path(memsearch_dir_raw).expanduser()))
        if given != memsearch_dir:
            link_note = _link_note(memsearch_dir / "memory", f"{MEMSEARCH_DIR_ENV}={given}")

    if command is not None:
        store_answer = run_store_command(command, "memory-dir", start)
        collection_answer = run_store_command(command, "collection", start)
        assert store_answer is not None and collection_answer is not None
        # The user's command chose this path, links and all: memlane uses its
        # real path, so the only links left in a store path are ones the
        # user did not configure (store/safe_paths.py refuses those).
        store = Path(os.path.realpath(store_answer))
        link_note = (
            _link_note(store, f"{STORE_CMD_ENV}, which printed {store_answer}")
            if str(store) != os.path.abspath(store_answer)
            else None
        )
        scope = store.parent if store.name == "memory" else store
        collection = collection_answer
        state_answer = run_store_command(command, "state-dir", start)
    else:
        shared = rule.shared_with if rule is not None else None
        scope = memsearch_dir if memsearch_dir is not None else (shared or repo)
        store = scope / "memory" if memsearch_dir is not None else scope / MEMSEARCH_TREE / "memory"
        collection = collection_name(scope)
        state_answer = None

    state_dir, note = _state_dir(store, state_answer, memsearch_dir, command)
    return Scope(
        cwd=start,
        repository_dir=repo,
        scope=scope,
        store=store,
        collection=collection,
        state_dir=state_dir,
        store_command=command,
        state_dir_note=note,
        store_link_note=link_note,
        worktree=rule,
    )


def _worktree_rule(
    checkout: Checkout,
    command: str | None,
    memsearch_dir: Path | None,
    repo: Path,
    env: Mapping[str, str],
    given: tuple[str, str] | None,
) -> WorktreeRule | None:
    """Whether this linked worktree shares the main worktree's memory, and why."""
    if not checkout.linked:
        return None
    if command is not None or memsearch_dir is not None:
        by = f"the store command ({STORE_CMD_ENV})" if command else MEMSEARCH_DIR_ENV
        reason = f"{by} places the store, so scope.worktrees does not apply"
        return WorktreeRule(repo, "-", "-", None, reason)
    if given is None:
        from memlane.core.config.layers import load_config

        value = load_config(repo, env).values[WORKTREES_KEY]
        given = (str(value.value), value.layer)
    setting, origin = given
    said = f"scope.worktrees = {setting}, {origin}"
    if setting == "separate":
        reason = f"this worktree keeps its own memory ({said})"
        return WorktreeRule(repo, setting, origin, None, reason)
    if checkout.shared_root is None:
        problem = f"this worktree keeps its own memory: {checkout.problem}"
        return WorktreeRule(repo, setting, origin, None, problem, problem)
    whose = "the bare repository" if checkout.bare else "the main worktree"
    reason = f"shared with {whose} at {checkout.shared_root} ({said})"
    return WorktreeRule(repo, setting, origin, checkout.shared_root, reason)


def shared_checkouts(scope: Scope, setting: object) -> list[Path]:
    """Every checkout of the repository when its worktrees share this memory
    (``setting``: the configuration's scope.worktrees), else none: whose
    transcripts are this memory's sessions (ADR 0035)."""
    if scope.worktree is not None:
        shared = scope.worktree.shared_with is not None
    else:  # a main checkout with no override shares when the setting says so
        shared = setting == "shared" and scope.scope == scope.repository_dir
    return repository_checkouts(scope.repository_dir) if shared else []


def _link_note(real_store: Path, configured_by: str) -> str:
    return f"store is a link to {real_store} (configured by {configured_by})"


def _state_dir(
    store: Path, state_answer: str | None, memsearch_dir: Path | None, command: str | None
) -> tuple[Path | None, str | None]:
    """Where ``.index-state.json`` lives, in memsearch's order of precedence."""
    if state_answer is not None:
        return Path(state_answer), None
    if memsearch_dir is not None:
        return memsearch_dir, None
    tree = memsearch_tree_root(store)
    if tree is not None:
        return tree, None
    if command is None:
        # The default store left its .memsearch tree through a link the
        # repository made: store/safe_paths.py refuses that store, so no
        # index runs and there is no state to record.
        return None, None
    # Only reachable with a store command that declined state-dir: memsearch
    # writes no state file here, and neither do we (mesh parity).
    note = (
        "no state file will be written: the store command declined state-dir, "
        f"{MEMSEARCH_DIR_ENV} is unset, and the store {store} sits outside any "
        f"{MEMSEARCH_TREE} tree; make `{command} state-dir` print a directory to record index health"
    )
    return None, note
