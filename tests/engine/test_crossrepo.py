"""Cross-repo recall (scope "all"): one test per rule of the reference's
"Cross-repo recall" section, over real project directories and real
indexes built by ``Memory.sync()`` (provider none, except one hybrid test).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from helpers import open_memory
from memlane.core.errors import ConfigError, NotFoundError
from memlane.core.scope import collection_name, resolve_scope
from memlane.engine.project import Memory
from memlane.engine.recall import crossrepo
from memlane.engine.recall.crossrepo import (
    FanOutResult,
    expand_in_project,
    resolve_project,
    search_all,
)
from memlane.engine.recall.projects import (
    collection_for_project,
    discover_projects,
    recorded_collection,
)
from memlane.engine.shared.tool_outputs import output_schema
from memlane.engine.tools.dispatch import Tools

TOPIC = "the user and the agent moved the hot cache to Redis with 5 minute TTLs"


def _index(directory: Path, text: str = TOPIC, **env: str) -> str:
    """Write one entry in ``directory``'s memory (configured by the environment
    plus *env*) and index it; its collection."""
    with open_memory(directory, **env) as mem:
        mem.write(f"{directory.name}: {text}")
        mem.sync()
        return mem.scope.collection


def _repo(path: Path) -> Path:
    (path / ".git").mkdir(parents=True)
    return path


def _index_files(home: Path) -> list[str]:
    return sorted(p.name for p in (home / "index").glob("*.sqlite"))


@pytest.fixture(autouse=True)
def lexical_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMLANE_EMBEDDING_PROVIDER", "none")


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A scan root with every project shape the rules name.

    - cur: the session's own repo (.memsearch/memory), under the root
    - alpha: another repo (.memsearch/memory), indexed
    - bare: a bare memory/ store (what $MEMSEARCH_DIR produces), indexed
    - never: a store that was never indexed
    - twin1, twin2: distinct directories whose state files record one collection
    - plain: a directory with no store (not a project)
    """
    root = tmp_path / "roots"
    w = {name: _repo(root / name) for name in ("cur", "alpha", "never", "twin1", "twin2")}
    w["root"] = root
    w["bare"] = root / "bare"
    w["bare"].mkdir()
    (root / "plain").mkdir()
    _index(w["cur"], "the current project chose Postgres for the ledger; redis for sessions")
    _index(w["alpha"])
    _index(w["bare"], MEMSEARCH_DIR=str(w["bare"]))
    (w["never"] / ".memsearch" / "memory").mkdir(parents=True)
    (w["never"] / ".memsearch" / "memory" / "2026-01-01.md").write_text(
        "# 2026-01-01\n\n### 10:00\n- redis cache never indexed here\n"
    )
    _index(w["twin1"], "twin redis cache notes")
    (w["twin2"] / ".memsearch" / "memory").mkdir(parents=True)
    shutil.copy(
        w["twin1"] / ".memsearch" / ".index-state.json",
        w["twin2"] / ".memsearch" / ".index-state.json",
    )
    monkeypatch.setenv("MEMLANE_SCAN_ROOTS", str(root))
    return w


@pytest.fixture
def session(world: dict[str, Path]) -> Iterator[Memory]:
    with open_memory(world["cur"]) as mem:
        yield mem


# -- what counts as a project ------------------------------------------------------


def test_projects_are_immediate_children_with_either_store_shape(world: dict[str, Path]) -> None:
    root = world["root"]
    (root / "memory").mkdir()  # the root itself is never a project
    (root / ".memsearch" / "memory").mkdir(parents=True)  # a store tree, not a project
    (root / "alpha" / "nested").mkdir()
    _repo(root / "alpha" / "nested" / "deep")
    (root / "alpha" / "nested" / "deep" / "memory").mkdir()  # below depth one: not scanned
    (root / "afile").write_text("x")
    found = discover_projects([root])
    assert found == sorted(root / n for n in ("alpha", "bare", "cur", "never", "twin1", "twin2"))


def test_no_scan_roots_says_to_set_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, world: dict[str, Path]
) -> None:
    monkeypatch.delenv("MEMLANE_SCAN_ROOTS")
    with open_memory(world["cur"]) as mem, pytest.raises(ConfigError, match="MEMLANE_SCAN_ROOTS"):
        search_all(mem, "redis")


