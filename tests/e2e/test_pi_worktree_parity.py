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
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pi_harness import PACKAGE_DIR, PiInstall

from git_worktrees import add_worktree, git, repository
from memlane.core.config import load_config
from memlane.core.config.trust import set_trusted
from memlane.core.scope import resolve_scope, shared_checkouts
from memlane.core.worktree import parse_core_config, parse_gitdir_file, parse_pointer

pytestmark = pytest.mark.e2e

DAILY_TS = PACKAGE_DIR / "extensions" / "memlane" / "daily.ts"
WORKTREE_TS = PACKAGE_DIR / "extensions" / "memlane" / "worktree.ts"
PARSE = f"""
import {{ parseCoreConfig, parseGitdirFile, parsePointer }} from {json.dumps(WORKTREE_TS.as_uri())};
const texts = JSON.parse(process.env.TEXTS);
console.log(JSON.stringify(texts.map((t) => [parseGitdirFile(t), parsePointer(t), parseCoreConfig(t)])));
"""
# Config-like text: the pieces git's syntax is made of, in any order, plus anything.
PIECES = st.sampled_from(
    [
        "[core]",
        "[Core ]",
        '[core "x"]',
        "[user]",
        "\n",
        "\r\n",
        "\r",
        " ",
        "\t",
        "\v",
        "\x0c",
        "bare",
        "BARE",
        "worktree",
        "=",
        " = ",
        "true",
        '"',
        "\\",
        "#",
        ";",
        "]",
        "[",
        "gitdir: ",
        "../..",
        "/a b",
        "\x00",
        "\u2028",
        "\x85",
        "\xa0",
        "\u212a",
        "é",
        "K",
        "-",
        "__proto__",
    ]
)
CONFIGS = st.lists(PIECES, max_size=30).map("".join)
TEXTS = st.one_of(st.text(max_size=60), CONFIGS, CONFIGS, CONFIGS)
#: Always checked: where a careless port would differ (line ends, whitespace
#: and case beyond ASCII, escapes at the end, quotes left open).
FIXED = [
    "[core]\x85bare",
    "[core]\u2028bare = true",
    "[core]\rbare = true\r\n",
    "[core]\n\x0bbare\x0c= yes\n",
    '[CORE]\n\tBARE = "x # y" # z\n',
    "[core]\n\u212aey = 1\n",
    "[core]\nbare = \xa0true\xa0\n",
    "[core]\nworktree = a\\",
    '[core]\nworktree = "open',
    "[core]\n__proto__ = 1\n",
    "gitdir: \x00",
    "gitdir: a\r\n\r\n",
    "gitdir: \n",
]
SCRIPT = f"""
import {{ resolveStore }} from {json.dumps(DAILY_TS.as_uri())};
import {{ sharedCheckouts }} from {json.dumps(WORKTREE_TS.as_uri())};
const out = {{}};
for (const dir of JSON.parse(process.env.DIRS)) {{
    const where = resolveStore(dir);
    out[dir] = [where.store, sharedCheckouts(where.repositoryDir, where.scope)];
}}
console.log(JSON.stringify(out));
"""


def node_stores(pi: PiInstall, dirs: list[Path], env: dict[str, str]) -> dict[str, list[Any]]:
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
    scopes = {str(d): resolve_scope(d, env=env) for d in dirs}
    expected = {str(d): str(s.store) for d, s in scopes.items()}
    answers = node_stores(pi_install, dirs, env)
    assert {d: a[0] for d, a in answers.items()} == expected
    # Whose sessions are this memory's (the transcripts memory_transcript opens):
    # every worktree's when shared, as the sessions layer reads them.
    for d, s in scopes.items():
        chosen = load_config(s.repository_dir, env).get("scope.worktrees")
        assert answers[d][1] == [str(p) for p in shared_checkouts(s, chosen)], d
    assert len(answers[str(dirs[0])][1]) == (0 if setting == "separate" else 4)  # b moved away
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


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(TEXTS, min_size=40, max_size=120))
def test_the_pi_packages_parsers_read_git_files_as_memlanes_do(
    pi_install: PiInstall, texts: list[str]
) -> None:
    done = subprocess.run(
        [str(pi_install.node), "--input-type=module", "-e", PARSE],
        env={"TEXTS": json.dumps(FIXED + texts), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    texts = FIXED + texts
    expected = [[parse_gitdir_file(t), parse_pointer(t), parse_core_config(t)] for t in texts]
    assert json.loads(done.stdout) == expected
