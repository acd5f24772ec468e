"""The pi package names the store memlane names, in every git layout (ADR 0035).

Without memlane (degraded.ts) the pi package writes the daily file itself,
so its ``resolveStore`` (daily.ts, worktree.ts) must place a worktree's
memory where ``resolve_scope`` does: run under the e2e cache's Node on real
repositories made by the real ``git``, each answer compared with Python's.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from pi_harness import PACKAGE_DIR, PiInstall

from git_worktrees import add_worktree, git, repository
from memlane.core.config.trust import set_trusted
from memlane.core.scope import resolve_scope

pytestmark = pytest.mark.e2e

DAILY_TS = PACKAGE_DIR / "extensions" / "memlane" / "daily.ts"
SCRIPT = f"""
import {{ resolveStore }} from {json.dumps(DAILY_TS.as_uri())};
const out = {{}};
for (const dir of JSON.parse(process.env.DIRS)) out[dir] = resolveStore(dir).store;
console.log(JSON.stringify(out));
"""


def node_stores(pi: PiInstall, dirs: list[Path], env: dict[str, str]) -> dict[str, str]:
    done = subprocess.run(
        [str(pi.node), "--input-type=module", "-e", SCRIPT],
        env={**env, "DIRS": json.dumps([str(d) for d in dirs])},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    stores = json.loads(done.stdout)
    assert isinstance(stores, dict)
    return stores


def layouts(tmp_path: Path) -> list[Path]:
    """One directory per case: main, linked (and below it), bare, submodule,
    moved worktree, forged .git file, no git, a trusted project file."""
    main = repository(tmp_path)
    linked = add_worktree(main, tmp_path / "app-a", "a")
    (linked / "src").mkdir()
    bare = tmp_path / "lib.git"
    git(tmp_path, "clone", "-q", "--bare", str(main), str(bare))
    bare_wt = add_worktree(bare, tmp_path / "lib-one", "one")
    git(main, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(bare), "sub")
    moved = add_worktree(main, tmp_path / "app-b", "b").rename(tmp_path / "app-b-moved")
    forged = tmp_path / "download"
    forged.mkdir()
    (forged / ".git").write_text(f"gitdir: {main}/.git/worktrees/app-a\n")
    plain = tmp_path / "plain"
    plain.mkdir()
    own = add_worktree(main, tmp_path / "app-c", "c")
    (own / ".memlane.toml").write_text('[scope]\nworktrees = "separate"\n')
    set_trusted(own, True)
    untrusted = add_worktree(main, tmp_path / "app-d", "d")
    (untrusted / ".memlane.toml").write_text("[scope]\nworktrees = 'separate'\n")
    return [
        main,
        linked,
        linked / "src",
        bare_wt,
        main / "sub",
        moved,
        forged,
        plain,
        own,
        untrusted,
    ]


@pytest.mark.parametrize("setting", [None, "separate", "shared"])
def test_resolve_store_places_memory_where_memlane_does(
    pi_install: PiInstall, tmp_path: Path, setting: str | None
) -> None:
    dirs = layouts(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    if setting is not None:
        env["MEMLANE_SCOPE_WORKTREES"] = setting
    expected = {str(d): str(resolve_scope(d, env=env).store) for d in dirs}
    assert node_stores(pi_install, dirs, env) == expected
    main_store, linked_store, below = (expected[str(d)] for d in dirs[:3])
    assert linked_store == below
    assert (linked_store == main_store) == (setting != "separate")
    own, untrusted = dirs[-2:]
    # The trusted project file says separate; the environment outranks it; an
    # untrusted one is not read (core/config/trust.py).
    assert expected[str(own)] == (
        main_store if setting == "shared" else str(own / ".memsearch/memory")
    )
    assert (expected[str(untrusted)] == main_store) == (setting != "separate")
    bare_root = dirs[3] if setting == "separate" else tmp_path / "lib.git"
    assert expected[str(dirs[3])] == str(bare_root / ".memsearch" / "memory")
    assert expected[str(dirs[5])] == str(dirs[5] / ".memsearch" / "memory")  # moved: its own