@pytest.mark.parametrize("var", ["MEMLANE_SCAN_ROOTS", "PI_MEMSEARCH_SCAN_ROOTS"])
def test_scan_roots_env_and_alias_take_a_path_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, var: str
) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    _index(_repo(a / "one"))
    _index(_repo(b / "two"))
    monkeypatch.delenv("MEMLANE_SCAN_ROOTS", raising=False)
    monkeypatch.setenv(var, f"{a}{os.pathsep}{b}{os.pathsep}")
    with open_memory(_repo(tmp_path / "elsewhere")) as mem:
        result = search_all(mem, "redis cache")
    assert set(result.searched) == {str(a / "one"), str(b / "two")}
    assert result.skipped_never_indexed == [str(tmp_path / "elsewhere")]


def test_a_missing_scan_root_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, session: Memory
) -> None:
    monkeypatch.setenv("MEMLANE_SCAN_ROOTS", str(tmp_path / "nope"))
    with open_memory(session.scope.cwd) as mem, pytest.raises(ConfigError, match="nope"):
        search_all(mem, "redis")


# -- the fan-out ---------------------------------------------------------------------


def test_fan_out_accounts_for_every_project(world: dict[str, Path], session: Memory) -> None:
    result = search_all(session, "redis cache", k=10)
    w = {k: str(v) for k, v in world.items()}
    # Current project first, reached again under the root: deduplicated silently.
    assert result.searched == [w["cur"], w["alpha"], w["bare"], w["twin1"]]
    assert result.skipped_never_indexed == [w["never"]]
    assert result.collapsed == [(w["twin1"], [w["twin2"]])]
    assert result.accounting == (
        f"searched 6 projects (1 never indexed, skipped; "
        f"2 resolved to one collection: {w['twin1']}, {w['twin2']})"
    )
    data = result.to_json()
    assert data["skipped_never_indexed"] == {"count": 1, "projects": [w["never"]]}
    assert data["collapsed"] == [{"kept": w["twin1"], "collapsed": [w["twin2"]]}]
    assert data["accounting"] == result.accounting
    json.dumps(data)


def test_hits_merge_by_score_each_labeled_with_its_project(
    world: dict[str, Path], session: Memory
) -> None:
    result = search_all(session, "redis cache ttl", k=3)
    assert len(result.hits) == 3
    scores = [h.score for h in result.hits]
    assert scores == sorted(scores, reverse=True)
    assert all(0 < s <= 1 for s in scores)
    for hit in result.hits:
        assert hit.project is not None
        assert Path(hit.source).is_relative_to(hit.project)  # from the labeled project
        assert hit.to_json()["project"] == hit.project
    everything = search_all(session, "redis cache ttl", k=20)
    assert {h.project for h in everything.hits} == set(everything.searched)


def test_each_leg_ranks_exactly_as_a_project_search(world: dict[str, Path]) -> None:
    """The read-only leg (scratch tokenizer) scores like the project's own search."""
    with open_memory(world["alpha"]) as mem:
        own = mem.search("moved hot cache redis", k=5, sync=False)
    with open_memory(world["cur"]) as mem:
        fan = search_all(mem, "moved hot cache redis", k=50)
    from_alpha = [(h.chunk_hash, h.score) for h in fan.hits if h.project == str(world["alpha"])]
    assert own.hits
    assert from_alpha == [(h.chunk_hash, h.score) for h in own.hits]


def test_collapsed_part_only_when_there_is_one(world: dict[str, Path], session: Memory) -> None:
    shutil.rmtree(world["twin2"])
    result = search_all(session, "redis")
    assert result.collapsed == []
    assert result.accounting == "searched 5 projects (1 never indexed, skipped)"


def test_never_indexed_is_skipped_and_never_created(
    world: dict[str, Path], session: Memory, isolated_home: Path
) -> None:
    before = _index_files(isolated_home)
    result = search_all(session, "redis never indexed")
    assert str(world["never"]) in result.skipped_never_indexed
    assert result.hits  # the other projects answered ...
    assert all(h.project != str(world["never"]) for h in result.hits)  # ... and only they
    never = collection_name(world["never"])
    assert not list((isolated_home / "index").glob(f"{never}*"))
    assert _index_files(isolated_home) == before


def test_current_project_never_indexed_is_counted(tmp_path: Path, world: dict[str, Path]) -> None:
    fresh = _repo(tmp_path / "fresh")
    with open_memory(fresh) as mem:
        result = search_all(mem, "redis")
    assert result.skipped_never_indexed[0] == str(fresh)
    assert str(world["alpha"]) in result.searched


def test_memsearch_dir_never_names_a_foreign_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, world: dict[str, Path]
) -> None:
    """#95: the session's override applied to every project collapsed the fan-out."""
    shared = tmp_path / "shared"
    shared.mkdir()
    _index(shared, MEMSEARCH_DIR=str(shared))
    monkeypatch.setenv("MEMSEARCH_DIR", str(shared))
    with open_memory(world["cur"]) as mem:
        assert mem.scope.scope == shared
        result = search_all(mem, "redis cache", k=10)
        alpha, _ = collection_for_project(world["alpha"], env=os.environ, session_scope=mem.scope)
    assert result.searched[0] == str(shared)  # the session's leg: its override
    assert alpha == collection_name(world["alpha"]) != collection_name(shared)
    assert result.collapsed == [(str(world["twin1"]), [str(world["twin2"])])]
    assert str(world["alpha"]) in result.searched and str(world["cur"]) in result.searched


def test_current_project_reached_twice_through_a_symlink_is_silent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, world: dict[str, Path]
) -> None:
    other = tmp_path / "other-root"
    other.mkdir()
    (other / "link-to-cur").symlink_to(world["cur"])
    monkeypatch.setenv("MEMLANE_SCAN_ROOTS", f"{world['root']}{os.pathsep}{other}")
    with open_memory(world["cur"]) as mem:
        result = search_all(mem, "redis")
    assert result.searched.count(str(world["cur"])) == 1
    assert str(other / "link-to-cur") not in result.searched
    assert all(str(other) not in kept for kept, _ in result.collapsed)


# -- naming a discovered project's collection ---------------------------------------


@pytest.mark.parametrize(
    "content",
    [
        "{not json",
        "[1, 2]",
        json.dumps({"schema_version": 2, "status": "ok", "collection": "ms_x_00000000"}),
        json.dumps({"schema_version": 1, "collection": "ms_x_00000000"}),  # no status
        json.dumps({"schema_version": 1, "status": "ok", "collection": "../../etc/passwd"}),
        json.dumps({"schema_version": 1, "status": "ok", "collection": 7}),
        json.dumps({"schema_version": True, "status": "ok", "collection": "ms_x_00000000"}),
        "",
    ],
    ids=["not-json", "not-object", "other-version", "no-status", "path", "number", "bool", "empty"],
)
def test_a_bad_state_file_records_no_name_and_never_fails_the_fan_out(
    world: dict[str, Path], session: Memory, content: str
) -> None:
    state = world["alpha"] / ".memsearch" / ".index-state.json"
    state.write_text(content)
    assert recorded_collection(world["alpha"]) is None
    collection, _ = collection_for_project(world["alpha"], env={}, session_scope=session.scope)
    assert collection == collection_name(world["alpha"])
    assert str(world["alpha"]) in search_all(session, "redis").searched


def test_an_unreadable_state_file_records_no_name(world: dict[str, Path]) -> None:
    # A directory where the file should be: unreadable even for root.
    state = world["alpha"] / ".memsearch" / ".index-state.json"
    state.unlink()
    state.mkdir()
    assert recorded_collection(world["alpha"]) is None


def test_recorded_name_outranks_the_derivation_in_both_places(
    world: dict[str, Path], session: Memory
) -> None:
    record = {"schema_version": 1, "status": "ok", "collection": "ms_recorded_12345678"}
    tree = world["alpha"] / ".memsearch" / ".index-state.json"
    tree.write_text(json.dumps(record))
    assert recorded_collection(world["alpha"]) == "ms_recorded_12345678"
    # A bare store's state sits beside it; the .memsearch file is read first.
    beside = world["bare"] / ".index-state.json"
    assert recorded_collection(world["bare"]) == collection_name(world["bare"])
    beside.write_text(json.dumps({**record, "collection": "ms_beside_00000000"}))
    assert recorded_collection(world["bare"]) == "ms_beside_00000000"
    (world["bare"] / ".memsearch").mkdir()
    (world["bare"] / ".memsearch" / ".index-state.json").write_text(json.dumps(record))
    assert recorded_collection(world["bare"]) == "ms_recorded_12345678"
    # A broken .memsearch file falls through to the one beside the store.
    (world["bare"] / ".memsearch" / ".index-state.json").write_text("{")
    assert recorded_collection(world["bare"]) == "ms_beside_00000000"


def test_derivation_is_over_the_directory_itself_with_no_git_walk(
    tmp_path: Path, session: Memory
) -> None:
    repo = _repo(tmp_path / "repo")
    sub = repo / "pkg"
    (sub / "memory").mkdir(parents=True)
    collection, store = collection_for_project(sub, env={}, session_scope=session.scope)
    assert collection == collection_name(sub) != collection_name(repo)
    assert store == sub / "memory"


def _store_command(tmp_path: Path) -> tuple[str, Path]:
    log = tmp_path / "cmd.log"
    script = tmp_path / "store-cmd"
    script.write_text(
        f"#!{sys.executable}\n"
        "import os, sys\n"
        "mode = sys.argv[1]\n"
        f"open({str(log)!r}, 'a').write(mode + ' ' + os.getcwd() + '\\n')\n"
        "here = os.getcwd()\n"
        "name = os.path.basename(here).replace('-', '_')\n"
        "if mode == 'memory-dir': print(os.path.join(here, 'memory'))\n"
        "elif mode == 'collection': print('ms_cmd_' + name)\n"
        "elif mode == 'state-dir': print(here)\n"
    )
    script.chmod(0o755)
    return str(script), log


def test_store_command_answers_for_every_foreign_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    command, log = _store_command(tmp_path)
    root = tmp_path / "cmd-root"
    cur, one, two = (root / n for n in ("cur", "one", "two"))
    for d in (cur, one, two):
        d.mkdir(parents=True)
    for d in (cur, one, two):
        _index(d, MEMLANE_STORE_CMD=command)
    # The command outranks a recorded name: the rungs below it never run.
    (two / ".memsearch").mkdir()
    (two / ".memsearch" / ".index-state.json").write_text(
        json.dumps({"schema_version": 1, "status": "ok", "collection": "ms_wrong_00000000"})
    )
    monkeypatch.setenv("MEMLANE_STORE_CMD", command)
    monkeypatch.setenv("MEMLANE_SCAN_ROOTS", str(root))
    with open_memory(cur) as mem:
        assert mem.scope.collection == "ms_cmd_cur"
        result = search_all(mem, "redis cache", k=10)
        coll, store = collection_for_project(two, env=os.environ, session_scope=mem.scope)
    assert result.searched == [str(cur), str(one), str(two)]
    assert {h.project for h in result.hits} == {str(cur), str(one), str(two)}
    assert (coll, store) == ("ms_cmd_two", two / "memory")
    asked = log.read_text().splitlines()
    for d in (one, two):  # run in the foreign directory itself
        assert f"collection {os.path.realpath(d)}" in asked
        assert f"memory-dir {os.path.realpath(d)}" in asked


def test_a_failing_store_command_fails_the_fan_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, world: dict[str, Path], session: Memory
) -> None:
    from memlane.core.errors import StoreCommandError

    bad = tmp_path / "bad-cmd"
    bad.write_text("#!/bin/sh\nexit 3\n")
    bad.chmod(0o755)
    with pytest.raises(StoreCommandError, match="exited with status 3"):
        collection_for_project(
            world["alpha"], env={"MEMLANE_STORE_CMD": str(bad)}, session_scope=session.scope
        )
    # No fallback to the rungs below: the whole fan-out fails, naming the command.
    with pytest.raises(StoreCommandError, match="bad-cmd"):
        search_all(session, "redis", env={"MEMLANE_STORE_CMD": str(bad)})


# -- project routing (memory_expand, memory_transcript) --------------------------------


def test_expand_follows_a_hit_to_its_project(world: dict[str, Path], session: Memory) -> None:
    result = search_all(session, "moved hot cache redis ttls", k=20)
    for project in (world["alpha"], world["bare"]):
        hit = next(h for h in result.hits if h.project == str(project))
        section = expand_in_project(session, hit.chunk_hash, hit.project)  # verbatim label
        assert section.chunk_hash == hit.chunk_hash
        assert project.name in section.content
        assert section.anchor is not None and section.anchor.session == "cli"
    with pytest.raises(NotFoundError, match="no chunk"):
        session.expand(next(h for h in result.hits if h.project == str(world["alpha"])).chunk_hash)


def test_the_sessions_own_scope_reuses_the_session_collection(
    world: dict[str, Path], session: Memory
) -> None:
    collection, store, path = resolve_project(session, str(world["cur"]))
    assert (collection, store, path) == (
        session.scope.collection,
        session.scope.store,
        session.internals.index_path,
    )
    hit = next(h for h in search_all(session, "postgres ledger").hits)
    assert hit.project == str(world["cur"])
    assert expand_in_project(session, hit.chunk_hash, hit.project).content


def test_a_subdirectory_project_is_not_walked_up_and_finds_nothing(
    world: dict[str, Path], session: Memory, isolated_home: Path
) -> None:
    sub = world["alpha"] / "src"
    sub.mkdir()
    hit = next(
        h for h in search_all(session, "redis", k=20).hits if h.project == str(world["alpha"])
    )
    collection, _, path = resolve_project(session, str(sub))
    assert collection == collection_name(sub)
    assert not path.exists()
    with pytest.raises(NotFoundError, match="never indexed"):
        expand_in_project(session, hit.chunk_hash, str(sub))
    assert not list((isolated_home / "index").glob(f"{collection}*"))


@pytest.mark.parametrize("project", ["relative/dir", "", "/does/not/exist"])
def test_project_must_be_an_existing_absolute_label(session: Memory, project: str) -> None:
    with pytest.raises(NotFoundError):
        resolve_project(session, project)


# -- read-side only ----------------------------------------------------------------------


def _snapshot(*roots: Path) -> dict[str, tuple[int, int]]:
    out: dict[str, tuple[int, int]] = {}
    for root in roots:
        for path in root.rglob("*"):
            st = path.lstat()
            # A directory's mtime moves with its entry list, which the
            # new-path check below covers exactly.
            out[str(path)] = (0, 0) if stat.S_ISDIR(st.st_mode) else (st.st_mtime_ns, st.st_size)
    return out


def test_a_fan_out_writes_nothing(world: dict[str, Path], isolated_home: Path) -> None:
    before = _snapshot(isolated_home, world["root"])
    with open_memory(world["cur"]) as mem:
        result = search_all(mem, "redis cache", k=10)
        hit = next(h for h in result.hits if h.project == str(world["alpha"]))
        expand_in_project(mem, hit.chunk_hash, hit.project)
        resolve_project(mem, str(world["never"]))
    after = _snapshot(isolated_home, world["root"])
    for path, fingerprint in before.items():
        if path.endswith(("-wal", "-shm")):
            continue
        assert after.get(path) == fingerprint, f"{path} changed"
    new = sorted(set(after) - set(before))
    # SQLite's read-only readers may create a WAL index's coordination
    # files beside an existing index (never an index, never a store file);
    # the WAL itself stays empty.
    for path in new:
        assert path.endswith(("-wal", "-shm")), f"{path} appeared"
        assert os.path.isfile(path.rsplit("-", 1)[0]), f"{path} beside a new index"
        if path.endswith("-wal"):
            assert os.path.getsize(path) == 0


def test_legs_are_opened_read_only(world: dict[str, Path], session: Memory) -> None:
    _, _, path = resolve_project(session, str(world["alpha"]))
    index = crossrepo.open_read_only(path, session.config.index)
    assert index is not None
    try:
        count = index.count()
        assert count > 0
        # Writes through the index's own API reach SQLite and are refused there.
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            index.remove_files(list(index.files()))
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            index.clear()
        assert index.count() == count
    finally:
        index.close()


def test_a_damaged_foreign_index_is_reported_and_left_alone(
    world: dict[str, Path], session: Memory
) -> None:
    _, _, path = resolve_project(session, str(world["alpha"]))
    for suffix in ("-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    path.write_bytes(b"this is not a database" * 100)
    before = path.read_bytes()
    result = search_all(session, "redis", k=10)
    assert [p for p, _ in result.failed] == [str(world["alpha"])]
    assert result.accounting.endswith("; 1 could not be searched)")
    assert str(world["bare"]) in result.searched
    assert path.read_bytes() == before
    assert not list(path.parent.glob(path.name + ".*corrupt*"))


def test_result_renders_as_a_search_result(world: dict[str, Path], session: Memory) -> None:
    result = search_all(session, "redis")
    assert isinstance(result, FanOutResult)
    plain = result.to_search_result()
    assert plain.hits == result.hits
    assert plain.notices[-1] == result.accounting


# -- hybrid, with the bundled model -------------------------------------------------------


def test_hybrid_embeds_once_and_searches_other_spaces_lexically(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMLANE_EMBEDDING_PROVIDER", "onnx")
    root = tmp_path / "h-root"
    cur, dense, novec, other = (_repo(root / n) for n in ("cur", "dense", "novec", "other"))
    _index(cur)
    _index(dense, "the flaky payment test was caused by a shared sandbox account")
    _index(novec, "payment sandbox notes", MEMLANE_EMBEDDING_PROVIDER="none")
    other_coll = _index(other, "payment sandbox elsewhere")
    con = sqlite3.connect(Path(os.environ["MEMLANE_HOME"]) / "index" / f"{other_coll}.sqlite")
    con.execute("UPDATE meta SET value = 'another-model|x' WHERE key = 'model'")
    con.commit()
    con.close()
    monkeypatch.setenv("MEMLANE_SCAN_ROOTS", str(root))
    calls = 0
    with open_memory(cur) as mem:
        embedder = mem.embedding.embedder
        assert embedder is not None
        real = embedder.embed_query

        def counting(text: str) -> object:
            nonlocal calls
            calls += 1
            return real(text)

        monkeypatch.setattr(embedder, "embed_query", counting)
        result = search_all(mem, "why did the payment test flake", k=5)
    assert calls == 1
    assert result.mode == "hybrid"
    assert result.hits[0].project == str(dense)
    assert any(str(novec) in n and "no vectors" in n for n in result.notices)
    assert any(str(other) in n and "another embedding model" in n for n in result.notices)
    assert set(result.searched) == {str(cur), str(dense), str(novec), str(other)}
    assert resolve_scope(cur).collection == mem.scope.collection


def test_an_older_schema_is_left_for_its_owner_to_upgrade(
    world: dict[str, Path], session: Memory
) -> None:
    _, _, path = resolve_project(session, str(world["alpha"]))
    con = sqlite3.connect(path)
    con.execute("UPDATE meta SET value = 2 WHERE key = 'schema_version'")
    con.commit()
    con.close()
    before = path.read_bytes()
    result = search_all(session, "redis", k=10)
    assert result.failed and result.failed[0][0] == str(world["alpha"])
    assert "schema version 2" in result.failed[0][1]
    assert path.read_bytes() == before


def test_modes_and_bounds(world: dict[str, Path], session: Memory) -> None:
    from memlane.core.errors import EmbedderError, MemlaneError

    assert search_all(session, "redis", mode="lexical").mode == "lexical"
    with pytest.raises(EmbedderError, match="semantic search needs an embedder"):
        search_all(session, "redis", mode="semantic")
    # The bounds are the router's, checked before any project is searched.
    for k in (0, 1000):
        with pytest.raises(MemlaneError, match="k must be"):
            session.search("redis", k, scope="all")
    with pytest.raises(MemlaneError, match="unknown search mode"):
        session.search("redis", scope="all", mode="fuzzy")
    with pytest.raises(MemlaneError, match='scope "all" searches notes'):
        session.search("redis", kind="session", scope="all")
    assert search_all(session, "   ").hits == []


def test_the_fan_out_tool_result_says_its_next_step_in_both_forms(
    world: dict[str, Path], session: Memory
) -> None:
    tools = Tools(session)
    found = tools.call("memory_search", {"query": "redis cache", "scope": "all"})
    facts = found.details
    assert Draft202012Validator(output_schema("memory_search")).is_valid(facts)
    assert found.text.startswith(facts["headline"]) and facts["next"] in found.text
    assert "project=the hit's project" in facts["next"]
    hit = next(h for h in facts["hits"] if h["project"] == str(world["alpha"]))
    expanded = tools.call(
        "memory_expand", {"chunk_hash": hit["chunk_hash"], "project": hit["project"]}
    )
    assert Draft202012Validator(output_schema("memory_expand")).is_valid(expanded.details)
